package pgwire

import (
	"encoding/binary"
	"strings"
	"testing"
)

func dataRowBody(count int16, cols ...string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(count))
	for _, c := range cols {
		b = binary.BigEndian.AppendUint32(b, uint32(len(c)))
		b = append(b, c...)
	}
	return b
}

// TestDataRowCountDisagrees: a DataRow whose column count and columns
// disagree is an error, and its summary shows the count as the tree does
// (signed), not as 65535.
func TestDataRowCountDisagrees(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    []byte
		summary string
		err     string
	}{
		{"honest", dataRowBody(2, "a", "bc"), "DataRow: 2 columns", ""},
		{"null", append(dataRowBody(1), 0xff, 0xff, 0xff, 0xff), "DataRow: 1 column", ""},
		{"negative count", dataRowBody(-1, "1"), "DataRow: column count -1", "negative column count -1"},
		{"more announced", dataRowBody(3, "1"), "DataRow: 3 columns", "column length needs 4 bytes"},
		{"fewer announced", dataRowBody(1, "1", "2"), "DataRow: 1 column", "5 unexpected trailing bytes"},
		{"length past the end", append(dataRowBody(1), 0, 0, 0, 9, 'x'), "DataRow: 1 column", "length 9 exceeds the 1 bytes left"},
	} {
		err := checkDataRow(tc.body)
		var m DataRow
		derr := m.Decode(tc.body)
		if (err == nil) != (derr == nil) {
			t.Errorf("%s: checkDataRow %v, Decode %v: they must agree", tc.name, err, derr)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
		if s := summarize("DataRow", TypeDataRow, tc.body, false, false); s != tc.summary {
			t.Errorf("%s: summary %q, want %q", tc.name, s, tc.summary)
		}
	}
	body := dataRowBody(3, "a", "b", "c")
	if n := testing.AllocsPerRun(100, func() { checkDataRow(body) }); n != 0 {
		t.Errorf("checkDataRow of a good row allocates %.0f times", n)
	}
}

// TestBusyNames: the names messageOf gives the busiest messages without
// MessageName are MessageName's.
func TestBusyNames(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  byte
		from []bool
	}{{nameDataRow, TypeDataRow, []bool{false}}, {nameCopyData, TypeCopyData, []bool{false, true}}} {
		for _, fe := range c.from {
			if n := MessageName(c.typ, fe); n != c.name {
				t.Errorf("%q from the frontend %v: MessageName says %q", c.name, fe, n)
			}
		}
	}
}
