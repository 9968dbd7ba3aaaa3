package queue

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// backlog fills a queue with n messages cycling through prios levels.
func backlog(cfg Config, n, prios int) (*Queue, []*Message) {
	q := New(cfg)
	ms := make([]*Message, max(prios, 1))
	for i := range ms {
		ms[i] = &Message{Body: make([]byte, 16), Priority: uint8(i), Expiration: -1}
	}
	for i := range n {
		q.Push(ms[i%len(ms)], 1, nil)
	}
	return q, ms
}

func TestAllocsPushPop(t *testing.T) {
	for _, prios := range []int{0, 10} {
		cfg := NoLimits
		cfg.MaxPriority = uint8(prios)
		q, ms := backlog(cfg, 1000, prios)
		i := 0
		var spill []Entry
		if n := testing.AllocsPerRun(1000, func() {
			i++
			_, spill = q.Push(ms[i%len(ms)], 1, spill[:0])
			_, _, spill = q.Pop(1, spill[:0])
		}); n != 0 {
			t.Errorf("%d priorities: push+pop allocates %v times", prios, n)
		}
	}
}

func TestAllocsRequeue(t *testing.T) {
	q, _ := backlog(NoLimits, 1000, 0)
	held := make([]Entry, 0, 100)
	cycle := func() {
		held = held[:0]
		for range 100 {
			e, _, _ := q.Pop(1, nil)
			held = append(held, e)
		}
		for i := len(held) - 1; i >= 0; i -= 2 {
			q.Requeue(held[i])
		}
		for i := len(held) - 2; i >= 0; i -= 2 {
			q.Requeue(held[i])
		}
	}
	cycle() // the heap's memory
	if n := testing.AllocsPerRun(100, cycle); n != 0 {
		t.Errorf("pop and requeue allocate %v times", n)
	}
	cycleMany := func() {
		held = held[:0]
		for range 100 {
			e, _, _ := q.Pop(1, nil)
			held = append(held, e)
		}
		q.RequeueMany(held)
	}
	if n := testing.AllocsPerRun(100, cycleMany); n != 0 {
		t.Errorf("RequeueMany allocates %v times", n)
	}
}

func TestAllocsLimitsAndExpiry(t *testing.T) {
	cfg := NoLimits
	cfg.MaxLength, cfg.MessageTTL = 100, 10
	q, ms := backlog(cfg, 100, 0)
	var dropped, expired []Entry
	now := int64(1)
	if n := testing.AllocsPerRun(1000, func() {
		now += 5
		_, dropped = q.Push(ms[0], now, dropped[:0])
		expired = q.Expire(now, expired[:0])
		q.NextExpiry()
	}); n != 0 {
		t.Errorf("push with drop-head and expiry allocates %v times", n)
	}
	if len(dropped)+len(expired) == 0 || q.Len() == 0 {
		t.Fatal("nothing dropped or expired: the test measures nothing")
	}
}

func TestAllocsParseProperties(t *testing.T) {
	h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 5, Properties: amqp091.Properties{
		Flags:   amqp091.FlagContentType | amqp091.FlagHeaders | amqp091.FlagDeliveryMode | amqp091.FlagPriority | amqp091.FlagExpiration,
		Headers: table("CC", amqp091.ArrayValue(array(str("a"))), "k", str("v")), DeliveryMode: 2, Priority: 4, Expiration: []byte("60000"),
		ContentType: []byte("text/plain")}}
	m := &Message{Header: h.AppendTo(nil)}
	if n := testing.AllocsPerRun(1000, func() {
		if err := m.ParseProperties(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ParseProperties allocates %v times", n)
	}
	if m.Expiration != 60000 || m.Priority != 4 || !m.Persistent {
		t.Fatalf("parsed %+v", m)
	}
}

func BenchmarkPushPop(b *testing.B) {
	for _, c := range []struct {
		name  string
		prios int
	}{{"fifo", 0}, {"priorities-10", 10}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := NoLimits
			cfg.MaxPriority = uint8(c.prios)
			q, ms := backlog(cfg, 1000, c.prios)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				q.Push(ms[i%len(ms)], 1, nil)
				q.Pop(1, nil)
			}
		})
	}
}

// BenchmarkRequeue1000 delivers 1000 and requeues them in random order (a
// channel closing), one by one and at once.
func BenchmarkRequeue1000(b *testing.B) {
	for _, many := range []bool{false, true} {
		name := "one-by-one"
		if many {
			name = "many"
		}
		b.Run(name, func(b *testing.B) {
			q, _ := backlog(NoLimits, 10_000, 0)
			held := make([]Entry, 0, 1000)
			r := rand.New(rand.NewPCG(1, 1))
			b.ReportAllocs()
			for b.Loop() {
				held = held[:0]
				for range 1000 {
					e, _, _ := q.Pop(1, nil)
					held = append(held, e)
				}
				r.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
				if many {
					q.RequeueMany(held)
				} else {
					for _, e := range held {
						q.Requeue(e)
					}
				}
			}
		})
	}
}

// BenchmarkExpire publishes with a TTL and expires as the broker's timer
// would, 10 at a time.
func BenchmarkExpire(b *testing.B) {
	cfg := NoLimits
	cfg.MessageTTL = 100
	q := New(cfg)
	m := &Message{Body: make([]byte, 16), Expiration: -1}
	now := int64(1)
	for range 1000 {
		q.Push(m, now, nil)
		now++
	}
	var expired []Entry
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			q.Push(m, now, nil)
		}
		now += 10
		expired = q.Expire(now, expired[:0])
	}
}

func BenchmarkParseProperties(b *testing.B) {
	h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 5, Properties: amqp091.Properties{
		Flags: amqp091.FlagContentType | amqp091.FlagDeliveryMode | amqp091.FlagExpiration, DeliveryMode: 2, Expiration: []byte("60000"), ContentType: []byte("text/plain")}}
	m := &Message{Header: h.AppendTo(nil)}
	b.ReportAllocs()
	for b.Loop() {
		m.ParseProperties()
	}
}

func BenchmarkDeadLetterHeader(b *testing.B) {
	h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 5, Properties: amqp091.Properties{
		Flags: amqp091.FlagContentType | amqp091.FlagHeaders | amqp091.FlagExpiration, Expiration: []byte("60000"), ContentType: []byte("text/plain"),
		Headers: table("app", str("orders"), "trace", str("abc123"))}}
	m := &Message{Exchange: "ex", RoutingKey: "orders.new", Header: h.AppendTo(nil)}
	now := time.Unix(1_700_000_000, 0)
	for _, again := range []bool{false, true} {
		name := "first-death"
		if again {
			name = "second-death"
		}
		b.Run(name, func(b *testing.B) {
			mm := m
			if again {
				hdr, _ := DeadLetterHeader(nil, m, Expired, "q", now, false)
				mm = &Message{Exchange: "dlx", RoutingKey: "orders.new", Header: hdr}
			}
			var dst []byte
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = DeadLetterHeader(dst[:0], mm, Expired, "q", now, false)
			}
		})
	}
}
