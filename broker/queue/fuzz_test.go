package queue

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// refQueue is the naive reference FuzzQueue checks Queue against: an
// unordered slice, searched for the head every time.
type refQueue struct {
	cfg   Config
	es    []Entry
	seq   uint64
	bytes int64
}

func (r *refQueue) lvl(e Entry) int { return int(min(e.Msg.Priority, r.cfg.MaxPriority)) }

func (r *refQueue) headIndex() int {
	best := -1
	for i, e := range r.es {
		if best < 0 || r.lvl(e) > r.lvl(r.es[best]) || (r.lvl(e) == r.lvl(r.es[best]) && e.Seq < r.es[best].Seq) {
			best = i
		}
	}
	return best
}

func (r *refQueue) take(i int) Entry {
	e := r.es[i]
	r.es = slices.Delete(r.es, i, i+1)
	r.bytes -= int64(len(e.Msg.Body))
	return e
}

func (r *refQueue) over() bool {
	return (r.cfg.MaxLength >= 0 && int64(len(r.es)) > r.cfg.MaxLength) || (r.cfg.MaxLengthBytes >= 0 && r.bytes > r.cfg.MaxLengthBytes)
}

func (r *refQueue) dropHead() (d []Entry) {
	for r.cfg.Overflow == DropHead && r.over() {
		d = append(d, r.take(r.headIndex()))
	}
	return d
}

func (r *refQueue) push(m *Message, now int64) (bool, []Entry) {
	size := int64(len(m.Body))
	if r.cfg.Overflow != DropHead && ((r.cfg.MaxLength >= 0 && int64(len(r.es))+1 > r.cfg.MaxLength) || (r.cfg.MaxLengthBytes >= 0 && r.bytes+size > r.cfg.MaxLengthBytes)) {
		return false, nil
	}
	r.seq++
	e := Entry{Msg: m, Seq: r.seq}
	ttl := int64(-1)
	for _, t := range []int64{r.cfg.MessageTTL, m.Expiration} {
		if t >= 0 && (ttl < 0 || t < ttl) {
			ttl = t
		}
	}
	if ttl >= 0 {
		e.Expires = max(now+ttl, 1)
	}
	r.es = append(r.es, e)
	r.bytes += size
	return true, r.dropHead()
}

func (r *refQueue) expire(now int64) (x []Entry) {
	for {
		i := r.headIndex()
		if i < 0 || r.es[i].Expires == 0 || r.es[i].Expires > now {
			return x
		}
		x = append(x, r.take(i))
	}
}

func (r *refQueue) requeue(e Entry) {
	e.Redelivered = true
	r.es = append(r.es, e)
	r.bytes += int64(len(e.Msg.Body))
}

func sameEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool { return x == y })
}

// FuzzQueue runs random operations on a Queue and on refQueue and
// compares every result.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 0xff, 0xff, 0, 0xff, 0, 1, 2, 0, 3, 1, 4, 0, 1, 1, 2, 1, 1, 7})
	f.Add([]byte{5, 3, 40, 1, 50, 0, 9, 10, 3, 0, 1, 0, 0, 2, 5, 1, 1, 6, 200, 4, 1, 1})
	f.Add([]byte{10, 2, 0xff, 2, 0xff, 0, 7, 0, 0, 2, 0, 0, 3, 0, 1, 1, 1, 7, 0, 1, 1, 8, 0, 0, 0, 1})
	f.Add([]byte{3, 0xff, 12, 0, 20, 0, 1, 100, 0, 2, 3, 0, 3, 0, 1, 5, 30, 1, 4, 1, 5, 90, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		next := func() byte {
			if len(in) == 0 {
				return 0
			}
			b := in[0]
			in = in[1:]
			return b
		}
		limit := func(b byte, mod int64) int64 {
			if b == 0xff {
				return -1
			}
			return int64(b) % mod
		}
		cfg := Config{MaxPriority: next() % 11, MaxLength: limit(next(), 12), MaxLengthBytes: limit(next(), 50),
			Overflow: Overflow(next() % 3), MessageTTL: limit(next(), 200)}
		q, r := New(cfg), &refQueue{cfg: cfg}
		now := int64(1000)
		var held []Entry
		var got, want []Entry
		for len(in) > 0 {
			switch op := next() % 9; op {
			case 0:
				m := &Message{Priority: next(), Expiration: limit(next(), 150), Body: make([]byte, next()%8)}
				ok1, d1 := q.Push(m, now, got[:0])
				ok2, d2 := r.push(m, now)
				if ok1 != ok2 || !sameEntries(d1, d2) {
					t.Fatalf("Push: %v %v, reference %v %v", ok1, d1, ok2, d2)
				}
				got = d1
			case 1:
				e1, ok1, x1 := q.Pop(now, got[:0])
				want = r.expire(now)
				var e2 Entry
				ok2 := false
				if i := r.headIndex(); i >= 0 {
					e2, ok2 = r.take(i), true
				}
				want = append(want, r.expire(now)...)
				if ok1 != ok2 || e1 != e2 || !sameEntries(x1, want) {
					t.Fatalf("Pop: %v %v %v, reference %v %v %v", e1, ok1, x1, e2, ok2, want)
				}
				if ok1 {
					held = append(held, e1)
				}
				got = x1
			case 2, 3:
				if len(held) == 0 {
					continue
				}
				i := int(next()) % len(held)
				e := held[i]
				held = slices.Delete(held, i, i+1)
				if op == 2 {
					q.Requeue(e)
					r.requeue(e)
				}
			case 4:
				x1 := q.Expire(now, got[:0])
				if x2 := r.expire(now); !sameEntries(x1, x2) {
					t.Fatalf("Expire: %v, reference %v", x1, x2)
				}
				got = x1
			case 5:
				now += int64(next())
			case 6:
				if next()%8 == 0 {
					if n := q.Purge(); n != len(r.es) {
						t.Fatalf("Purge %d, reference %d", n, len(r.es))
					}
					r.es, r.bytes = nil, 0
				}
			case 7:
				q.RequeueMany(slices.Clone(held))
				for _, e := range held {
					r.requeue(e)
				}
				held = held[:0]
			case 8:
				d1 := q.DropHead(got[:0])
				if d2 := r.dropHead(); !sameEntries(d1, d2) {
					t.Fatalf("DropHead: %v, reference %v", d1, d2)
				}
				got = d1
			}
			if q.Len() != len(r.es) || q.Bytes() != r.bytes {
				t.Fatalf("Len %d Bytes %d, reference %d %d", q.Len(), q.Bytes(), len(r.es), r.bytes)
			}
			e, ok := q.Peek()
			i := r.headIndex()
			if ok != (i >= 0) || (ok && e != r.es[i]) {
				t.Fatalf("Peek %v %v, reference %d", e, ok, i)
			}
			at, ok := q.NextExpiry()
			if i >= 0 && (ok != (r.es[i].Expires != 0) || at != r.es[i].Expires) {
				t.Fatalf("NextExpiry %d %v, reference head %v", at, ok, r.es[i])
			}
		}
		n := 0
		for range q.All() {
			n++
		}
		if n != len(r.es) {
			t.Fatalf("All yields %d, reference holds %d", n, len(r.es))
		}
	})
}

// FuzzParseArgs feeds arbitrary tables: no panic, results within range,
// refusals that can be written.
func FuzzParseArgs(f *testing.F) {
	f.Add([]byte(table("x-max-length", i32(-1))))
	f.Add([]byte(table("x-max-priority", i32(300), "x-overflow", str("nope"))))
	f.Add([]byte(table("x-dead-letter-exchange", str("dlx"), "x-dead-letter-routing-key", str("k"), "x-message-ttl", amqp091.Int64Value(5))))
	f.Add([]byte(table("x-queue-mode", str("fa\x01st"), "x-queue-type", str("classic"), "x-max-age", str("1D"))))
	f.Add([]byte(table("x-expires", amqp091.Uint64Value(1<<63), "x-single-active-consumer", amqp091.BoolValue(true))))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, a, err := ParseArgs(amqp091.Table(b))
		if err != nil {
			if ae, ok := err.(*ArgError); ok {
				if txt := ae.ReplyText("q", "/"); len(txt) > 255 || len(ae.Error()) == 0 {
					t.Fatalf("reply text %q", txt)
				}
			}
			return
		}
		if cfg.MaxLength < -1 || cfg.MaxLengthBytes < -1 || cfg.MessageTTL < -1 || cfg.MessageTTL > MaxExpiry ||
			a.Expires == 0 || a.Expires < -1 || a.Expires > MaxExpiry || cfg.Overflow > RejectPublishDLX {
			t.Fatalf("accepted out of range: %+v %+v", cfg, a)
		}
		New(cfg) // whatever is accepted makes a queue
	})
}

// refExpiration is Erlang's string:to_integer plus RabbitMQ's bounds, from
// strconv.
func refExpiration(s string) (int64, bool) {
	if s == "" || s == "+" || s == "-" || (s[0] != '+' && s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > MaxExpiry {
		return 0, false
	}
	return v, true
}

func FuzzParseExpiration(f *testing.F) {
	for _, s := range []string{"60000", "+5", "-0", "-5", "10x", "", "99999999999999999999999", "1\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseExpiration([]byte(s))
		rv, ok := refExpiration(s)
		if (err == nil) != ok || (ok && v != rv) {
			t.Fatalf("%q: %d %v, reference %d %v", s, v, err, rv, ok)
		}
		if err != nil {
			if txt := err.(*PublishError).ReplyText(); len(txt) > 255 {
				t.Fatalf("reply text of %d bytes", len(txt))
			}
		}
	})
}

// FuzzDeadLetterHeader feeds arbitrary content headers. What comes out
// must decode, carry no expiration, name this death first, keep the
// headers sorted, and count a second death by the same queue and reason.
func FuzzDeadLetterHeader(f *testing.F) {
	seed := func(p amqp091.Properties) []byte {
		h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic, BodySize: 3, Properties: p}
		return h.AppendTo(nil)
	}
	f.Add(seed(amqp091.Properties{}))
	f.Add(seed(amqp091.Properties{Flags: amqp091.FlagExpiration | amqp091.FlagHeaders, Expiration: []byte("5"),
		Headers: table("CC", amqp091.ArrayValue(array(str("a"), i32(1))), "b", amqp091.Uint64Value(1), "a", amqp091.BoolValue(true))}))
	f.Add(seed(amqp091.Properties{Flags: amqp091.FlagHeaders, Headers: table("x-death", amqp091.ArrayValue(array(
		amqp091.TableValue(table("queue", str("q"), "reason", str("rejected"), "count", i32(3))),
		amqp091.TableValue(table("queue", str("p"), "reason", str("expired"))), str("junk"))))}))
	f.Add(seed(amqp091.Properties{Flags: amqp091.FlagHeaders, Headers: table("x-death", str("junk"))}))
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, hdr []byte) {
		m := &Message{Exchange: "x", RoutingKey: "rk", Header: hdr}
		out, err := DeadLetterHeader(nil, m, Rejected, "q", now, false)
		if err != nil {
			return
		}
		var h amqp091.ContentHeader
		if err := h.DecodeFromBytes(out); err != nil {
			t.Fatalf("output does not decode: %v", err)
		}
		if h.Properties.Flags&amqp091.FlagExpiration != 0 {
			t.Fatal("expiration kept")
		}
		var prev []byte
		it := h.Properties.Headers.Iter()
		for it.Next() {
			if bytes.Compare(it.Key(), prev) < 0 {
				t.Fatalf("headers not sorted: %q after %q", it.Key(), prev)
			}
			prev = it.Key()
		}
		count := func(out []byte) int64 {
			var h amqp091.ContentHeader
			if err := h.DecodeFromBytes(out); err != nil {
				t.Fatal(err)
			}
			xd, _ := h.Properties.Headers.Get("x-death")
			it := xd.Array().Iter()
			if !it.Next() || it.Value().Type != amqp091.TypeTable {
				t.Fatalf("x-death %v does not start with a table", xd.Any())
			}
			e := it.Value().Table()
			q, _ := e.Get("queue")
			r, _ := e.Get("reason")
			c, _ := e.Get("count")
			if string(q.Bytes()) != "q" || string(r.Bytes()) != "rejected" || c.Type != amqp091.TypeInt64 {
				t.Fatalf("first death %v", e)
			}
			return c.Int()
		}
		n := count(out)
		m2 := &Message{Exchange: "x", RoutingKey: "rk", Header: out}
		out2, err := DeadLetterHeader(nil, m2, Rejected, "q", now, true)
		if err != nil {
			t.Fatal(err)
		}
		if n2 := count(out2); n2 != n+1 {
			t.Fatalf("count %d after %d", n2, n)
		}
	})
}
