package route

import (
	"strconv"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func queue(i int) Dest { return Dest{Kind: Queue, Name: "q" + strconv.Itoa(i)} }

func fanoutIndex(n int) *Index {
	ix := New(Fanout)
	for i := range n {
		ix.Add(Binding{Dest: queue(i)})
	}
	return ix
}

func directIndex(n int) (*Index, [][]byte) {
	ix := New(Direct)
	keys := make([][]byte, n)
	for i := range n {
		k := "orders.key-" + strconv.Itoa(i)
		keys[i] = []byte(k)
		ix.Add(Binding{Dest: queue(i % 100), Key: k})
	}
	return ix, keys
}

var (
	benchRegions = []string{"eu", "us", "ap", "sa", "af"}
	benchEvents  = []string{"created", "updated", "deleted", "shipped"}
)

// topicIndex1000 builds 1,000 topic bindings as an application's might
// look: 600 literal keys, 250 with a "*", 150 with a "#", over 50
// services, 5 regions and 4 events, to 200 queues; and the routing keys
// of every service, region and event.
func topicIndex1000() (*Index, [][]byte) {
	ix := New(Topic)
	n := 0
	add := func(k string) {
		if ix.Add(Binding{Dest: queue(n % 200), Key: k}) {
			n++
		}
	}
	for i := 0; n < 600; i++ {
		add("svc" + strconv.Itoa(i%50) + "." + benchRegions[i/50%5] + "." + benchEvents[i/250%4] + ".v" + strconv.Itoa(i/1000))
	}
	for i := 0; n < 850; i++ {
		switch i % 3 {
		case 0:
			add("svc" + strconv.Itoa(i%50) + ".*." + benchEvents[i/50%4] + ".v" + strconv.Itoa(i/200))
		case 1:
			add("*." + benchRegions[i%5] + "." + benchEvents[i/5%4] + ".v" + strconv.Itoa(i/20))
		default:
			add("svc" + strconv.Itoa(i%50) + "." + benchRegions[i/50%5] + ".*.v" + strconv.Itoa(i/250))
		}
	}
	for i := 0; n < 1000; i++ {
		switch i % 3 {
		case 0:
			add("svc" + strconv.Itoa(i%50) + ".#.v" + strconv.Itoa(i/50))
		case 1:
			add("#." + benchEvents[i%4] + ".v" + strconv.Itoa(i/4))
		default:
			add("svc" + strconv.Itoa(i%50) + "." + benchRegions[i/50%5] + ".#")
		}
	}
	var keys [][]byte
	for s := range 50 {
		for _, r := range benchRegions {
			for _, e := range benchEvents {
				keys = append(keys, []byte("svc"+strconv.Itoa(s)+"."+r+"."+e+".v0"))
			}
		}
	}
	return ix, keys
}

// headersIndex100 builds 100 headers bindings under one mode, each on two
// of 10 keys with one of 10 values, to 50 queues; and 64 messages of
// three such headers.
func headersIndex100(mode string) (*Index, []amqp091.Table) {
	ix := New(Headers)
	for i := range 100 {
		args := amqp091.Table(nil).Append("x-match", amqp091.StringValue(mode)).
			Append("k"+strconv.Itoa(i%10), amqp091.Int32Value(int32(i/10))).
			Append("k"+strconv.Itoa((i/10+i)%10), amqp091.StringValue("v"+strconv.Itoa(i%7)))
		ix.Add(Binding{Dest: queue(i % 50), Args: args})
	}
	var msgs []amqp091.Table
	for i := range 64 {
		msgs = append(msgs, amqp091.Table(nil).
			Append("k"+strconv.Itoa(i%10), amqp091.Int8Value(int8(i/10%10))).
			Append("k"+strconv.Itoa((i+3)%10), amqp091.StringValue("v"+strconv.Itoa(i%7))).
			Append("trace-id", amqp091.StringValue("abc-"+strconv.Itoa(i))))
	}
	return ix, msgs
}

func BenchmarkRouteFanout(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ix := fanoutIndex(n)
			dst := make([]Dest, 0, n)
			b.ReportAllocs()
			for b.Loop() {
				dst = ix.Route(nil, nil, dst[:0])
			}
		})
	}
}

func BenchmarkRouteDirect1000Keys(b *testing.B) {
	ix, keys := directIndex(1000)
	dst := make([]Dest, 0, 4)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dst = ix.Route(keys[i%len(keys)], nil, dst[:0])
		i++
	}
}

func BenchmarkRouteTopic1000(b *testing.B) {
	for _, bc := range []struct {
		name   string
		cached bool
		keys   int
	}{{"trie", false, 1000}, {"cached-200-keys", true, 200}, {"cached-1000-keys", true, 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			ix, keys := topicIndex1000()
			keys = keys[:bc.keys]
			ix.topic.cache.pinned = true
			if bc.cached {
				ix.topic.cache.enable()
			}
			dst := make([]Dest, 0, 64)
			for _, k := range keys {
				dst = ix.Route(k, nil, dst[:0])
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				dst = ix.Route(keys[i%len(keys)], nil, dst[:0])
				i++
			}
		})
	}
}

func BenchmarkRouteHeaders100(b *testing.B) {
	for _, mode := range []string{"all", "any"} {
		b.Run(mode, func(b *testing.B) {
			ix, msgs := headersIndex100(mode)
			dst := make([]Dest, 0, 64)
			for _, m := range msgs {
				dst = ix.Route(nil, m, dst[:0])
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				dst = ix.Route(nil, msgs[i%len(msgs)], dst[:0])
				i++
			}
		})
	}
}

func BenchmarkResolve(b *testing.B) {
	b.Run("direct-1-queue", func(b *testing.B) {
		ix := New(Direct)
		ix.Add(Binding{Dest: q("q"), Key: "k"})
		r := &Resolver{Lookup: func(string) (*Index, string, bool) { return ix, "", true }}
		key := []byte("k")
		dst := make([]Dest, 0, 4)
		b.ReportAllocs()
		for b.Loop() {
			dst = r.Resolve("x", key, nil, dst[:0])
		}
	})
	b.Run("exchange-chain-cycle", func(b *testing.B) {
		r, _ := testTopology()
		key := []byte("a.b")
		dst := make([]Dest, 0, 4)
		b.ReportAllocs()
		for b.Loop() {
			dst = r.Resolve("start", key, nil, dst[:0])
		}
	})
}

func BenchmarkAddRemove(b *testing.B) {
	for _, k := range []Kind{Direct, Fanout, Topic, Headers} {
		b.Run(k.String(), func(b *testing.B) {
			ix := New(k)
			args := amqp091.Table(nil).Append("x-match", amqp091.StringValue("any")).Append("a", amqp091.Int32Value(1))
			for i := range 1000 {
				ix.Add(Binding{Dest: queue(i % 50), Key: "a.b." + strconv.Itoa(i), Args: args})
			}
			bd := Binding{Dest: q("new"), Key: "a.*.c", Args: args}
			b.ReportAllocs()
			for b.Loop() {
				ix.Add(bd)
				ix.Remove(bd.Dest, bd.Key, bd.Args)
			}
		})
	}
}
