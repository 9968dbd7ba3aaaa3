package broker

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// memory accounts the bytes of messages held in queues against the high
// watermark. Above it, publishing connections are blocked, as RabbitMQ
// does on a memory alarm: connection.blocked to clients that announced the
// capability, and their reads stop (TCP backpressure) until consumers
// drain the queues below the watermark.
type memory struct {
	used  atomic.Int64
	limit atomic.Int64 // 0: the alarm is on whatever is held
	// messages counts the messages held: 0 once every queue, delivery
	// and transaction let go (the tests' ledger).
	messages atomic.Int64
	mu       sync.Mutex
	cond     *sync.Cond
	blocked  atomic.Bool
}

// memoryFraction is RabbitMQ's default vm_memory_high_watermark.
const memoryFraction = 0.4

func (m *memory) init(limit int64) {
	m.cond = sync.NewCond(&m.mu)
	if limit == 0 {
		limit = int64(float64(PhysicalMemory()) * memoryFraction)
	}
	m.limit.Store(limit)
}

// setLimit changes the watermark and raises or clears the alarm at once
// for what is held now.
func (m *memory) setLimit(limit int64) {
	if limit < 0 {
		limit = 0
	}
	m.mu.Lock()
	m.limit.Store(limit)
	if limit == 0 || m.used.Load() > limit {
		m.blocked.Store(true)
	} else if m.blocked.Load() {
		m.blocked.Store(false)
		m.cond.Broadcast()
	}
	m.mu.Unlock()
}

// SetMemoryHighWatermark changes the memory high watermark while the
// broker runs, as rabbitmqctl set_vm_memory_high_watermark does: the bytes
// of messages held above which publishers are blocked. 0 raises the alarm
// whatever is held and so blocks every publishing connection, RabbitMQ's
// way to stop publishing globally, until the watermark is set again.
func (b *Broker) SetMemoryHighWatermark(limit int64) { b.mem.setLimit(limit) }

// messageBytes is what a message counts against the watermark: its header
// and body, but a dead-lettered copy's body, which is its original's (held
// by the copy, so counted by it).
func messageBytes(msg *queue.Message) int64 {
	if msg.Parent() != nil {
		return int64(len(msg.Header))
	}
	return int64(len(msg.Body) + len(msg.Header))
}

// hold takes a reference to a message: the publishing path's while it
// routes, a queue entry's or unacknowledged delivery's, an open
// transaction's, a dead letter's on its way, a dead-lettered copy's to its
// original. Its bytes count once, however many hold it.
func (m *memory) hold(msg *queue.Message) {
	if msg.Hold() {
		m.messages.Add(1)
		m.grow(messageBytes(msg))
	}
}

// release lets a reference go (acknowledged, delivered without ack and
// its frames encoded, dropped, expired, dead-lettered, rolled back,
// routed); the last one frees its bytes and gives the message back to its
// pool, and a dead-lettered copy's reference to its original with it.
func (m *memory) release(msg *queue.Message) {
	for msg != nil && msg.Release() {
		m.messages.Add(-1)
		m.shrink(messageBytes(msg))
		parent := msg.Parent()
		msg.Free()
		msg = parent
	}
}

// grow counts n more bytes held: a message's, or the body frames of one
// still arriving.
func (m *memory) grow(n int64) {
	if m.used.Add(n) > m.limit.Load() {
		m.blocked.Store(true)
	}
}

// shrink counts n bytes no longer held, clearing the alarm below the
// watermark.
func (m *memory) shrink(n int64) {
	if m.used.Add(-n) <= m.limit.Load() && m.blocked.Load() {
		m.mu.Lock()
		if l := m.limit.Load(); l > 0 && m.used.Load() <= l {
			m.blocked.Store(false)
			m.cond.Broadcast()
		}
		m.mu.Unlock()
	}
}

// waitUnblocked holds a publishing connection while the alarm is on. It
// runs when a basic.publish arrives, as RabbitMQ's reader blocks: the
// connection stops reading there (TCP backpressure), so a blocked
// publisher starts no new message; the body frames of one under way still
// count against the watermark.
func (m *memory) waitUnblocked(c *conn) {
	if !m.blocked.Load() {
		return
	}
	c.endOfBatch() // what this batch did goes out before the wait
	if c.blockedNotify {
		c.send(func(out []byte) []byte {
			return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionBlocked{Reason: []byte("low on memory")})
		})
	}
	c.setState(stateBlocked)
	m.mu.Lock()
	for m.blocked.Load() && c.closeRequested.Load() == nil {
		m.cond.Wait()
	}
	m.mu.Unlock()
	c.setState(stateRunning)
	if c.blockedNotify {
		c.send(func(out []byte) []byte {
			return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionUnblocked{})
		})
	}
}

// wake releases blocked publishers so they can see a close request.
func (m *memory) wake() {
	m.mu.Lock()
	m.cond.Broadcast()
	m.mu.Unlock()
}

// PhysicalMemory is the machine's memory, which RabbitMQ's relative
// watermark is a fraction of: MemTotal from /proc/meminfo (Linux), else
// 4 GiB.
func PhysicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						return kb << 10
					}
				}
			}
		}
	}
	return 4 << 30
}
