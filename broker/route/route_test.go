package route

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func tbl(kv ...any) amqp091.Table {
	var t amqp091.Table
	for i := 0; i+1 < len(kv); i += 2 {
		t = t.Append(kv[i].(string), kv[i+1].(amqp091.Value))
	}
	return t
}

func names(ds []Dest) []string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Kind.String()+":"+d.Name)
	}
	slices.Sort(s)
	return s
}

func q(name string) Dest { return Dest{Kind: Queue, Name: name} }
func x(name string) Dest { return Dest{Kind: Exchange, Name: name} }

func TestKinds(t *testing.T) {
	for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
		got, ok := ParseKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	for _, s := range []string{"", "x-consistent-hash", "Topic", "Kind(1)"} {
		if k, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) = %v, true", s, k)
		}
	}
	if s := Kind(9).String(); s != "Kind(9)" {
		t.Errorf("Kind(9).String() = %q", s)
	}
	if s := q("a").String() + " " + x("b").String(); s != "queue 'a' exchange 'b'" {
		t.Errorf("Dest strings: %q", s)
	}
}

// TestIdentity checks which arguments RabbitMQ 3.10 holds to be the same
// binding (checked on the real server by TestLiveRabbitMQ too).
func TestIdentity(t *testing.T) {
	raw := func(b ...byte) amqp091.Table { return amqp091.Table(b) }
	cases := []struct {
		name string
		a, b amqp091.Table
		same bool
	}{
		{"key order", tbl("a", amqp091.Int32Value(1), "b", amqp091.StringValue("x")),
			tbl("b", amqp091.StringValue("x"), "a", amqp091.Int32Value(1)), true},
		{"int8 and int32", tbl("a", amqp091.Int8Value(1)), tbl("a", amqp091.Int32Value(1)), false},
		{"int32 and double", tbl("a", amqp091.Int32Value(1)), tbl("a", amqp091.DoubleValue(1)), false},
		{"0.0 and -0.0", tbl("a", amqp091.DoubleValue(0)), tbl("a", amqp091.DoubleValue(math.Copysign(0, -1))), true},
		{"l and L", tbl("a", amqp091.Int64Value(-1)), tbl("a", amqp091.Uint64Value(math.MaxUint64)), true},
		{"s and U", tbl("a", amqp091.Int16Value(7)), raw(1, 'a', 'U', 0, 7), true},
		{"true as 1 and 2", raw(1, 'a', 't', 1), raw(1, 'a', 't', 2), true},
		{"longstr and bytes", tbl("a", amqp091.StringValue("x")), tbl("a", amqp091.BytesValue([]byte("x"))), false},
		{"nested order matters", tbl("t", amqp091.TableValue(tbl("a", amqp091.Int8Value(1), "b", amqp091.Int8Value(2)))),
			tbl("t", amqp091.TableValue(tbl("b", amqp091.Int8Value(2), "a", amqp091.Int8Value(1)))), false},
		{"nested normalised", tbl("t", amqp091.TableValue(tbl("a", amqp091.DoubleValue(0)))),
			tbl("t", amqp091.TableValue(tbl("a", amqp091.DoubleValue(math.Copysign(0, -1))))), true},
		{"duplicate keys keep their order", tbl("a", amqp091.Int8Value(1), "a", amqp091.Int8Value(2)),
			tbl("a", amqp091.Int8Value(2), "a", amqp091.Int8Value(1)), false},
		{"none and empty", nil, amqp091.Table{}, true},
		{"malformed", raw(1, 'a', 'S', 0, 0, 0, 9), raw(1, 'a', 'S', 0, 0, 0, 8), false},
	}
	for _, c := range cases {
		for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
			ix := New(k)
			if !ix.Add(Binding{Dest: q("q"), Key: "k", Args: c.a}) {
				t.Fatalf("%s, %s: first Add = false", c.name, k)
			}
			if got := ix.Add(Binding{Dest: q("q"), Key: "k", Args: c.b}); got == c.same {
				t.Errorf("%s, %s: second Add = %v, want %v", c.name, k, got, !c.same)
			}
			if got := ix.Remove(q("q"), "k", c.b); !got {
				t.Errorf("%s, %s: Remove = false", c.name, k)
			}
			want := 1
			if c.same {
				want = 0
			}
			if ix.Len() != want {
				t.Errorf("%s, %s: Len %d after Remove, want %d", c.name, k, ix.Len(), want)
			}
		}
	}
}

// TestArgsTwins is the bug RabbitMQ's Khepri backend once had: two
// bindings differing only in their arguments, one removed, and the other
// must still route.
func TestArgsTwins(t *testing.T) {
	a1 := tbl("x-match", amqp091.StringValue("any"), "a", amqp091.StringValue("1"))
	a2 := tbl("x-match", amqp091.StringValue("any"), "a", amqp091.StringValue("1"), "b", amqp091.StringValue("2"))
	hdrs := tbl("a", amqp091.StringValue("1"))
	for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
		for _, removeFirst := range []bool{true, false} {
			ix := New(k)
			if !ix.Add(Binding{Dest: q("q"), Key: "k", Args: a1}) || !ix.Add(Binding{Dest: q("q"), Key: "k", Args: a2}) {
				t.Fatalf("%s: the twins are not two bindings", k)
			}
			if got := names(ix.Route([]byte("k"), hdrs, nil)); !slices.Equal(got, []string{"queue:q"}) {
				t.Fatalf("%s: routes to %v with both twins", k, got)
			}
			gone, kept := a1, a2
			if !removeFirst {
				gone, kept = a2, a1
			}
			if !ix.Remove(q("q"), "k", gone) {
				t.Fatalf("%s: Remove = false", k)
			}
			if got := names(ix.Route([]byte("k"), hdrs, nil)); !slices.Equal(got, []string{"queue:q"}) {
				t.Errorf("%s: routes to %v with one twin left", k, got)
			}
			if bs := ix.Bindings(nil); len(bs) != 1 || string(bs[0].Args) != string(kept) {
				t.Errorf("%s: bindings left %v", k, bs)
			}
			if ix.Remove(q("q"), "k", gone) {
				t.Errorf("%s: second Remove = true", k)
			}
			if !ix.Remove(q("q"), "k", kept) || len(ix.Route([]byte("k"), hdrs, nil)) != 0 {
				t.Errorf("%s: still routes with no bindings", k)
			}
		}
	}
}

func TestRemoveDest(t *testing.T) {
	for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
		ix := New(k)
		for i, key := range []string{"a", "b", "a"} {
			ix.Add(Binding{Dest: q("q1"), Key: key, Args: tbl("n", amqp091.Int8Value(int8(i)))})
			ix.Add(Binding{Dest: q("q2"), Key: key})
		}
		ix.Add(Binding{Dest: x("x"), Key: "a"})
		if n := ix.RemoveDest(q("q1")); n != 3 {
			t.Errorf("%s: RemoveDest = %d, want 3", k, n)
		}
		if n := ix.RemoveDest(q("q1")); n != 0 {
			t.Errorf("%s: second RemoveDest = %d", k, n)
		}
		var got []string
		for _, b := range ix.Bindings(nil) {
			got = append(got, b.Dest.Name+" "+b.Key)
		}
		if want := []string{"q2 a", "q2 b", "x a"}; !slices.Equal(got, want) {
			t.Errorf("%s: bindings left %v, want %v", k, got, want)
		}
		for _, d := range ix.Route([]byte("a"), nil, nil) {
			if d == q("q1") {
				t.Errorf("%s: routes to the removed queue", k)
			}
		}
	}
}

// TestTopicWords covers the edge cases of RabbitMQ's word splitting and
// wildcards (checked on the real server by TestLiveRabbitMQ).
func TestTopicWords(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"#", []string{"", "a", ".", "a.b.c", "..", "a."}, nil},
		{"*", []string{"a", "*", "#"}, []string{"", ".", "a.b"}},
		{"", []string{""}, []string{".", "a"}},
		{".", []string{"."}, []string{"", "a", "..", "a."}},
		{"*.*", []string{".", "a.b", "a."}, []string{"", "a", "a.b.c"}},
		{"#.#", []string{"", "a", "a.b.c", "."}, nil},
		{"a.#", []string{"a", "a.b", "a.", "a.b.c"}, []string{"", "b", "b.a", ".a"}},
		{"#.a", []string{"a", "b.a", "b.c.a", ".a"}, []string{"", "a.b", "a."}},
		{"a.#.b", []string{"a.b", "a.x.b", "a.x.y.b", "a..b"}, []string{"a", "b", "a.b.c", "ab"}},
		{"a..b", []string{"a..b"}, []string{"a.b", "a.x.b"}},
		{"a.*.b", []string{"a..b", "a.x.b"}, []string{"a.b", "a.x.y.b"}},
		{"#.*", []string{"a", ".", "a.b"}, []string{""}},
		{"*.#", []string{"a", "a.b", "."}, []string{""}},
		{"a*", []string{"a*"}, []string{"a", "ab"}},
		{"#.#.#.#.#.a.#.#.#", []string{"a", "x.y.a.z", strings.Repeat("x.", 60) + "a"}, []string{strings.Repeat("x.", 60) + "b"}},
	}
	for _, c := range cases {
		ix := New(Topic)
		ix.Add(Binding{Dest: q("q"), Key: c.pattern})
		for _, key := range c.match {
			if len(ix.Route([]byte(key), nil, nil)) != 1 {
				t.Errorf("%q does not match %q", c.pattern, key)
			}
		}
		for _, key := range c.miss {
			if len(ix.Route([]byte(key), nil, nil)) != 0 {
				t.Errorf("%q matches %q", c.pattern, key)
			}
		}
	}
}

// TestTopicPathological: patterns of many "#" over a long key would take
// exponential time matched naively.
func TestTopicPathological(t *testing.T) {
	ix := New(Topic)
	for i := 1; i <= 12; i++ {
		ix.Add(Binding{Dest: q("q"), Key: strings.Repeat("#.", i) + "z"})
	}
	key := []byte(strings.Repeat("a.", 120) + "b")
	visits := ix.topic.cache.visits
	if got := ix.Route(key, nil, nil); len(got) != 0 {
		t.Fatalf("routes to %v", got)
	}
	if v := ix.topic.cache.visits - visits; v > 12*13/2*122*2 {
		t.Errorf("%d node visits for one key", v)
	}
}

func TestTopicCachePolicy(t *testing.T) {
	ix, keys := topicIndex1000()
	for range 2 * cacheWindow / len(keys) {
		for _, k := range keys {
			ix.Route(k, nil, nil)
		}
	}
	if !ix.topic.cache.on {
		t.Fatalf("cache off for a costly trie with repeating keys")
	}
	// Keys that never repeat: the cache goes off again.
	for i := range 3 * cacheWindow {
		ix.Route([]byte("svc1.eu.created.v0."+strings.Repeat("x", i%300)+string(rune('a'+i%26))), nil, nil)
	}
	if ix.topic.cache.on {
		t.Errorf("cache on for keys that never repeat")
	}
	cheap := New(Topic)
	for i := range 100 {
		cheap.Add(Binding{Dest: queue(i), Key: "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	for range 3 * cacheWindow {
		cheap.Route([]byte("ka"+"a"), nil, nil)
	}
	if cheap.topic.cache.on {
		t.Errorf("cache on for a trie one word deep")
	}
	// Changes make cached routes stale.
	ix.topic.cache.pinned = true
	ix.topic.cache.enable()
	k := []byte("svc3.eu.created.v0")
	before := len(ix.Route(k, nil, nil))
	ix.Add(Binding{Dest: q("new"), Key: "svc3.eu.created.v0"})
	if got := ix.Route(k, nil, nil); len(got) != before+1 {
		t.Errorf("after Add: %d destinations, had %d", len(got), before)
	}
	ix.Remove(q("new"), "svc3.eu.created.v0", nil)
	if got := ix.Route(k, nil, nil); len(got) != before {
		t.Errorf("after Remove: %d destinations, had %d", len(got), before)
	}
}

// TestHeadersValues covers how RabbitMQ 3.10 compares a binding's value
// with a header's (checked on the real server by TestLiveRabbitMQ).
func TestHeadersValues(t *testing.T) {
	nested := func(v amqp091.Value) amqp091.Value { return amqp091.TableValue(tbl("a", v)) }
	cases := []struct {
		name        string
		bind, hdr   amqp091.Value
		match       bool
		explanation HeaderOutcome
	}{
		{"int8 and int32", amqp091.Int8Value(1), amqp091.Int32Value(1), true, HeaderMatched},
		{"int32 and double", amqp091.Int32Value(1), amqp091.DoubleValue(1), true, HeaderMatched},
		{"float and double", amqp091.FloatValue(1.5), amqp091.DoubleValue(1.5), true, HeaderMatched},
		{"float 0.1 and double 0.1", amqp091.FloatValue(0.1), amqp091.DoubleValue(0.1), false, HeaderDiffers},
		{"longstr and bytes", amqp091.StringValue("ab"), amqp091.BytesValue([]byte("ab")), true, HeaderMatched},
		{"timestamp and int", amqp091.TimestampValue(timeUnix(5)), amqp091.Int64Value(5), true, HeaderMatched},
		{"bool and int", amqp091.BoolValue(true), amqp091.Int32Value(1), false, HeaderTypeDiffers},
		{"decimal and int", amqp091.DecimalValue(amqp091.Decimal{Value: 1}), amqp091.Int32Value(1), false, HeaderTypeDiffers},
		{"-0.0 and 0", amqp091.DoubleValue(math.Copysign(0, -1)), amqp091.Int8Value(0), true, HeaderMatched},
		{"nested types differ", nested(amqp091.Int8Value(1)), nested(amqp091.Int32Value(1)), false, HeaderDiffers},
		{"nested same", nested(amqp091.Int8Value(1)), nested(amqp091.Int8Value(1)), true, HeaderMatched},
		{"void binding", amqp091.VoidValue(), amqp091.StringValue("x"), true, HeaderPresent},
		{"void header", amqp091.StringValue("x"), amqp091.VoidValue(), false, HeaderTypeDiffers},
		{"uint16 and int16", amqp091.Uint16Value(7), amqp091.Int16Value(7), true, HeaderMatched},
		{"L is signed", amqp091.Uint64Value(math.MaxUint64), amqp091.Int8Value(-1), true, HeaderMatched},
		{"timestamp is not", amqp091.TimestampValue(timeUnix(-1)), amqp091.Int8Value(-1), false, HeaderDiffers},
		{"big timestamp and double", amqp091.TimestampValue(timeUnix(-1 << 63)), amqp091.DoubleValue(1 << 63), true, HeaderMatched},
		{"NaN", amqp091.DoubleValue(math.NaN()), amqp091.DoubleValue(math.NaN()), false, HeaderDiffers},
		{"2^53+1 and its double", amqp091.Int64Value(1<<53 + 1), amqp091.DoubleValue(1 << 53), false, HeaderDiffers},
	}
	for _, c := range cases {
		for _, mode := range []string{"all", "any"} {
			ix := New(Headers)
			ix.Add(Binding{Dest: q("q"), Args: tbl("x-match", amqp091.StringValue(mode), "k", c.bind)})
			hdrs := tbl("k", c.hdr, "other", amqp091.Int8Value(0))
			if got := len(ix.Route(nil, hdrs, nil)) == 1; got != c.match {
				t.Errorf("%s, %s: matched %v, want %v", c.name, mode, got, c.match)
			}
			m := ix.Explain(nil, hdrs)[0]
			if m.Matched != c.match || len(m.Headers) != 1 || m.Headers[0].Outcome != c.explanation {
				t.Errorf("%s, %s: explained %+v", c.name, mode, m)
			}
		}
	}
}

func TestHeadersModes(t *testing.T) {
	s := amqp091.StringValue
	cases := []struct {
		args  amqp091.Table
		hdrs  amqp091.Table
		match bool
	}{
		{tbl("a", s("1"), "b", s("2")), tbl("a", s("1"), "b", s("2"), "c", s("3")), true},
		{tbl("a", s("1"), "b", s("2")), tbl("a", s("1")), false},
		{tbl("x-match", s("any"), "a", s("1"), "b", s("2")), tbl("b", s("2")), true},
		{tbl("x-match", s("any"), "a", s("1"), "b", s("2")), tbl("c", s("2")), false},
		{tbl("x-match", s("all")), nil, true},
		{tbl("x-match", s("any")), tbl("a", s("1")), false},
		{tbl("x-a", s("1")), nil, true}, // x- ignored: nothing to compare
		{tbl("x-a", s("1"), "b", s("2")), tbl("b", s("2")), true},
		{tbl("x-match", s("any"), "x-a", s("1")), tbl("x-a", s("1")), false},
		{tbl("x-match", s("all-with-x"), "x-a", s("1")), tbl("x-a", s("1")), true},
		{tbl("x-match", s("all-with-x"), "x-a", s("1")), nil, false},
		{tbl("x-match", s("any-with-x"), "x-a", s("1"), "b", s("2")), tbl("x-a", s("1")), true},
		{tbl("x-match", s("any-with-x"), "x-a", s("1")), tbl("x-a", s("2")), false},
		{tbl("x-match", s("bogus"), "a", s("1"), "b", s("1")), tbl("a", s("1")), false}, // all
		{tbl("a", amqp091.VoidValue()), tbl("a", amqp091.Int8Value(3)), true},
		{tbl("a", amqp091.VoidValue()), tbl("b", amqp091.Int8Value(3)), false},
		// Duplicate keys, merged as RabbitMQ merges them.
		{tbl("a", s("1")), tbl("a", s("2"), "a", s("1")), false},
		{tbl("a", s("1")), tbl("a", s("1"), "a", s("2")), true},
		{tbl("a", s("1"), "a", s("1")), tbl("a", s("1")), false},
	}
	for i, c := range cases {
		ix := New(Headers)
		ix.Add(Binding{Dest: q("q"), Args: c.args})
		if got := len(ix.Route(nil, c.hdrs, nil)) == 1; got != c.match {
			t.Errorf("case %d: matched %v, want %v", i, got, c.match)
		}
		if m := ix.Explain(nil, c.hdrs)[0]; m.Matched != c.match {
			t.Errorf("case %d: Explain matched %v: %s", i, m.Matched, m.Why)
		}
	}
}

func TestMalformed(t *testing.T) {
	bad := []amqp091.Table{{1}, {1, 'a'}, {1, 'a', 'S', 0, 0, 0, 9, 'x'}, {1, 'a', 'F', 0, 0, 0, 2, 1, 'b'}, {1, 'a', '?', 0}, {0, 'V', 5}}
	for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
		ix := New(k)
		for i, a := range bad {
			ix.Add(Binding{Dest: queue(i), Key: "k", Args: a})
			for _, h := range bad {
				ix.Route([]byte("k"), h, nil)
				ix.Explain([]byte("k"), h)
			}
		}
		if ix.Len() != len(bad) {
			t.Errorf("%s: Len %d", k, ix.Len())
		}
		for i, a := range bad {
			if !ix.Remove(queue(i), "k", a) {
				t.Errorf("%s: Remove %d = false", k, i)
			}
		}
	}
}

func timeUnix(s int64) time.Time { return time.Unix(s, 0) }

func TestRoutingKeys(t *testing.T) {
	arr := func(vs ...amqp091.Value) amqp091.Value {
		var a amqp091.Array
		for _, v := range vs {
			a = a.Append(v)
		}
		return amqp091.ArrayValue(a)
	}
	s := amqp091.StringValue
	cases := []struct {
		headers amqp091.Table
		want    []string
		err     string
	}{
		{nil, []string{"rk"}, ""},
		{tbl("cc", arr(s("x"))), []string{"rk"}, ""},
		{tbl("BCC", arr(s("b1")), "CC", arr(s("c1"), amqp091.Int32Value(5), s("c2"))), []string{"rk", "c1", "c2", "b1"}, ""},
		{tbl("CC", arr()), []string{"rk"}, ""},
		{tbl("CC", s("a")), nil, `invalid message: {unacceptable_type_in_header,"CC",longstr}`},
		{tbl("BCC", amqp091.Int32Value(1)), nil, `invalid message: {unacceptable_type_in_header,"BCC",signedint}`},
	}
	for _, c := range cases {
		keys, err := RoutingKeys([]byte("rk"), c.headers, nil)
		if c.err != "" {
			var ie *InvalidMessageError
			if !errors.As(err, &ie) || ie.Text != c.err || err.Error() != "route: "+c.err {
				t.Errorf("%x: error %v, want %q", []byte(c.headers), err, c.err)
			}
			continue
		}
		var got []string
		for _, k := range keys {
			got = append(got, string(k))
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%x: %q, %v; want %q", []byte(c.headers), got, err, c.want)
		}
	}
	keys := make([][]byte, 0, 4)
	hdrs := tbl("x", s("y"))
	rk := []byte("rk")
	if n := testing.AllocsPerRun(100, func() { keys, _ = RoutingKeys(rk, hdrs, keys[:0]) }); n != 0 {
		t.Errorf("%v allocations without CC", n)
	}
}
