package route

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func TestExplainDirectFanout(t *testing.T) {
	ix := New(Direct)
	ix.Add(Binding{Dest: q("a"), Key: "orders"})
	ix.Add(Binding{Dest: q("b"), Key: "invoices"})
	ms := ix.Explain([]byte("orders"), nil)
	if len(ms) != 2 || !ms[0].Matched || ms[1].Matched {
		t.Fatalf("direct: %+v", ms)
	}
	if ms[0].Why != `routing key "orders" is the binding key` || ms[1].Why != `routing key "orders" is not the binding key "invoices"` {
		t.Errorf("direct whys: %q, %q", ms[0].Why, ms[1].Why)
	}
	f := New(Fanout)
	f.Add(Binding{Dest: q("a"), Key: "ignored"})
	if ms := f.Explain([]byte("anything"), nil); len(ms) != 1 || !ms[0].Matched || !strings.Contains(ms[0].Why, "fanout") {
		t.Errorf("fanout: %+v", ms)
	}
}

func TestExplainTopic(t *testing.T) {
	ix := New(Topic)
	for _, k := range []string{"orders.*.#", "orders.eu", "#.created", "*", "a.#.b.c"} {
		ix.Add(Binding{Dest: q(k), Key: k})
	}
	type step struct {
		pattern string
		took    string
	}
	cases := []struct {
		key     string
		binding int
		matched bool
		steps   []step
		why     string
	}{
		{"orders.eu.created", 0, true, []step{{"orders", "orders"}, {"*", "eu"}, {"#", "created"}},
			`"orders" took "orders", "*" took "eu", "#" took "created"`},
		{"orders.eu", 0, true, []step{{"orders", "orders"}, {"*", "eu"}, {"#", ""}},
			`"orders" took "orders", "*" took "eu", "#" took no words`},
		{"orders.eu.created", 1, false, []step{{"orders", "orders"}, {"eu", "eu"}},
			`"orders" took "orders", "eu" took "eu"; routing key words left after the binding key: "created"`},
		{"orders.us", 1, false, []step{{"orders", "orders"}},
			`"orders" took "orders"; routing key word 2 is "us", not "eu"`},
		{"orders", 0, false, []step{{"orders", "orders"}},
			`"orders" took "orders"; routing key ends before "*"`},
		{"x.y.created", 2, true, []step{{"#", "x.y"}, {"created", "created"}}, `"#" took "x.y", "created" took "created"`},
		{"", 3, false, nil, `routing key has no words, the binding key needs "*"`},
		{"a.x.b.y.b.c", 4, true, []step{{"a", "a"}, {"#", "x.b.y"}, {"b", "b"}, {"c", "c"}}, ""},
		{"a.x.b.y", 4, false, []step{{"a", "a"}, {"#", "x"}, {"b", "b"}}, `; routing key word 4 is "y", not "c"`},
	}
	for _, c := range cases {
		ms := ix.Explain([]byte(c.key), nil)
		m := ms[c.binding]
		var got []step
		for _, w := range m.Words {
			got = append(got, step{w.Pattern, strings.Join(w.Took, ".")})
		}
		if m.Matched != c.matched || !slices.Equal(got, c.steps) || !strings.HasSuffix(m.Why, c.why) {
			t.Errorf("%q against %q: matched %v, steps %v, why %q; want %v, %v, %q", m.Binding.Key, c.key, m.Matched, got, m.Why, c.matched, c.steps, c.why)
		}
		// Explain agrees with Route.
		var want []string
		for _, m := range ms {
			if m.Matched {
				want = append(want, "queue:"+m.Binding.Key)
			}
		}
		slices.Sort(want)
		if routed := names(ix.Route([]byte(c.key), nil, nil)); !slices.Equal(routed, want) {
			t.Errorf("%q: Route %v, Explain %v", c.key, routed, want)
		}
	}
}

func TestExplainHeaders(t *testing.T) {
	s := amqp091.StringValue
	ix := New(Headers)
	// A pair that differs only by arguments, to one queue.
	ix.Add(Binding{Dest: q("pdf"), Args: tbl("format", s("pdf"), "type", s("report"))})
	ix.Add(Binding{Dest: q("pdf"), Args: tbl("x-match", s("any"), "format", s("pdf"), "size", amqp091.Int32Value(10), "x-trace", s("on"))})
	ix.Add(Binding{Dest: q("x"), Args: tbl("x-match", s("any-with-x"), "x-trace", amqp091.VoidValue())})
	hdrs := tbl("format", s("pdf"), "size", s("10"), "x-trace", s("off"))
	ms := ix.Explain(nil, hdrs)
	if len(ms) != 3 {
		t.Fatalf("%d matches", len(ms))
	}
	type outcome struct {
		key string
		o   HeaderOutcome
	}
	want := []struct {
		matched  bool
		mode     XMatch
		outcomes []outcome
		why      string
	}{
		{false, All, []outcome{{"format", HeaderMatched}, {"type", HeaderMissing}},
			`x-match=all: "format" = "pdf", "type" missing: no match`},
		{true, Any, []outcome{{"format", HeaderMatched}, {"size", HeaderTypeDiffers}, {"x-trace", HeaderIgnored}},
			`x-match=any: "format" = "pdf", "size" is "10" (longstr), never equal to 10 (int32), "x-trace" ignored (x- argument): matched`},
		{true, AnyWithX, []outcome{{"x-trace", HeaderPresent}},
			`x-match=any-with-x: "x-trace" present: matched`},
	}
	for i, w := range want {
		m := ms[i]
		var got []outcome
		for _, h := range m.Headers {
			got = append(got, outcome{h.Key, h.Outcome})
		}
		if m.Matched != w.matched || m.XMatch != w.mode || !slices.Equal(got, w.outcomes) || m.Why != w.why {
			t.Errorf("binding %d: %v %v %v %q; want %v %v %v %q", i, m.Matched, m.XMatch, got, m.Why, w.matched, w.mode, w.outcomes, w.why)
		}
	}
	if h := ms[1].Headers[1]; string(h.Message.Bytes()) != "10" || h.Binding.Int() != 10 {
		t.Errorf("size values: %v, %v", h.Message, h.Binding)
	}
	if got := names(ix.Route(nil, hdrs, nil)); !slices.Equal(got, []string{"queue:pdf", "queue:x"}) {
		t.Errorf("Route = %v", got)
	}
	for _, o := range []HeaderOutcome{HeaderMatched, HeaderPresent, HeaderMissing, HeaderDiffers, HeaderTypeDiffers, HeaderIgnored} {
		if strings.HasPrefix(o.String(), "HeaderOutcome(") {
			t.Errorf("outcome %d has no name", o)
		}
	}
	for _, m := range []XMatch{All, Any, AllWithX, AnyWithX} {
		if strings.HasPrefix(m.String(), "XMatch(") {
			t.Errorf("mode %d has no name", m)
		}
	}
	none := New(Headers)
	none.Add(Binding{Dest: q("a"), Args: tbl("x-match", s("any"))})
	none.Add(Binding{Dest: q("b")})
	ms = none.Explain(nil, nil)
	if ms[0].Matched || !strings.Contains(ms[0].Why, "nothing to compare: matches no message") ||
		!ms[1].Matched || !strings.Contains(ms[1].Why, "nothing to compare: matches every message") {
		t.Errorf("nothing to compare: %q, %q", ms[0].Why, ms[1].Why)
	}
}

// TestExplainChain: route explain through an exchange-to-exchange
// binding and an alternate exchange.
func TestExplainChain(t *testing.T) {
	xs := map[string]*exchange{
		"orders":   {ix: New(Direct), alternate: "unrouted"},
		"eu":       {ix: New(Topic)},
		"unrouted": {ix: New(Fanout)},
	}
	xs["orders"].ix.Add(Binding{Dest: x("eu"), Key: "eu"})
	xs["eu"].ix.Add(Binding{Dest: q("eu-all"), Key: "#"})
	xs["unrouted"].ix.Add(Binding{Dest: q("lost")})
	r := resolver(xs)
	qs, hops := r.Explain("orders", []byte("eu"), nil)
	if got := names(qs); !slices.Equal(got, []string{"queue:eu-all"}) || len(hops) != 2 {
		t.Fatalf("eu: %v %+v", got, hops)
	}
	if h := hops[1]; h.Exchange != "eu" || h.From != "orders" || h.Alternate || !h.Matches[0].Matched || len(h.Routed) != 1 {
		t.Errorf("eu hop %+v", h)
	}
	qs, hops = r.Explain("orders", []byte("us"), nil)
	if got := names(qs); !slices.Equal(got, []string{"queue:lost"}) || len(hops) != 2 {
		t.Fatalf("us: %v %+v", got, hops)
	}
	if h := hops[0]; len(h.Routed) != 0 || h.Matches[0].Matched || h.Matches[0].Why != `routing key "us" is not the binding key "eu"` {
		t.Errorf("orders hop %+v", h)
	}
	if h := hops[1]; h.Exchange != "unrouted" || !h.Alternate || h.From != "orders" {
		t.Errorf("alternate hop %+v", h)
	}
}

func TestCheckBinding(t *testing.T) {
	s := amqp091.StringValue
	cases := []struct {
		args amqp091.Table
		text string
	}{
		{tbl("x-match", s("all")), ""},
		{tbl("x-match", s("any-with-x"), "a", s("1")), ""},
		{tbl("a", s("1")), ""},
		{nil, ""},
		{tbl("x-match", s("some")), `Invalid x-match field value <<"some">>; expected all, any, all-with-x, or any-with-x`},
		{tbl("x-match", s("")), `Invalid x-match field value <<>>; expected all, any, all-with-x, or any-with-x`},
		{tbl("x-match", amqp091.Int32Value(1)), `Invalid x-match field type signedint (value 1); expected longstr`},
		{tbl("x-match", amqp091.BytesValue([]byte{1, 2})), `Invalid x-match field type binary (value <<1,2>>); expected longstr`},
		{tbl("x-match", amqp091.DoubleValue(1e3)), `Invalid x-match field type double (value 1.0e3); expected longstr`},
		{tbl("x-match", amqp091.BoolValue(true)), `Invalid x-match field type bool (value true); expected longstr`},
		{tbl("x-match", amqp091.TableValue(tbl("a", amqp091.Int8Value(1)))), `Invalid x-match field type table (value [{<<"a">>,byte,1}]); expected longstr`},
		{tbl("x-match", amqp091.VoidValue()), `Invalid x-match field type void (value undefined); expected longstr`},
		{tbl("x-match", s("bogus"), "x-match", s("all")), `Invalid x-match field value <<"bogus">>; expected all, any, all-with-x, or any-with-x`},
	}
	for _, c := range cases {
		err := CheckBinding(Headers, c.args)
		got := ""
		if err != nil {
			ib, ok := err.(*InvalidBindingError)
			if !ok || err.Error() != "route: invalid binding: "+ib.Text {
				t.Errorf("%x: error %T %v", []byte(c.args), err, err)
				continue
			}
			got = ib.Text
		}
		if got != c.text {
			t.Errorf("%x: %q, want %q", []byte(c.args), got, c.text)
		}
		if CheckBinding(Topic, c.args) != nil {
			t.Errorf("%x refused on a topic exchange", []byte(c.args))
		}
	}
}

// TestErlFloat: the floats as OTP 25 printed them with ~p.
func TestErlFloat(t *testing.T) {
	cases := map[float64]string{
		1e10: "1.0e10", 100: "100.0", 0.1: "0.1", 1e-5: "1.0e-5", 123456789012345678: "1.2345678901234568e17",
		1e22: "1.0e22", 1.5: "1.5", 1e3: "1.0e3", 12345: "12345.0", 1e4: "1.0e4", 123456: "123456.0",
		0.001: "0.001", 0.0001: "0.0001", 0.00012: "1.2e-4", 123456789: "123456789.0", -2.5e-7: "-2.5e-7",
		1e300: "1.0e300", 5e-324: "5.0e-324", 0: "0.0", 1234567890123456: "1234567890123456.0",
		12345678901234567: "1.2345678901234568e16", 1.5e17: "1.5e17", 150: "150.0", 1230: "1230.0", 12300: "1.23e4",
		0.0012: "0.0012", 0.00123: "0.00123", 0.005: "0.005", 9007199254740992: "9.007199254740992e15", 20: "20.0",
	}
	for f, want := range cases {
		if got := erlFloat(f); got != want {
			t.Errorf("erlFloat(%v) = %q, want %q", f, got, want)
		}
	}
	if got := erlFloat(math.Inf(1)); got == "" {
		t.Error("no text for +Inf")
	}
}
