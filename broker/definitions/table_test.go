package definitions

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// A queue imported into RabbitMQ 3.10.8 with these arguments holds this
// table: rabbitmqctl eval 'base64:encode(iolist_to_binary(
// rabbit_binary_generator:generate_table(amqqueue:get_arguments(Q))))'.
// TestLiveToTable repeats it on the running server.
const (
	rabbitArgsJSON  = `{"i":10,"big":9007199254740993,"neg":-5,"s":"str","b":true,"f":1.5,"e":1e3,"z":0.0,"l":[1,"a",true,[2],{"k":"v"}],"o":{"n":1,"m":{"x":2}}}`
	rabbitArgsTable = "AWJ0AQNiaWdsACAAAAAAAAEBZWRAj0AAAAAAAAFmZD/4AAAAAAAAAWlsAAAAAAAAAAoBbEEAAAAsbAAAAAAAAAABUwAAAAFhdAFBAAAACWwAAAAAAAAAAkYAAAAIAWtTAAAAAXYDbmVnbP/////////7AW9GAAAAHQFtRgAAAAsBeGwAAAAAAAAAAgFubAAAAAAAAAABAXNTAAAAA3N0cgF6ZAAAAAAAAAAA"
)

func TestToTableAsRabbitMQ(t *testing.T) {
	var args map[string]any
	if err := decodeNumbers([]byte(rabbitArgsJSON), &args); err != nil {
		t.Fatal(err)
	}
	got, err := ToTable(args)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := base64.StdEncoding.DecodeString(rabbitArgsTable)
	if !bytes.Equal(got, want) {
		t.Fatalf("ToTable:\n got %x\nwant %x", []byte(got), want)
	}
}

func TestToTable(t *testing.T) {
	got, err := ToTable(map[string]any{"int": 7, "i64": int64(-1), "u64": uint64(3), "f": 2.0, "n": json.Number("2.0"),
		"empty": []any{}, "obj": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	want := amqp091.Table(nil).
		Append("empty", amqp091.ArrayValue(amqp091.Array{})).
		Append("f", amqp091.DoubleValue(2)).
		Append("i64", amqp091.Int64Value(-1)).
		Append("int", amqp091.Int64Value(7)).
		Append("n", amqp091.DoubleValue(2)).
		Append("obj", amqp091.TableValue(amqp091.Table{})).
		Append("u64", amqp091.Int64Value(3))
	if !bytes.Equal(got, want) {
		t.Fatalf("got %x\nwant %x", []byte(got), []byte(want))
	}
	if tb, err := ToTable(nil); err != nil || tb == nil || len(tb) != 0 {
		t.Fatalf("no arguments: %x, %v", []byte(tb), err)
	}

	deep := map[string]any{}
	for m, i := deep, 0; i < 70; i++ {
		n := map[string]any{}
		m["d"] = n
		m = n
	}
	for _, c := range []struct {
		args map[string]any
		err  string
	}{
		{map[string]any{"x": nil}, "definitions: argument 'x': null is not allowed"},
		{map[string]any{"x": []any{1, nil}}, "definitions: argument 'x': null is not allowed"},
		{map[string]any{"x": json.Number("9223372036854775808")}, "definitions: argument 'x': integer 9223372036854775808 does not fit 64 bits"},
		{map[string]any{"x": uint64(math.MaxUint64)}, "definitions: argument 'x': integer 18446744073709551615 does not fit 64 bits"},
		{map[string]any{"x": json.Number("1e999")}, "definitions: argument 'x': number 1e999 is out of range"},
		{map[string]any{"x": int32(1)}, "definitions: argument 'x': a value of a type JSON does not have"},
		{map[string]any{strings.Repeat("k", 256): 1}, "definitions: argument name longer than 255 bytes: " + `"` + strings.Repeat("k", 32) + `..."`},
		{deep, "nested deeper than 64"},
	} {
		if _, err := ToTable(c.args); err == nil || !strings.HasSuffix(err.Error(), c.err) {
			t.Errorf("%v: %v, want %s", c.args, err, c.err)
		}
	}
}

func TestFromTable(t *testing.T) {
	sub := amqp091.Table(nil).Append("k", amqp091.StringValue("v"))
	arr := amqp091.Array(nil).Append(amqp091.Int8Value(-1)).Append(amqp091.TableValue(sub))
	tb := amqp091.Table(nil).
		Append("t", amqp091.BoolValue(true)).
		Append("b", amqp091.Int8Value(-2)).
		Append("B", amqp091.Uint8Value(200)).
		Append("s", amqp091.Int16Value(-300)).
		Append("u", amqp091.Uint16Value(60000)).
		Append("I", amqp091.Int32Value(-70000)).
		Append("i", amqp091.Uint32Value(4000000000)).
		Append("l", amqp091.Int64Value(math.MinInt64)).
		Append("L", amqp091.Uint64Value(math.MaxUint64)).
		Append("f", amqp091.FloatValue(0.5)).
		Append("d", amqp091.DoubleValue(3)).
		Append("nan", amqp091.DoubleValue(math.NaN())).
		Append("D", amqp091.DecimalValue(amqp091.Decimal{Scale: 2, Value: 1234})).
		Append("S", amqp091.StringValue("héllo")).
		Append("bad", amqp091.StringValue("\xff\xfe")).
		Append("long", amqp091.BytesValue(bytes.Repeat([]byte{0xff}, 60))).
		Append("x", amqp091.BytesValue([]byte("bytes"))).
		Append("T", amqp091.TimestampValue(time.Unix(1700000000, 0))).
		Append("V", amqp091.VoidValue()).
		Append("A", amqp091.ArrayValue(arr)).
		Append("F", amqp091.TableValue(sub))
	long := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xff}, 60))
	want := map[string]any{
		"t": true, "b": json.Number("-2"), "B": json.Number("200"), "s": json.Number("-300"), "u": json.Number("60000"),
		"I": json.Number("-70000"), "i": json.Number("4000000000"), "l": json.Number("-9223372036854775808"),
		"L": json.Number("18446744073709551615"), "f": json.Number("0.5"), "d": json.Number("3.0"), "nan": nil,
		"D": json.Number("12.34"), "S": "héllo", "bad": "Not UTF-8, base64 is: //4=",
		"long": "Not UTF-8, base64 is: " + long[:76] + "\n" + long[76:],
		"x":    "bytes", "T": json.Number("1700000000"), "V": "undefined",
		"A": []any{json.Number("-1"), map[string]any{"k": "v"}}, "F": map[string]any{"k": "v"},
	}
	if got := FromTable(tb); !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("%s: %#v, want %#v", k, got[k], want[k])
			}
		}
	}
	// What RabbitMQ's types are (l, d, S, t, A, F) comes back as it went.
	rabbit, _ := base64.StdEncoding.DecodeString(rabbitArgsTable)
	again, err := ToTable(FromTable(amqp091.Table(rabbit)))
	if err != nil || !bytes.Equal(again, rabbit) {
		t.Fatalf("ToTable(FromTable(t)) = %x, %v", []byte(again), err)
	}
	// A malformed table gives what came before the fault.
	if got := FromTable(append(amqp091.Table(nil).Append("a", amqp091.BoolValue(true)), 3, 'b')); len(got) != 1 || got["a"] != true {
		t.Fatalf("malformed: %v", got)
	}
}

func BenchmarkToTable(b *testing.B) {
	var args map[string]any
	if err := decodeNumbers([]byte(rabbitArgsJSON), &args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToTable(args); err != nil {
			b.Fatal(err)
		}
	}
}
