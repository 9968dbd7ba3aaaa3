package filter

import (
	"bytes"
	"testing"
)

func TestLiterals(t *testing.T) {
	for _, tc := range []struct {
		src  string // the value as written after "summary == "
		text string // the string it compares as
		num  nkind
		i    int64
	}{
		{`42`, "42", nInt, 42},
		{`0x2a`, "0x2a", nInt, 42},
		{`052`, "052", nInt, 42}, // octal, as in Wireshark
		{`0b101010`, "0b101010", nInt, 42},
		{`-7`, "-7", nInt, -7},
		{`true`, "true", nInt, 1},
		{`FALSE`, "FALSE", nInt, 0},
		{`'*'`, "*", nInt, 42},
		{`'\x2a'`, "*", nInt, 42},
		{`'\052'`, "*", nInt, 42},
		{`'\n'`, "\n", nInt, 10},
		{`'é'`, "é", nInt, 0xe9},
		{`'\xff'`, "\xff", nInt, 0xff},
		{`"42"`, "42", nNone, 0}, // quoted: a string
		{`inf`, "inf", nNone, 0},
		{`basic.publish`, "basic.publish", nNone, 0},
		{`1.2.3`, "1.2.3", nNone, 0},
		{`"a\"b\\c\tq"`, "a\"b\\c\tq", nNone, 0},
		{`r"\d+\"x"`, `\d+\"x`, nNone, 0},
		{`"\u00e9\U0001F600"`, "é😀", nNone, 0},
		{`"\101\x42"`, "AB", nNone, 0},
	} {
		f, err := Compile("summary == " + tc.src)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		l := f.root.lit
		if l.text != tc.text || l.num != tc.num || l.i != tc.i {
			t.Errorf("%s: text %q num %d i %d, want %q %d %d", tc.src, l.text, l.num, l.i, tc.text, tc.num, tc.i)
		}
	}
	f, err := Compile("frame.len == 18446744073709551615 || frame.len == 2.5e3 || frame.len == 1e400")
	if err != nil {
		t.Fatal(err)
	}
	if l := f.root.kids[0].lit; l.num != nUint || l.u != 1<<64-1 {
		t.Errorf("max uint64: %+v", l)
	}
	if l := f.root.kids[1].lit; l.num != nFloat || l.f != 2500 {
		t.Errorf("2.5e3: %+v", l)
	}
	if l := f.root.kids[2].lit; l.num != nNone {
		t.Errorf("1e400 should stay a string: %+v", l)
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string][]byte{
		"de:ad:be:ef": {0xde, 0xad, 0xbe, 0xef},
		"DE-AD":       {0xde, 0xad},
		"00.01.02":    {0, 1, 2},
		"de:ad-be":    nil, // mixed separators
		"de":          nil, // one byte is a number or word, not bytes
		"d:ea:d":      nil,
		"10.0.0.1":    nil,
		"zz:zz":       nil,
	} {
		if got := parseBytes(s); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("parseBytes(%q) = %x, want %x", s, got, want)
		}
	}
}

func TestNaNNeverOrders(t *testing.T) {
	v := value{kind: kFloat}
	v.f = 0
	v.f /= v.f // NaN
	for _, expr := range []string{"frame.len < 1", "frame.len > 1", "frame.len == 1"} {
		f, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		if test(f.root, &v) {
			t.Errorf("%s held for NaN", expr)
		}
	}
}
