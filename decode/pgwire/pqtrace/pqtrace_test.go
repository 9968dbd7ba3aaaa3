package pqtrace_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

func decodeBackend(t *testing.T, stream []byte) []*decode.Unit {
	t.Helper()
	var units []*decode.Unit
	d := pgwire.New(&decode.Conn{ID: 1}, nil, func(u *decode.Unit) { u.N = len(units) + 1; units = append(units, u) })
	tm := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.Local)
	d.Feed(decode.DirF, (&pgwire.StartupMessage{ProtocolVersion: 196608, Params: []pgwire.Param{{Name: []byte("user"), Value: []byte("u")}}}).Encode(nil), tm)
	d.Feed(decode.DirB, stream, tm)
	d.End(decode.DirF, tm)
	d.End(decode.DirB, tm)
	return units
}

func print(t *testing.T, units []*decode.Unit, opt pqtrace.Options) string {
	t.Helper()
	var b bytes.Buffer
	p := pqtrace.New(&b, opt)
	for _, u := range units {
		if err := p.Print(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCompressedLines: messages inside a CompressedMessages print as B*
// before the container's line, as in the proposal's example trace.
func TestCompressedLines(t *testing.T) {
	var msgs []compsim.Message
	add := func(b []byte) { msgs = append(msgs, compsim.Message{Raw: b, TxEnd: b[0] == 'Z' && b[5] == 'I'}) }
	add((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	add((&pgwire.RowDescription{Fields: []pgwire.FieldDescription{{Name: []byte("?column?"), TypeOID: 23, TypeSize: 4, TypeModifier: -1}}}).Encode(nil))
	add((&pgwire.DataRow{Values: [][]byte{[]byte("1")}}).Encode(nil))
	add(pgwire.AppendMessage(nil, 'C', []byte("SELECT 1\x00")))
	add((&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil))
	stream, err := compsim.EncodeStream(msgs, compsim.Config{Algorithm: pgwire.CompressionZstd, TxFrame: true})
	if err != nil {
		t.Fatal(err)
	}
	got := print(t, decodeBackend(t, stream), pqtrace.Options{})
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	want := []string{
		"F\t16\tStartupMessage\t 3 0 \"user\" \"u\"",
		"B\t5\tReadyForQuery\t I",
		"B*\t33\tRowDescription\t 1 \"?column?\" 0 0 23 4 -1 0",
		"B*\t11\tDataRow\t 1 1 '1'",
		"B\t",
		"B\t13\tCommandComplete\t \"SELECT 1\"",
		"B\t9\tCompressedMessages\t \\x03 \"\" '\\x01\\x00\\x00'",
		"B\t5\tReadyForQuery\t I",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(lines), got)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, lines[i], want[i])
		}
	}
	if !strings.Contains(lines[4], "\tCompressedMessages\t \\x03 \"TD\" '\\x28\\xb5\\x2f\\xfd") {
		t.Errorf("container line: %q", lines[4])
	}
}

func TestTimestamps(t *testing.T) {
	units := decodeBackend(t, (&pgwire.ReadyForQuery{TxStatus: 'T'}).Encode(nil))
	got := print(t, units[1:], pqtrace.Options{Timestamps: true})
	if got != "2024-05-06 07:08:09.123456\tB\t5\tReadyForQuery\t T\n" {
		t.Errorf("got %q", got)
	}
}

// TestLibpq15Quirks: the lines libpq 15 prints for what it does not decode.
func TestLibpq15Quirks(t *testing.T) {
	var s []byte
	s = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(s)
	s = pgwire.AppendMessage(s, 'W', []byte{0, 0, 1, 0, 0})
	s = pgwire.AppendMessage(s, 'd', []byte("abc"))
	units := decodeBackend(t, s)
	old := print(t, units, pqtrace.Options{Libpq15: true})
	want := "F\t16\tUnknown message: length is 16\nB\t5\tReadyForQuery\t I\nB\t9\tCopyBothResponse\t \\x00 1 0\n"
	if old != want {
		t.Errorf("libpq 15 mode:\n got %q\nwant %q", old, want)
	}
	full := print(t, units, pqtrace.Options{})
	if !strings.Contains(full, "B\t7\tCopyData\t 'abc'\n") {
		t.Errorf("default mode lacks CopyData: %q", full)
	}
}
