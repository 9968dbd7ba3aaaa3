package queue

import (
	"cmp"
	"iter"
	"math/bits"
	"slices"
)

// Entry is one message in one queue.
type Entry struct {
	Msg *Message
	// Seq is the entry's position in its queue, from 1 in publish order;
	// requeueing restores it.
	Seq uint64
	// Expires is when the entry expires, in Unix milliseconds, 0 for
	// never: the smaller of the queue's and the message's TTL, fixed at
	// enqueue as RabbitMQ fixes it (a requeued entry keeps it).
	Expires int64
	// Redelivered says the entry was delivered before (it was requeued).
	Redelivered bool
	// Failures counts the deliveries a consumer reported as failed
	// (AMQP 1.0's modified outcome with delivery-failed): an AMQP 1.0
	// delivery adds it to the header's delivery-count.
	Failures uint32
}

// Queue is the message store of one classic queue, as RabbitMQ 3.10 keeps
// it: the ready messages only (delivered, unacknowledged ones are the
// broker's until it acks or requeues them), in priority order, then
// publish order.
//
// A Queue is not safe for concurrent use: the broker holds the queue's
// lock around every call.
//
// Times are Unix milliseconds and must be positive. Methods that remove
// entries append them to a slice the caller passes (and gets back), so the
// broker can dead-letter them; pass nil when it does not need them, or a
// reused slice[:0] to keep the steady state free of allocations.
type Queue struct {
	cfg    Config
	levels []level // one per priority, index = priority
	// nonEmpty has bit p set when levels[p] has entries, so the highest
	// priority is found in a few instructions.
	nonEmpty [4]uint64
	n        int
	bytes    int64
	seq      uint64
	// timed counts the entries that expire, so queues without TTLs skip
	// the head checks.
	timed int
}

// New returns an empty queue obeying cfg.
func New(cfg Config) *Queue {
	return &Queue{cfg: cfg, levels: make([]level, int(cfg.MaxPriority)+1)}
}

// Config returns what the queue obeys.
func (q *Queue) Config() Config { return q.cfg }

// Len returns the number of ready messages: what queue.declare-ok and
// basic.get-ok report and what x-max-length counts.
func (q *Queue) Len() int { return q.n }

// Bytes returns the body bytes of the ready messages: what
// x-max-length-bytes counts.
func (q *Queue) Bytes() int64 { return q.bytes }

// level is the priority level m goes to: RabbitMQ treats priorities above
// x-max-priority as the maximum, and a queue without x-max-priority has
// one level.
func (q *Queue) level(m *Message) int {
	return int(min(m.Priority, q.cfg.MaxPriority))
}

// head returns the highest non-empty priority level, or -1.
func (q *Queue) head() int {
	for i := len(q.nonEmpty) - 1; i >= 0; i-- {
		if w := q.nonEmpty[i]; w != 0 {
			return i*64 + bits.Len64(w) - 1
		}
	}
	return -1
}

func (q *Queue) mark(p int) { q.nonEmpty[p>>6] |= 1 << (p & 63) }

func (q *Queue) unmarkIfEmpty(p int) {
	if q.levels[p].len() == 0 {
		q.nonEmpty[p>>6] &^= 1 << (p & 63)
	}
}

// Admits reports whether a publish of m would be accepted: false when the
// queue overflows with x-overflow reject-publish or reject-publish-dlx,
// that is when one more message, or m's body, would exceed x-max-length or
// x-max-length-bytes. RabbitMQ checks this before it tries to hand the
// message to a consumer, so the broker must too.
func (q *Queue) Admits(m *Message) bool {
	if q.cfg.Overflow == DropHead {
		return true
	}
	return !(q.cfg.MaxLength >= 0 && int64(q.n)+1 > q.cfg.MaxLength) &&
		!(q.cfg.MaxLengthBytes >= 0 && q.bytes+m.Size() > q.cfg.MaxLengthBytes)
}

// Push enqueues m, unless the queue refuses it ([Queue.Admits]; accepted
// is then false and the broker nacks it, and dead-letters it for
// reject-publish-dlx). With x-overflow drop-head it then drops entries from
// the head while the queue is over its limits, appending them to dropped
// for dead-lettering as "maxlen"; the new entry itself may be among them
// (x-max-length 0, or a body larger than x-max-length-bytes). Push does
// not expire anything: RabbitMQ checks the head's TTL next, so call
// [Queue.Expire] after it.
func (q *Queue) Push(m *Message, now int64, dropped []Entry) (accepted bool, _ []Entry) {
	if !q.Admits(m) {
		return false, dropped
	}
	q.seq++
	e := Entry{Msg: m, Seq: q.seq, Expires: q.expiry(m, now)}
	p := q.level(m)
	q.levels[p].fresh.pushBack(e)
	q.mark(p)
	q.n++
	q.bytes += m.Size()
	if e.Expires != 0 {
		q.timed++
	}
	return true, q.DropHead(dropped)
}

// expiry is when an entry of m enqueued at now expires, 0 for never.
func (q *Queue) expiry(m *Message, now int64) int64 {
	ttl := q.cfg.MessageTTL
	if m.Expiration >= 0 && (ttl < 0 || m.Expiration < ttl) {
		ttl = m.Expiration
	}
	if ttl < 0 {
		return 0
	}
	return max(now+ttl, 1)
}

// DropHead drops entries from the head while the queue is over
// x-max-length or x-max-length-bytes, when x-overflow is drop-head (it
// does nothing for the reject-publish modes), and appends them to dropped.
// RabbitMQ does this after every publish (Push does it) and after a
// requeue, which can put the queue over its limits again.
func (q *Queue) DropHead(dropped []Entry) []Entry {
	if q.cfg.Overflow != DropHead {
		return dropped
	}
	for (q.cfg.MaxLength >= 0 && int64(q.n) > q.cfg.MaxLength) ||
		(q.cfg.MaxLengthBytes >= 0 && q.bytes > q.cfg.MaxLengthBytes) {
		// In a priority queue RabbitMQ drops the head of the highest
		// priority, the message that would be delivered next, not the
		// oldest.
		dropped = append(dropped, q.remove(q.head()))
	}
	return dropped
}

// remove takes the head of level p, which must not be empty.
func (q *Queue) remove(p int) Entry {
	e := q.levels[p].popFront()
	q.unmarkIfEmpty(p)
	q.n--
	q.bytes -= e.Msg.Size()
	if e.Expires != 0 {
		q.timed--
	}
	return e
}

// Expire removes expired entries from the head and appends them to
// expired, for dead-lettering as "expired". As in RabbitMQ only the head
// is looked at: an entry with a long TTL at the head keeps expired entries
// behind it (possible with per-message TTLs, which can differ, and in
// priority queues, where the head is the highest priority's), until they
// reach the head.
func (q *Queue) Expire(now int64, expired []Entry) []Entry {
	for q.timed > 0 {
		p := q.head()
		if p < 0 {
			return expired
		}
		e := q.levels[p].front()
		if e.Expires == 0 || e.Expires > now {
			return expired
		}
		expired = append(expired, q.remove(p))
	}
	return expired
}

// NextExpiry returns when the head expires, for the broker's timer; ok is
// false when the queue is empty or its head never expires. RabbitMQ arms
// its timer for the head only.
func (q *Queue) NextExpiry() (at int64, ok bool) {
	p := q.head()
	if p < 0 {
		return 0, false
	}
	e := q.levels[p].front()
	return e.Expires, e.Expires != 0
}

// Pop removes and returns the next entry to deliver: the oldest of the
// highest priority. Expired entries at the head, before it and then after
// it (as RabbitMQ checks after each fetch), are removed and appended to
// expired. ok is false when nothing is left.
func (q *Queue) Pop(now int64, expired []Entry) (e Entry, ok bool, _ []Entry) {
	expired = q.Expire(now, expired)
	p := q.head()
	if p < 0 {
		return Entry{}, false, expired
	}
	e = q.remove(p)
	return e, true, q.Expire(now, expired)
}

// Peek returns the entry Pop would return, without expiring anything.
func (q *Queue) Peek() (Entry, bool) {
	p := q.head()
	if p < 0 {
		return Entry{}, false
	}
	return q.levels[p].front(), true
}

// PublishDelivered gives m an entry, as Push would, for a publish the
// broker hands straight to a waiting consumer without queueing it
// (RabbitMQ's publish_delivered): the entry has its place, so that a
// requeue puts it back before everything published after it, and its
// expiry.
func (q *Queue) PublishDelivered(m *Message, now int64) Entry {
	q.seq++
	return Entry{Msg: m, Seq: q.seq, Expires: q.expiry(m, now)}
}

// Requeue puts back an entry that Pop or PublishDelivered returned and the
// broker did not ack (basic.reject or basic.nack with requeue,
// basic.recover, a closed channel or cancelled consumer): at its original
// position, marked redelivered, with its original expiry, as RabbitMQ 3.10
// does. RabbitMQ then drops heads over the limits and expired heads: call
// [Queue.DropHead] and [Queue.Expire]. It costs O(log k) for k requeued
// entries waiting in the queue: a requeued entry always sorts before every
// entry that was never delivered, so those wait in a heap of their own.
func (q *Queue) Requeue(e Entry) {
	e.Redelivered = true
	p := q.level(e.Msg)
	q.levels[p].requeue(e)
	q.mark(p)
	q.n++
	q.bytes += e.Msg.Size()
	if e.Expires != 0 {
		q.timed++
	}
}

// RequeueMany requeues es as Requeue does, for a channel closing with
// many deliveries unacknowledged: O(log k) each, in any order.
func (q *Queue) RequeueMany(es []Entry) {
	for _, e := range es {
		q.Requeue(e)
	}
}

// Purge removes every entry (queue.purge: nothing is dead-lettered) and
// returns how many there were.
func (q *Queue) Purge() int {
	n := q.n
	for p := range q.levels {
		q.levels[p] = level{}
	}
	q.nonEmpty = [4]uint64{}
	q.n, q.bytes, q.timed = 0, 0, 0
	return n
}

// All yields the entries in delivery order, for inspection (the management
// API, the TUI); it allocates to sort requeued entries. The queue must not
// change during the iteration.
func (q *Queue) All() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for p := len(q.levels) - 1; p >= 0; p-- {
			l := &q.levels[p]
			back := slices.SortedFunc(slices.Values(l.requeued), func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
			for _, e := range back {
				if !yield(e) {
					return
				}
			}
			for i := 0; i < l.fresh.n; i++ {
				if !yield(*l.fresh.at(i)) {
					return
				}
			}
		}
	}
}

// level holds one priority's entries: those requeued, in a heap by Seq,
// then those never delivered, in a ring in Seq order. Every requeued entry
// sorts before every fresh one: an entry is delivered only when all fresh
// entries of lower Seq have been, and entries published later get higher
// ones.
type level struct {
	requeued []Entry
	fresh    deque
}

func (l *level) len() int { return len(l.requeued) + l.fresh.n }

func (l *level) front() Entry {
	if len(l.requeued) > 0 {
		return l.requeued[0]
	}
	return l.fresh.front()
}

func (l *level) popFront() Entry {
	if len(l.requeued) == 0 {
		return l.fresh.popFront()
	}
	h := l.requeued
	e := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = Entry{} // let the message go
	h = h[:last]
	// Sift down.
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].Seq < h[c].Seq {
			c++
		}
		if h[i].Seq <= h[c].Seq {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	if len(h) == 0 && cap(h) > 1024 {
		h = nil // a channel's worth of requeues went out again: give the memory back
	}
	l.requeued = h
	return e
}

func (l *level) requeue(e Entry) {
	h := append(l.requeued, e)
	// Sift up.
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].Seq <= h[i].Seq {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	l.requeued = h
}

// deque is a ring buffer of entries in Seq order.
type deque struct {
	buf  []Entry // len is 0 or a power of two
	head int
	n    int
}

const minDeque = 16

func (d *deque) at(i int) *Entry { return &d.buf[(d.head+i)&(len(d.buf)-1)] }

func (d *deque) front() Entry { return d.buf[d.head] }

func (d *deque) grow(need int) {
	if need <= len(d.buf) {
		return
	}
	size := max(minDeque, len(d.buf))
	for size < need {
		size *= 2
	}
	d.resize(size)
}

func (d *deque) resize(size int) {
	nb := make([]Entry, size)
	if d.n > 0 {
		if end := d.head + d.n; end <= len(d.buf) {
			copy(nb, d.buf[d.head:end])
		} else {
			k := copy(nb, d.buf[d.head:])
			copy(nb[k:], d.buf[:d.n-k])
		}
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(e Entry) {
	d.grow(d.n + 1)
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = e
	d.n++
}

func (d *deque) popFront() Entry {
	e := d.buf[d.head]
	d.buf[d.head] = Entry{} // let the message go
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	// A queue that once held a backlog gives the memory back once it has
	// drained, but not so eagerly that a steady queue reallocates.
	if len(d.buf) > 1024 && d.n < len(d.buf)/8 {
		d.resize(len(d.buf) / 2)
	}
	return e
}
