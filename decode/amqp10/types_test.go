package amqp10

import (
	"bytes"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Every primitive encoding of types.xml §1.6 in one list32, with what the
// materialiser must make of it.
func TestEveryEncoding(t *testing.T) {
	uuid := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct {
		enc   []byte
		code  Code
		value any
	}{
		{AppendNull(nil), CodeNull, nil},
		{AppendBool(nil, true), CodeTrue, true},
		{AppendBool(nil, false), CodeFalse, false},
		{AppendBoolean(nil, true), CodeBoolean, true},
		{AppendBoolean(nil, false), CodeBoolean, false},
		{AppendUbyte(nil, 200), CodeUbyte, uint64(200)},
		{AppendUshort(nil, 65000), CodeUshort, uint64(65000)},
		{AppendUint(nil, 0), CodeUint0, uint64(0)},
		{AppendUint(nil, 255), CodeSmallUint, uint64(255)},
		{AppendUint(nil, 1<<31), CodeUint, uint64(1 << 31)},
		{AppendUlong(nil, 0), CodeUlong0, uint64(0)},
		{AppendUlong(nil, 7), CodeSmallUlong, uint64(7)},
		{AppendUlong(nil, math.MaxUint64), CodeUlong, uint64(math.MaxUint64)},
		{AppendByte(nil, -3), CodeByte, int64(-3)},
		{AppendShort(nil, -300), CodeShort, int64(-300)},
		{AppendInt(nil, -100), CodeSmallInt, int64(-100)},
		{AppendInt(nil, -100000), CodeInt, int64(-100000)},
		{AppendLong(nil, 127), CodeSmallLong, int64(127)},
		{AppendLong(nil, math.MinInt64), CodeLong, int64(math.MinInt64)},
		{AppendFloat(nil, 1.5), CodeFloat, 1.5},
		{AppendDouble(nil, -2.25), CodeDouble, -2.25},
		{AppendFixed(nil, CodeDecimal32, []byte{1, 2, 3, 4}), CodeDecimal32, []byte{1, 2, 3, 4}},
		{AppendFixed(nil, CodeDecimal64, make([]byte, 8)), CodeDecimal64, make([]byte, 8)},
		{AppendFixed(nil, CodeDecimal128, make([]byte, 16)), CodeDecimal128, make([]byte, 16)},
		{AppendChar(nil, 'é'), CodeChar, "é"},
		{AppendTimestamp(nil, 1700000000123), CodeTimestamp, time.UnixMilli(1700000000123).UTC()},
		{AppendUUID(nil, uuid), CodeUUID, "12345678-9abc-def0-0102-030405060708"},
		{AppendBinary(nil, []byte{0, 1}), CodeVbin8, []byte{0, 1}},
		{AppendBinary(nil, make([]byte, 300)), CodeVbin32, make([]byte, 300)},
		{AppendString(nil, "héllo"), CodeStr8, "héllo"},
		{AppendString(nil, string(make([]byte, 256))), CodeStr32, string(make([]byte, 256))},
		{AppendSymbol(nil, "sym"), CodeSym8, "sym"},
		{append([]byte{byte(CodeSym32), 0, 0, 0, 8}, "long-sym"...), CodeSym32, "long-sym"},
	}
	var items [][]byte
	for _, c := range cases {
		items = append(items, c.enc)
	}
	list := AppendList32(nil, items...)
	f := Materialize(list, 0, "all")
	if f.Encoding != "list32 0xd0" || len(f.Kids) != len(cases) {
		t.Fatalf("list: %s, %d kids\n%s", f.Encoding, len(f.Kids), dumpFields([]*decode.Field{f}))
	}
	off := 9
	for i, c := range cases {
		k := f.Kids[i]
		if k.Encoding != c.code.Encoding() {
			t.Errorf("item %d: encoding %q, want %q", i, k.Encoding, c.code.Encoding())
		}
		if decode.FormatValue(k.Value) != decode.FormatValue(c.value) {
			t.Errorf("item %d (%s): value %v, want %v", i, c.code, k.Value, c.value)
		}
		if k.Offset != off || k.Length != len(c.enc) {
			t.Errorf("item %d: range %d+%d, want %d+%d", i, k.Offset, k.Length, off, len(c.enc))
		}
		off += len(c.enc)
	}
}

func TestCompoundEncodings(t *testing.T) {
	// map8 with a ulong key, list0, list8, map32 nested, array32 of described
	// lists (as transactions and filters may carry), array8 of ubyte.
	descArr := AppendArray(nil, AppendUlong(nil, DescriptorAccepted), CodeList0, nil, nil)
	arrList := AppendArray(nil, nil, CodeList8, []byte{3, 1, 0x52, 9}, []byte{1, 0})
	m32 := append([]byte{byte(CodeMap32), 0, 0, 0, 8, 0, 0, 0, 2}, append(AppendSymbol(nil, "k"), AppendList(nil)...)...)
	top := AppendMap(nil,
		AppendUlong(nil, 1000), AppendList(nil, AppendUint(nil, 1)),
		AppendString(nil, "m32"), m32,
		AppendString(nil, "accepted[]"), descArr,
		AppendString(nil, "lists[]"), arrList,
		AppendString(nil, "sym-desc"), append([]byte{0x00}, append(AppendSymbol(nil, "amqp:accepted:list"), byte(CodeList0))...),
	)
	f := Materialize(top, 0, "top")
	if f.Kind != decode.KindMap || len(f.Kids) != 5 {
		t.Fatalf("%s", dumpFields([]*decode.Field{f}))
	}
	if k := f.Kids[0]; k.Key != "1000" || k.Kids[0].Encoding != "ulong 0x80" || len(k.Kids) != 2 {
		t.Errorf("ulong key: %s", dumpFields([]*decode.Field{k}))
	}
	if k := f.Kids[1]; k.Encoding != "map32 0xd1" || k.Kids[0].Key != "k" || k.Kids[0].Encoding != "list0 0x45" {
		t.Errorf("map32: %s", dumpFields([]*decode.Field{k}))
	}
	if k := f.Kids[2]; len(k.Kids) != 2 || k.Kids[0].Text() != "accepted" || k.Encoding != "array8 0xe0 of list0 0x45" {
		t.Errorf("array of described: %s", dumpFields([]*decode.Field{k}))
	}
	if k := f.Kids[3]; len(k.Kids) != 2 || len(k.Kids[0].Kids) != 1 || k.Kids[0].Kids[0].Value != uint64(9) {
		t.Errorf("array of lists: %s", dumpFields([]*decode.Field{k}))
	}
	if k := f.Kids[4]; k.Text() != "accepted" {
		t.Errorf("symbolic descriptor: %s", dumpFields([]*decode.Field{k}))
	}
}

func TestScanRejects(t *testing.T) {
	bad := map[string][]byte{
		"empty":              {},
		"unknown code":       {0x99},
		"truncated uint":     {0x70, 0, 0},
		"str8 past end":      {0xa1, 5, 'a'},
		"list8 count > size": {0xc0, 1, 5},
		"map odd count":      {0xc1, 2, 1, 0x40},
		"list32 huge size":   {0xd0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"array no elem":      {0xe0, 1, 0},
		"descriptor only":    {0x00, 0x53},
		"deep descriptors":   append(make([]byte, 200), 0x40),
	}
	for name, b := range bad {
		if _, err := Scan(b, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestHotPathAllocs(t *testing.T) {
	msg, _ := buildMessage(CRC32, false, section{DescriptorProperties, AppendList(nil, AppendString(nil, "id"))},
		section{DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "k"), AppendBoolean(nil, true))},
		section{DescriptorData, AppendBinary(nil, make([]byte, 1000))})
	frame := transferFrame(0, 0, 1, false, msg)
	var f Frame
	var c Composite
	var tr Transfer
	var m Message
	ParseMessage(msg, &m)
	n := testing.AllocsPerRun(100, func() {
		ParseFrame(frame, &f)
		ScanComposite(f.Body, 0, &c)
		tr.Decode(f.Body, &c)
		ParseMessage(f.Body[c.List.End:], &m)
		ck := m.VerifyChecksum(f.Body[c.List.End:])
		if ck.Status != decode.ChecksumOK {
			t.Fatal("checksum")
		}
	})
	if n != 0 {
		t.Errorf("hot path allocates %v times per frame", n)
	}
}

// appendQuoted's shortcut for plain ASCII writes what strconv.Quote does.
func TestAppendQuotedPlain(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, v := range [][]byte{{byte(c)}, []byte("link-" + string(rune(c)) + "-name"), bytes.Repeat([]byte{byte(c)}, 90)} {
			want := strconv.Quote(string(v[:min(len(v), 80)]))
			if len(v) > 80 {
				want += "..."
			}
			if got := string(appendQuoted(nil, v)); got != want {
				t.Fatalf("%q: got %s, want %s", v, got, want)
			}
		}
	}
}
