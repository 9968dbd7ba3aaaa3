package queue

import (
	"fmt"
	"slices"
	"testing"
)

func msg(body string, prio uint8, ttl int64) *Message {
	return &Message{Body: []byte(body), Priority: prio, Expiration: ttl}
}

func bodies(es []Entry) []string {
	var s []string
	for _, e := range es {
		s = append(s, string(e.Msg.Body))
	}
	return s
}

// drain pops everything at now and returns the bodies, marking redelivered
// ones with a "*".
func drain(q *Queue, now int64) []string {
	var s []string
	for {
		e, ok, _ := q.Pop(now, nil)
		if !ok {
			return s
		}
		b := string(e.Msg.Body)
		if e.Redelivered {
			b += "*"
		}
		s = append(s, b)
	}
}

func push(t *testing.T, q *Queue, now int64, ms ...*Message) {
	t.Helper()
	for _, m := range ms {
		if ok, dropped := q.Push(m, now, nil); !ok || len(dropped) > 0 {
			t.Fatalf("push %s: accepted %v, dropped %v", m.Body, ok, bodies(dropped))
		}
	}
}

func TestFIFO(t *testing.T) {
	q := New(NoLimits)
	for i := range 100 {
		push(t, q, 1, msg(fmt.Sprint(i), 0, -1))
	}
	if q.Len() != 100 || q.Bytes() != 190 {
		t.Fatalf("Len %d Bytes %d", q.Len(), q.Bytes())
	}
	got := drain(q, 1)
	for i, b := range got {
		if b != fmt.Sprint(i) {
			t.Fatalf("position %d holds %s", i, b)
		}
	}
	if len(got) != 100 || q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("drained %d, Len %d Bytes %d", len(got), q.Len(), q.Bytes())
	}
}

func TestSeqAndPeek(t *testing.T) {
	q := New(NoLimits)
	if _, ok := q.Peek(); ok {
		t.Fatal("Peek on an empty queue")
	}
	push(t, q, 1, msg("a", 0, -1), msg("b", 0, -1))
	e, ok := q.Peek()
	if !ok || string(e.Msg.Body) != "a" || e.Seq != 1 || q.Len() != 2 {
		t.Fatalf("Peek %+v %v", e, ok)
	}
	e, _, _ = q.Pop(1, nil)
	f, _, _ := q.Pop(1, nil)
	if e.Seq != 1 || f.Seq != 2 || e.Redelivered {
		t.Fatalf("Seq %d %d, redelivered %v", e.Seq, f.Seq, e.Redelivered)
	}
}

func TestPriorities(t *testing.T) {
	cfg := NoLimits
	cfg.MaxPriority = 5
	q := New(cfg)
	// RabbitMQ: no priority is 0, above x-max-priority is the maximum,
	// FIFO within a priority.
	push(t, q, 1, msg("none", 0, -1), msg("p1", 1, -1), msg("p9", 9, -1), msg("p5", 5, -1), msg("p3", 3, -1), msg("p255", 255, -1), msg("p0", 0, -1))
	want := []string{"p9", "p5", "p255", "p3", "p1", "none", "p0"}
	if got := drain(q, 1); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Without x-max-priority, priorities are ignored.
	q = New(NoLimits)
	push(t, q, 1, msg("a", 9, -1), msg("b", 0, -1), msg("c", 200, -1))
	if got := drain(q, 1); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("no priorities: got %q", got)
	}
	// All 256 levels.
	cfg.MaxPriority = 255
	q = New(cfg)
	for _, p := range []uint8{0, 63, 64, 65, 127, 128, 191, 192, 255, 1} {
		push(t, q, 1, msg(fmt.Sprint(p), p, -1))
	}
	if got := drain(q, 1); !slices.Equal(got, []string{"255", "192", "191", "128", "127", "65", "64", "63", "1", "0"}) {
		t.Fatalf("255 levels: got %q", got)
	}
}

func TestRequeueOrder(t *testing.T) {
	q := New(NoLimits)
	for i := 1; i <= 8; i++ {
		push(t, q, 1, msg(fmt.Sprint(i), 0, -1))
	}
	held := map[string]Entry{}
	for range 5 {
		e, _, _ := q.Pop(1, nil)
		held[string(e.Msg.Body)] = e
	}
	// 1..5 delivered; ack 2 and 4, requeue 3, 5, 1 in that order.
	q.Requeue(held["3"])
	q.Requeue(held["5"])
	q.Requeue(held["1"])
	want := []string{"1*", "3*", "5*", "6", "7", "8"}
	if got := drain(q, 1); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRequeueManyMatchesRequeue(t *testing.T) {
	cfg := NoLimits
	cfg.MaxPriority = 3
	for _, n := range []int{1, 2, 10, 300} {
		a, b := New(cfg), New(cfg)
		for i := range 2 * n {
			m := msg(fmt.Sprint(i), uint8(i%5), -1)
			push(t, a, 1, m)
			push(t, b, 1, m)
		}
		var es []Entry
		for i := range n {
			ea, _, _ := a.Pop(1, nil)
			b.Pop(1, nil)
			// Deliver, requeue some back at once, so requeued entries sit
			// at the heads when the many come back.
			if i%7 == 3 {
				a.Requeue(ea)
				b.Requeue(ea)
				continue
			}
			es = append(es, ea)
		}
		// In delivery order, in reverse, and shuffled.
		perm := slices.Clone(es)
		for i := range perm {
			j := (i * 7919) % len(perm)
			perm[i], perm[j] = perm[j], perm[i]
		}
		for _, e := range perm {
			a.Requeue(e)
		}
		b.RequeueMany(es)
		if a.Len() != b.Len() || a.Bytes() != b.Bytes() {
			t.Fatalf("n=%d: Len %d/%d Bytes %d/%d", n, a.Len(), b.Len(), a.Bytes(), b.Bytes())
		}
		if ga, gb := drain(a, 1), drain(b, 1); !slices.Equal(ga, gb) {
			t.Fatalf("n=%d: Requeue %q\nRequeueMany %q", n, ga, gb)
		}
	}
}

func TestTTL(t *testing.T) {
	const now = 1_000_000
	cfg := NoLimits
	cfg.MessageTTL = 100
	q := New(cfg)
	push(t, q, now, msg("queue-ttl", 0, -1), msg("message-shorter", 0, 50), msg("message-longer", 0, 500))
	var got []int64
	for e := range q.All() {
		got = append(got, e.Expires-now)
	}
	if !slices.Equal(got, []int64{100, 50, 100}) {
		t.Fatalf("expiries %v, want the smaller TTL", got)
	}
	if at, ok := q.NextExpiry(); !ok || at != now+100 {
		t.Fatalf("NextExpiry %d %v", at, ok)
	}
	// At now+60 message-shorter has expired but is not at the head.
	if ex := q.Expire(now+60, nil); len(ex) != 0 || q.Len() != 3 {
		t.Fatalf("expired %q early", bodies(ex))
	}
	ex := q.Expire(now+100, nil)
	if !slices.Equal(bodies(ex), []string{"queue-ttl", "message-shorter", "message-longer"}) || q.Len() != 0 {
		t.Fatalf("expired %q at the queue TTL", bodies(ex))
	}
	if _, ok := q.NextExpiry(); ok {
		t.Fatal("NextExpiry on an empty queue")
	}

	// Per-message TTL only: a long-lived head keeps the expired behind it
	// until it leaves; Pop then removes them.
	q = New(NoLimits)
	push(t, q, now, msg("forever", 0, -1), msg("short", 0, 10), msg("short2", 0, 20), msg("later", 0, 10_000))
	if _, ok := q.NextExpiry(); ok {
		t.Fatal("a head without TTL has no expiry")
	}
	if ex := q.Expire(now+50, nil); len(ex) != 0 {
		t.Fatalf("expired %q behind the head", bodies(ex))
	}
	e, ok, ex := q.Pop(now+50, nil)
	if !ok || string(e.Msg.Body) != "forever" || !slices.Equal(bodies(ex), []string{"short", "short2"}) {
		t.Fatalf("Pop %s, expired %q", e.Msg.Body, bodies(ex))
	}
	if at, _ := q.NextExpiry(); at != now+10_000 {
		t.Fatalf("NextExpiry %d", at)
	}
	// An expired head is removed before Pop delivers.
	e, ok, ex = q.Pop(now+10_000, ex[:0])
	if ok || len(ex) != 1 || q.Len() != 0 {
		t.Fatalf("Pop %v %v, expired %q", e, ok, bodies(ex))
	}

	// TTL 0 expires at once; a requeued entry keeps its expiry.
	q = New(NoLimits)
	push(t, q, now, msg("zero", 0, 0), msg("m", 0, 100))
	if ex := q.Expire(now, nil); !slices.Equal(bodies(ex), []string{"zero"}) {
		t.Fatalf("TTL 0: expired %q", bodies(ex))
	}
	e, _, _ = q.Pop(now, nil)
	q.Requeue(e)
	if ex := q.Expire(now+100, nil); len(ex) != 1 || !ex[0].Redelivered {
		t.Fatalf("requeued: expired %+v", ex)
	}
}

func TestPriorityExpiryAtHead(t *testing.T) {
	const now = 1_000_000
	cfg := NoLimits
	cfg.MaxPriority = 5
	q := New(cfg)
	push(t, q, now, msg("low-short", 1, 10), msg("high", 5, -1))
	if ex := q.Expire(now+50, nil); len(ex) != 0 {
		t.Fatalf("expired %q behind the highest priority", bodies(ex))
	}
	if _, ok := q.NextExpiry(); ok {
		t.Fatal("the head (high) never expires")
	}
	if _, _, ex := q.Pop(now+50, nil); !slices.Equal(bodies(ex), []string{"low-short"}) {
		t.Fatalf("after the pop: expired %q", bodies(ex))
	}
}

func TestMaxLength(t *testing.T) {
	cfg := NoLimits
	cfg.MaxLength = 2
	q := New(cfg)
	push(t, q, 1, msg("m1", 0, -1), msg("m2", 0, -1))
	ok, dropped := q.Push(msg("m3", 0, -1), 1, nil)
	if !ok || !slices.Equal(bodies(dropped), []string{"m1"}) {
		t.Fatalf("drop-head: %v %q", ok, bodies(dropped))
	}
	// A requeue puts the queue over the limit again: DropHead drops the
	// requeued head.
	e, _, _ := q.Pop(1, nil)
	push(t, q, 1, msg("m4", 0, -1))
	q.Requeue(e)
	if d := q.DropHead(nil); !slices.Equal(bodies(d), []string{"m2"}) || q.Len() != 2 {
		t.Fatalf("after requeue: dropped %q", bodies(d))
	}

	cfg.MaxLength = 0
	q = New(cfg)
	if ok, d := q.Push(msg("m", 0, -1), 1, nil); !ok || len(d) != 1 || q.Len() != 0 {
		t.Fatalf("x-max-length 0: %v %q", ok, bodies(d))
	}

	for _, o := range []Overflow{RejectPublish, RejectPublishDLX} {
		cfg := NoLimits
		cfg.MaxLength, cfg.Overflow = 2, o
		q := New(cfg)
		push(t, q, 1, msg("m1", 0, -1), msg("m2", 0, -1))
		if q.Admits(msg("m3", 0, -1)) {
			t.Fatalf("%v admits a third", o)
		}
		if ok, d := q.Push(msg("m3", 0, -1), 1, nil); ok || len(d) != 0 || q.Len() != 2 {
			t.Fatalf("%v: accepted %v, dropped %q", o, ok, bodies(d))
		}
		// Requeues are never refused and do not drop.
		e, _, _ := q.Pop(1, nil)
		push(t, q, 1, msg("m4", 0, -1))
		q.Requeue(e)
		if d := q.DropHead(nil); len(d) != 0 || q.Len() != 3 {
			t.Fatalf("%v: requeue dropped %q", o, bodies(d))
		}
	}
}

func TestMaxLengthBytes(t *testing.T) {
	cfg := NoLimits
	cfg.MaxLengthBytes = 10
	q := New(cfg)
	big := &Message{Header: make([]byte, 1000), Body: []byte("sixsix"), Expiration: -1}
	push(t, q, 1, big, msg("four", 0, -1))
	if q.Bytes() != 10 {
		t.Fatalf("Bytes %d counts more than bodies", q.Bytes())
	}
	if ok, d := q.Push(msg("1", 0, -1), 1, nil); !ok || !slices.Equal(bodies(d), []string{"sixsix"}) {
		t.Fatalf("drop-head: %v %q", ok, bodies(d))
	}
	// A body larger than the limit drops everything, itself included.
	if _, d := q.Push(msg("eleven-byte", 0, -1), 1, nil); len(d) != 3 || q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("oversized: dropped %q, Len %d", bodies(d), q.Len())
	}
	cfg.Overflow = RejectPublish
	q = New(cfg)
	push(t, q, 1, msg("sixsix", 0, -1))
	if q.Admits(msg("fiver", 0, -1)) || !q.Admits(msg("four", 0, -1)) {
		t.Fatal("reject-publish by bytes")
	}
}

func TestPurge(t *testing.T) {
	cfg := NoLimits
	cfg.MaxPriority = 2
	q := New(cfg)
	push(t, q, 1, msg("a", 0, -1), msg("b", 2, -1), msg("c", 1, -1))
	if n := q.Purge(); n != 3 || q.Len() != 0 || q.Bytes() != 0 {
		t.Fatalf("Purge %d, Len %d", n, q.Len())
	}
	if _, ok, _ := q.Pop(1, nil); ok {
		t.Fatal("Pop after Purge")
	}
	push(t, q, 1, msg("d", 0, -1))
	if got := drain(q, 1); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("after Purge: %q", got)
	}
}

func TestDequeGrowsAndShrinks(t *testing.T) {
	q := New(NoLimits)
	m := msg("x", 0, -1)
	for range 100_000 {
		q.Push(m, 1, nil)
	}
	// Requeue into the middle of a wrapped ring.
	var held []Entry
	for range 50_000 {
		e, _, _ := q.Pop(1, nil)
		held = append(held, e)
	}
	for i := 0; i < len(held); i += 2 {
		q.Requeue(held[i])
	}
	for i := 1; i < len(held); i += 2 {
		q.Requeue(held[i])
	}
	var prev uint64
	n := 0
	for e := range q.All() {
		if e.Seq <= prev {
			t.Fatalf("Seq %d after %d", e.Seq, prev)
		}
		prev = e.Seq
		n++
	}
	if n != 100_000 {
		t.Fatalf("%d entries", n)
	}
	for range 99_990 {
		q.Pop(1, nil)
	}
	if c := len(q.levels[0].fresh.buf); c > 1024 {
		t.Fatalf("a drained queue keeps %d slots", c)
	}
}
