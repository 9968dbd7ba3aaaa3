package route

import (
	"slices"
	"strconv"
	"testing"
)

type exchange struct {
	ix        *Index
	alternate string
}

func resolver(xs map[string]*exchange) *Resolver {
	return &Resolver{Lookup: func(name string) (*Index, string, bool) {
		x := xs[name]
		if x == nil {
			return nil, "", false
		}
		return x.ix, x.alternate, true
	}}
}

// testTopology: start (topic) -> mid (fanout) -> q1, and start -> q0;
// mid -> start (a cycle); start's alternate is ae (fanout) -> qae; ae's
// alternate is start (an alternate-exchange cycle).
func testTopology() (*Resolver, map[string]*exchange) {
	xs := map[string]*exchange{
		"start": {ix: New(Topic), alternate: "ae"},
		"mid":   {ix: New(Fanout)},
		"ae":    {ix: New(Fanout), alternate: "start"},
	}
	xs["start"].ix.Add(Binding{Dest: x("mid"), Key: "a.*"})
	xs["start"].ix.Add(Binding{Dest: q("q0"), Key: "a.#"})
	xs["mid"].ix.Add(Binding{Dest: q("q1")})
	xs["mid"].ix.Add(Binding{Dest: q("q0")})
	xs["mid"].ix.Add(Binding{Dest: x("start")})
	xs["ae"].ix.Add(Binding{Dest: q("qae")})
	return resolver(xs), xs
}

func TestResolve(t *testing.T) {
	r, xs := testTopology()
	cases := []struct {
		key  string
		want []string
	}{
		{"a.b", []string{"queue:q0", "queue:q1"}}, // through mid, q0 once, the cycle back to start ended
		{"a", []string{"queue:q0"}},               // a.# only
		{"b", []string{"queue:qae"}},              // unroutable: the alternate, whose own alternate is start again
	}
	for _, c := range cases {
		got := names(r.Resolve("start", []byte(c.key), nil, nil))
		if !slices.Equal(got, c.want) {
			t.Errorf("Resolve(%q) = %v, want %v", c.key, got, c.want)
		}
		qs, hops := r.Explain("start", []byte(c.key), nil)
		if got := names(qs); !slices.Equal(got, c.want) {
			t.Errorf("Explain(%q) = %v, want %v", c.key, got, c.want)
		}
		if len(hops) == 0 || hops[0].Exchange != "start" || hops[0].Kind != Topic {
			t.Errorf("Explain(%q) hops %+v", c.key, hops)
		}
	}

	// The AE cycle: ae routes nowhere either, its alternate is start,
	// already seen.
	xs["ae"].ix.RemoveDest(q("qae"))
	if got := r.Resolve("start", []byte("b"), nil, nil); len(got) != 0 {
		t.Errorf("Resolve through an empty AE cycle = %v", got)
	}
	_, hops := r.Explain("start", []byte("b"), nil)
	want := []Hop{
		{Exchange: "start", Kind: Topic},
		{Exchange: "ae", Kind: Fanout, From: "start", Alternate: true},
		{Exchange: "start", From: "ae", Alternate: true, Repeated: true},
	}
	if len(hops) != len(want) {
		t.Fatalf("AE cycle hops %+v", hops)
	}
	for i, h := range hops {
		w := want[i]
		if h.Exchange != w.Exchange || h.Kind != w.Kind || h.From != w.From || h.Alternate != w.Alternate || h.Repeated != w.Repeated {
			t.Errorf("hop %d = %+v, want %+v", i, h, w)
		}
	}

	// An exchange that routes only to an exchange that routes nowhere
	// has routed: its alternate is not used (as in RabbitMQ).
	xs["lonely"] = &exchange{ix: New(Fanout)}
	xs["start2"] = &exchange{ix: New(Direct), alternate: "ae2"}
	xs["ae2"] = &exchange{ix: New(Fanout)}
	xs["ae2"].ix.Add(Binding{Dest: q("q-ae2")})
	xs["start2"].ix.Add(Binding{Dest: x("lonely"), Key: "k"})
	xs["start2"].ix.Add(Binding{Dest: x("missing"), Key: "m"})
	if got := r.Resolve("start2", []byte("k"), nil, nil); len(got) != 0 {
		t.Errorf("Resolve via an exchange routing nowhere = %v, want nothing", got)
	}
	if got := names(r.Resolve("start2", []byte("z"), nil, nil)); !slices.Equal(got, []string{"queue:q-ae2"}) {
		t.Errorf("Resolve of an unroutable key = %v", got)
	}
	// A binding to a missing exchange: skipped, and reported.
	if got := r.Resolve("start2", []byte("m"), nil, nil); len(got) != 0 {
		t.Errorf("Resolve via a missing exchange = %v", got)
	}
	if _, hops := r.Explain("start2", []byte("m"), nil); len(hops) != 2 || !hops[1].Missing || hops[1].Exchange != "missing" {
		t.Errorf("Explain via a missing exchange: %+v", hops)
	}
	if got := r.Resolve("nope", []byte("k"), nil, nil); len(got) != 0 {
		t.Errorf("Resolve from a missing exchange = %v", got)
	}
}

// TestResolveLong walks a chain and a mesh past the Resolver's linear
// scan sizes, with Release called once per Lookup.
func TestResolveLong(t *testing.T) {
	xs := map[string]*exchange{}
	const n = 60
	for i := range n {
		ix := New(Fanout)
		xs["x"+strconv.Itoa(i)] = &exchange{ix: ix}
		// Each exchange to the next two, and back to the first (cycles),
		// and to queues shared between them.
		ix.Add(Binding{Dest: x("x" + strconv.Itoa((i+1)%n))})
		ix.Add(Binding{Dest: x("x" + strconv.Itoa((i+2)%n))})
		ix.Add(Binding{Dest: x("x0")})
		ix.Add(Binding{Dest: queue(i % 25)})
		ix.Add(Binding{Dest: queue((i + 7) % 25)})
	}
	r := resolver(xs)
	lookups := map[string]int{}
	look := r.Lookup
	r.Lookup = func(name string) (*Index, string, bool) { lookups[name]++; return look(name) }
	released := map[string]int{}
	r.Release = func(name string) { released[name]++ }
	for round := range 3 {
		clear(lookups)
		clear(released)
		got := r.Resolve("x5", nil, nil, nil)
		if len(got) != 25 || len(names(got)) != 25 {
			t.Fatalf("round %d: %d queues", round, len(got))
		}
		seen := map[string]bool{}
		for _, d := range got {
			if seen[d.Name] {
				t.Fatalf("round %d: %s twice", round, d.Name)
			}
			seen[d.Name] = true
		}
		if len(lookups) != n {
			t.Errorf("round %d: %d exchanges looked up", round, len(lookups))
		}
		for name, c := range lookups {
			if c != 1 || released[name] != 1 {
				t.Errorf("round %d: %s looked up %d times, released %d", round, name, c, released[name])
			}
		}
	}
}

// TestResolveKeys: a message with CC keys is routed by all of them at
// every exchange, and goes to the alternate only when none routes it.
func TestResolveKeys(t *testing.T) {
	r, xs := testTopology()
	xs["start"].ix.Add(Binding{Dest: q("qc"), Key: "c"})
	cases := []struct {
		keys []string
		want []string
	}{
		{[]string{"b", "c"}, []string{"queue:qc"}},                                // b alone would go to the alternate
		{[]string{"b", "z"}, []string{"queue:qae"}},                               // none routes
		{[]string{"a.b", "c", "a"}, []string{"queue:q0", "queue:q1", "queue:qc"}}, // each queue once
		{[]string{"c"}, []string{"queue:qc"}},
	}
	for _, c := range cases {
		var keys [][]byte
		for _, k := range c.keys {
			keys = append(keys, []byte(k))
		}
		if got := names(r.ResolveKeys("start", keys, nil, nil)); !slices.Equal(got, c.want) {
			t.Errorf("ResolveKeys(%q) = %v, want %v", c.keys, got, c.want)
		}
		qs, hops := r.ExplainKeys("start", keys, nil)
		if got := names(qs); !slices.Equal(got, c.want) {
			t.Errorf("ExplainKeys(%q) = %v, want %v", c.keys, got, c.want)
		}
		if n := len(hops[0].Matches); n != len(keys)*xs["start"].ix.Len() {
			t.Errorf("ExplainKeys(%q): %d matches at start", c.keys, n)
		}
		for i, m := range hops[0].Matches {
			if want := c.keys[i/xs["start"].ix.Len()]; m.RoutingKey != want {
				t.Errorf("ExplainKeys(%q): match %d for key %q, want %q", c.keys, i, m.RoutingKey, want)
			}
		}
	}
}
