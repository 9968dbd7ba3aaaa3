package output

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

func sampleUnit() *decode.Unit {
	c := &decode.Conn{ID: 3,
		Client: netip.MustParseAddrPort("[::1]:40000"),
		Server: netip.MustParseAddrPort("[::1]:5672")}
	u := &decode.Unit{
		N: 7, Conn: c, Dir: decode.DirB, Proto: decode.ProtoAMQP10,
		Type: "transfer", Summary: "transfer \"q\"\x01\n\xff", Len: 40,
		HasChannel: true, Channel: 1,
		Raw: []byte{0, 0, 0, 8, 2, 0, 0, 1},
		Dissect: func(*decode.Unit) []*decode.Field {
			return []*decode.Field{
				{Key: "handle", Value: uint64(0)},
				{Key: "data", Kind: decode.KindList, Kids: []*decode.Field{{Value: []byte{1, 2}}, {Value: "x"}}},
				{Key: "data", Value: 1.5},
				{Key: "props", Kind: decode.KindMap, Kids: []*decode.Field{{Key: "ts", Value: time.Unix(0, 0)}, {Key: "b", Value: true}, {Key: "n", Value: nil}}},
			}
		},
	}
	u.SetTime(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	u.SetMessageID("m-1")
	u.SetChecksum(&decode.Checksum{Algorithm: "crc-32", Status: decode.ChecksumMismatch, Expected: 1, Actual: 2})
	u.SetWarnings([]string{"odd"})
	return u
}

func TestJSONSchema(t *testing.T) {
	u := sampleUnit()
	line := AppendJSON(nil, u, JSONOptions{Raw: true})
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", line, err)
	}
	want := map[string]any{
		"n": 7.0, "conn": 3.0, "client": "[::1]:40000", "server": "[::1]:5672", "dir": "B",
		"proto": "amqp1.0", "channel": 1.0, "type": "transfer", "len": 40.0,
		"summary": "transfer \"q\"\x01\n\ufffd", "message_id": "m-1", "raw": "0000000802000001",
		"time": "2026-01-02T03:04:05.000000006Z",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	cs := m["checksum"].(map[string]any)
	if cs["algorithm"] != "crc-32" || cs["status"] != "mismatch" || cs["expected"] != 1.0 || cs["actual"] != 2.0 {
		t.Errorf("checksum = %v", cs)
	}
	f := m["fields"].(map[string]any)
	if _, ok := f["data#2"]; !ok {
		t.Errorf("duplicate key not suffixed: %v", f)
	}
	if l := f["data"].([]any); len(l) != 2 || l[0] != "0102" {
		t.Errorf("list = %v", l)
	}
	if _, ok := m["parent"]; ok {
		t.Error("parent present on a top-level unit")
	}
}

func TestJSONStringEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\t", "é中文", "\xff\xfe", "\u2028"} {
		b := AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		want := s
		if s == "\xff\xfe" {
			want = "\ufffd\ufffd"
		}
		if got != want {
			t.Errorf("%q -> %q", s, got)
		}
	}
}

func TestTextLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewText(&buf)
	u := sampleUnit()
	child := sampleUnit()
	child.N, child.Parent, child.HasChannel = 8, u, false
	child.SetChecksum(nil)
	child.SetWarnings(nil)
	child.SetTime(u.Time().Add(1500 * time.Millisecond))
	w.Unit(u)
	w.Unit(child)
	w.Flush()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "      7    0.000000    3 B  ch1     transfer") ||
		!strings.Contains(lines[0], `transfer "q"\x01\n`) || !strings.Contains(lines[0], `[warning: odd]`) {
		t.Errorf("line 1 = %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "      8    1.500000    3 B* -       ") {
		t.Errorf("line 2 = %q", lines[1])
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	u := sampleUnit()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], u, JSONOptions{NoFields: true})
	}
}
