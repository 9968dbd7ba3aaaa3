package mgmt

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func render(f func(e *encoder)) string {
	var e encoder
	e.reset(nil)
	f(&e)
	return string(e.buf)
}

func TestStringsDecodeAsEncodingJSONDoes(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quo"te`, `back\slash`, "new\nline\r\t", "\x00\x01\x1f\x7f", "caf\u00e9 \u6771\u4eac",
		"bad \xff utf8 \xe2\x82", "\u2028\u2029", "emoji \U0001F407", "</script>&",
	} {
		got := render(func(e *encoder) { e.str(s) })
		if !json.Valid([]byte(got)) {
			t.Errorf("%q: invalid JSON %s", s, got)
			continue
		}
		var ours, theirs string
		json.Unmarshal([]byte(got), &ours)
		want, _ := json.Marshal(s)
		json.Unmarshal(want, &theirs)
		if ours != theirs {
			t.Errorf("%q: decodes to %q, encoding/json's to %q", s, ours, theirs)
		}
	}
}

func TestFloats(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", 1.5: "1.5", -3: "-3.0", 1e21: "1e+21", 0.1: "0.1", 123456789: "1.23456789e+08",
		math.NaN(): "null", math.Inf(1): "null",
	} {
		if got := render(func(e *encoder) { e.float(f) }); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	if got := render(func(e *encoder) { e.rate(1.26) }); got != `{"rate":1.3}` {
		t.Errorf("rate: %s", got)
	}
}

// splitLines is the MIME line splitting RabbitMQ applies, written
// plainly.
func splitLines(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76])
		b.WriteString("\n")
		s = s[76:]
	}
	b.WriteString(s)
	return b.String()
}

func TestBytesAsRabbitMQShowsThem(t *testing.T) {
	for _, n := range []int{1, 2, 56, 57, 58, 114, 200} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(0x80 + i*7)
		}
		b[0] = 0xff // never UTF-8
		got := render(func(e *encoder) { e.value(b) })
		var s string
		if err := json.Unmarshal([]byte(got), &s); err != nil {
			t.Fatalf("%d bytes: %v: %s", n, err, got)
		}
		want := "Not UTF-8, base64 is: " + splitLines(base64.StdEncoding.EncodeToString(b))
		if s != want {
			t.Errorf("%d bytes:\n got %q\nwant %q", n, s, want)
		}
	}
	if got := render(func(e *encoder) { e.value([]byte("utf-8 é")) }); got != `"utf-8 é"` {
		t.Errorf("UTF-8 bytes: %s", got)
	}
}

func TestValues(t *testing.T) {
	type unknown struct{}
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "null"}, {true, "true"}, {"s", `"s"`}, {int8(-8), "-8"}, {int16(-16), "-16"}, {int32(-32), "-32"},
		{int64(math.MinInt64), "-9223372036854775808"}, {uint8(8), "8"}, {uint16(16), "16"}, {uint32(32), "32"},
		{uint64(math.MaxUint64), "18446744073709551615"}, {7, "7"}, {uint(7), "7"}, {float32(0.5), "0.5"},
		{time.Unix(1700000000, 0), "1700000000"},
		{amqp091.Decimal{Scale: 2, Value: 1234}, "2.1234"}, {amqp091.Decimal{Scale: 2, Value: 10}, "2.1"},
		{amqp091.Decimal{Scale: 0, Value: 0}, "0.0"}, {amqp091.Decimal{Scale: 3, Value: -5}, "-3.5"},
		{[]any{"a", int64(1), []any{}, map[string]any{}}, `["a",1,[],{}]`},
		{map[string]any{"b": int64(2), "a": map[string]any{"z": true, "y": nil}}, `{"a":{"y":null,"z":true},"b":2}`},
		{[]string{"x", "y"}, `["x","y"]`},
		{unknown{}, "null"},
	} {
		if got := render(func(e *encoder) { e.value(c.v) }); got != c.want {
			t.Errorf("%#v: %s, want %s", c.v, got, c.want)
		}
	}
}

func TestDeepTablesAreCut(t *testing.T) {
	var m any = "leaf"
	for range 100 {
		m = map[string]any{"k": []any{m}}
	}
	got := render(func(e *encoder) { e.value(m) })
	if !json.Valid([]byte(got)) {
		t.Fatalf("invalid JSON")
	}
	if strings.Contains(got, "leaf") || !strings.Contains(got, "null") {
		t.Errorf("not cut at depth %d", maxValueDepth)
	}
	// Tables and arrays both count.
	if d := strings.Count(got[:strings.Index(got, "null")], `{"k":[`); d != maxValueDepth/2 {
		t.Errorf("cut at depth %d, want %d: %s", d, maxValueDepth/2, got)
	}
}

func TestColumnsFilter(t *testing.T) {
	obj := func(e *encoder) {
		e.beginObject()
		if e.key("a") {
			e.int(1)
		}
		if e.key("b") {
			e.table(map[string]any{"x": int64(1), "y": map[string]any{"p": "q", "r": "s"}})
		}
		if e.key("c") {
			e.beginArray()
			for range 2 {
				e.elem()
				e.table(map[string]any{"x": int64(2), "z": int64(3)})
			}
			e.endArray()
		}
		e.endObject()
	}
	for cols, want := range map[string]string{
		"":               `{"a":1,"b":{"x":1,"y":{"p":"q","r":"s"}},"c":[{"x":2,"z":3},{"x":2,"z":3}]}`,
		"a":              `{"a":1}`,
		"b.y.p,a":        `{"a":1,"b":{"y":{"p":"q"}}}`,
		"b.y,b.y.p":      `{"b":{"y":{"p":"q","r":"s"}}}`,
		"c.z":            `{"c":[{"z":3},{"z":3}]}`,
		"nope":           `{}`,
		",,a,":           `{"a":1}`,
		"b..x":           `{"b":{"x":1}}`,
		"b.x,b,b.y.nope": `{"b":{"x":1,"y":{"p":"q","r":"s"}}}`,
	} {
		var e encoder
		e.reset(parseColumns(cols))
		obj(&e)
		if string(e.buf) != want {
			t.Errorf("columns=%q: %s, want %s", cols, e.buf, want)
		}
	}
}
