package queue

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Messages are pooled: a message record comes with the buffer its header
// and body are stored in, from one pool per size class, and goes back when
// its last reference is released. The references are counted by the
// broker with [Message.Hold] and [Message.Release] (the publishing path
// while it routes, each queue entry and unacknowledged delivery, an open
// transaction, a message on its way to the dead-letter exchange, a
// dead-lettered copy sharing its original's body); frames are encoded
// into the connections' own buffers before a delivery's reference goes,
// so nothing reads a message after its last release.
//
// Size classes grow by quarters of a power of two (64, 80, 96, 112, 128,
// 160, ... bytes), so a stored message wastes at most a fifth of its
// buffer; above maxPooled (bodies larger than the broker reserves before
// they arrive) buffers are plain allocations and only the record is
// pooled.

const (
	minClassShift = 6
	minClass      = 1 << minClassShift
	// maxPooled is the largest buffer pooled: a 1 MiB body (what the
	// broker reserves on a content header's word at most) and a header
	// of up to 256 KiB.
	maxPooled = 1<<20 + 1<<18
)

// sizeClass returns the pool index and buffer capacity for n bytes.
func sizeClass(n int) (class, size int) {
	if n <= minClass {
		return 0, minClass
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	quarter := (n - 1 - 1<<(k-1)) >> (k - 3)
	return (k-minClassShift-1)*4 + quarter + 1, 1<<(k-1) + (quarter+1)<<(k-3)
}

var (
	numClasses, _ = sizeClass(maxPooled)
	bufPools      = make([]sync.Pool, numClasses+1)
	// recordPool holds records whose buffer was not pooled (a large
	// message's) or that have none (a dead-lettered copy's header is its
	// own): the record is reused, the buffer left to the collector.
	recordPool sync.Pool
)

// Message.class: 0 for a record not from AllocMessage (nothing to give
// back), unpooled for a pooled record without a pooled buffer, else the
// buffer's size class plus one.
const unpooled = -1

// AllocMessage returns a message record with room for size bytes in
// [Message.Buffer], from the pool; its reference count is 0 until the
// broker holds it. Give it back with [Message.Free] if it is never held;
// the last [Message.Release] of a held one says to free it.
func AllocMessage(size int) *Message {
	var m *Message
	if size > maxPooled {
		m, _ = recordPool.Get().(*Message)
		if m == nil {
			m = &Message{}
		}
		m.class = unpooled
		m.buf = make([]byte, 0, size)
	} else {
		class, capacity := sizeClass(size)
		m, _ = bufPools[class].Get().(*Message)
		if m == nil {
			m = &Message{class: int8(class + 1), buf: make([]byte, 0, capacity)}
		}
	}
	m.Expiration = -1
	if poisoning.Load() {
		m.counted = true
		live.Add(1)
	}
	return m
}

// Buffer returns the message's own buffer, empty, with the capacity asked
// of [AllocMessage]; Header and Body are usually slices of it.
func (m *Message) Buffer() []byte { return m.buf[:0] }

// Hold counts one more reference to m; first says it is the first (the
// broker then counts the message's bytes as held).
func (m *Message) Hold() (first bool) {
	n := m.refs.Add(1)
	if n <= 0 {
		panic("queue: message held after its release")
	}
	return n == 1
}

// Release counts one reference to m let go; last says it was the last,
// after which m must be freed ([Message.Free]) and not read again.
func (m *Message) Release() (last bool) {
	n := m.refs.Add(-1)
	if n < 0 {
		panic("queue: message released more often than held")
	}
	return n == 0
}

// Held reports whether m has references; in poisoning mode
// ([SetPoisoning]) it panics when m has been freed, so that a message read
// after its release fails loudly where it is read.
func (m *Message) Held() bool {
	n := m.refs.Load()
	if n == poisonRefs || (n <= 0 && poisoning.Load() && m.counted) {
		panic("queue: message read after its release")
	}
	return n > 0
}

// Parent returns the message m shares its body with (a dead-lettered
// copy's original), which m holds a reference to; nil for none.
func (m *Message) Parent() *Message { return m.parent }

// SetParent records that m shares p's body; the caller holds a reference
// to p for m, released when m is freed.
func (m *Message) SetParent(p *Message) { m.parent = p }

// Free gives an unreferenced message back to its pool. Its parent's
// reference is the caller's to release (see [Message.Parent]) before.
func (m *Message) Free() {
	if m.refs.Load() != 0 {
		panic("queue: message freed while held")
	}
	if m.counted {
		live.Add(-1)
		if poisoning.Load() {
			quarantine(m)
			return
		}
	}
	m.recycle()
}

func (m *Message) recycle() {
	class, buf := m.class, m.buf
	switch class {
	case 0:
		return // not from a pool
	case unpooled:
		*m = Message{class: class}
		recordPool.Put(m)
	default:
		*m = Message{class: class, buf: buf[:0]}
		bufPools[class-1].Put(m)
	}
}

// Poisoning: a debug mode for tests. A freed message is overwritten
// (buffer, header, body, names) and kept out of the pool for a while; its
// reads panic ([Message.Held]) or see poison, its holds and releases
// panic, and a write into it is found when it leaves quarantine.
var (
	poisoning atomic.Bool
	live      atomic.Int64

	quarantineMu   sync.Mutex
	quarantineRing [quarantineSize]*Message
	quarantineNext int
)

const (
	quarantineSize = 256
	poisonByte     = 0xdb
	poisonRefs     = -1 << 30
	poisonName     = "\x00queue: released message"
)

// SetPoisoning turns poisoning on or off and returns whether it was on.
// The broker's tests run with it on.
func SetPoisoning(on bool) (was bool) { return poisoning.Swap(on) }

// LiveMessages returns how many messages allocated while poisoning was on
// have not been freed: 0 when every reference taken was released.
func LiveMessages() int64 { return live.Load() }

func quarantine(m *Message) {
	m.refs.Store(poisonRefs)
	buf := m.buf[:cap(m.buf)]
	fill(buf)
	fill(m.Header) // never shared: a dead-lettered copy has its own
	m.Header, m.Body = buf[:min(len(m.Header), len(buf))], buf[len(buf)-min(len(m.Body), len(buf)):]
	m.Exchange, m.RoutingKey = poisonName, poisonName
	m.Via, m.parent = nil, nil
	quarantineMu.Lock()
	old := quarantineRing[quarantineNext]
	quarantineRing[quarantineNext] = m
	quarantineNext = (quarantineNext + 1) % quarantineSize
	quarantineMu.Unlock()
	if old == nil {
		return
	}
	old.checkPoison()
	old.counted = false
	old.refs.Store(0)
	old.recycle()
}

// FlushQuarantine checks the messages in quarantine for writes after
// their release and gives them back to their pools.
func FlushQuarantine() {
	quarantineMu.Lock()
	ring := quarantineRing
	quarantineRing = [quarantineSize]*Message{}
	quarantineMu.Unlock()
	for _, m := range ring {
		if m != nil {
			m.checkPoison()
			m.counted = false
			m.refs.Store(0)
			m.recycle()
		}
	}
}

func (m *Message) checkPoison() {
	if m.refs.Load() != poisonRefs || m.Exchange != poisonName || m.RoutingKey != poisonName {
		panic("queue: message changed after its release")
	}
	for _, c := range m.buf[:cap(m.buf)] {
		if c != poisonByte {
			panic("queue: message buffer written after its release")
		}
	}
}

func fill(b []byte) {
	for i := range b {
		b[i] = poisonByte
	}
}
