package route

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// TestRouteAllocs proves Route allocates nothing in steady state, for
// every exchange type, cache on and off.
func TestRouteAllocs(t *testing.T) {
	direct, dkeys := directIndex(1000)
	topic, tkeys := topicIndex1000()
	topic.topic.cache.pinned = true
	cachedTopic, _ := topicIndex1000()
	cachedTopic.topic.cache.pinned = true
	cachedTopic.topic.cache.enable()
	headersAll, msgs := headersIndex100("all")
	headersAny, _ := headersIndex100("any")
	cases := []struct {
		name    string
		ix      *Index
		keys    [][]byte
		headers []amqp091.Table
	}{
		{"fanout 1", fanoutIndex(1), [][]byte{nil}, nil},
		{"fanout 100", fanoutIndex(100), [][]byte{nil}, nil},
		{"direct", direct, dkeys, nil},
		{"topic trie", topic, tkeys, nil},
		{"topic cached", cachedTopic, tkeys[:200], nil},
		{"headers all", headersAll, [][]byte{nil}, msgs},
		{"headers any", headersAny, [][]byte{nil}, msgs},
	}
	for _, c := range cases {
		dst := make([]Dest, 0, 128)
		i := 0
		step := func() {
			var h amqp091.Table
			if c.headers != nil {
				h = c.headers[i%len(c.headers)]
			}
			dst = c.ix.Route(c.keys[i%len(c.keys)], h, dst[:0])
			i++
		}
		for range 2000 { // warm: scratch grown, cache filled
			step()
		}
		if n := testing.AllocsPerRun(1000, step); n != 0 {
			t.Errorf("%s: %v allocations per Route", c.name, n)
		}
		keys := [][]byte{c.keys[0], c.keys[len(c.keys)-1], c.keys[len(c.keys)/2]}
		byKeys := func() { dst = c.ix.RouteKeys(keys, nil, dst[:0]) }
		byKeys()
		if n := testing.AllocsPerRun(1000, byKeys); n != 0 {
			t.Errorf("%s: %v allocations per RouteKeys", c.name, n)
		}
		if c.name != "fanout 1" && len(dst) == 0 && c.ix.Kind() != Headers {
			t.Errorf("%s: the last Route found nothing; the proof proves little", c.name)
		}
	}
}

func TestResolveAllocs(t *testing.T) {
	r, _ := testTopology()
	dst := make([]Dest, 0, 16)
	key := []byte("a.b")
	for range 10 {
		dst = r.Resolve("start", key, nil, dst[:0])
	}
	if len(dst) == 0 {
		t.Fatal("Resolve found nothing")
	}
	if n := testing.AllocsPerRun(1000, func() { dst = r.Resolve("start", key, nil, dst[:0]) }); n != 0 {
		t.Errorf("%v allocations per Resolve", n)
	}
}
