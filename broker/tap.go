package broker

import (
	"sync"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// DefaultTapBuffer is the bytes the tap holds for its decoder before it
// drops (and reports as a gap) what a slow decoder cannot take.
const DefaultTapBuffer = 64 << 20

// tap hands connections' bytes to a capture.Serial (the pipeline) from a
// goroutine of its own, so that forwarding never waits for decoding: a
// connection copies its bytes into the tap's buffer and goes on. When the
// decoder falls behind by more than limit bytes, the bytes that do not fit
// are counted instead of copied and reach the decoder as a gap of that
// size before the next bytes of the same direction.
//
// Producers append to pending; the tap's goroutine swaps pending with its
// own spare buffers, so the steady state allocates nothing.
type tap struct {
	out   *capture.Serial
	limit int

	mu      sync.Mutex
	wake    chan struct{}
	pending tapBatch
	closed  bool
	done    chan struct{}
}

type tapBatch struct {
	items []tapItem
	bytes []byte
}

type tapKind uint8

const (
	tapData tapKind = iota
	tapGap
	tapClose
)

type tapItem struct {
	kind     tapKind
	fromA    bool
	f        *tapFlow
	from, to int // data: bytes[from:to]
	gap      int
	t        time.Time
}

// tapFlow is one tapped connection.
type tapFlow struct {
	f    *capture.Flow
	lost [2]int // bytes dropped per direction, not yet reported as a gap
}

func newTap(out *capture.Serial, limit int) *tap {
	if limit <= 0 {
		limit = DefaultTapBuffer
	}
	t := &tap{out: out, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go t.run()
	return t
}

func (t *tap) flow(c *conn) *tapFlow {
	return &tapFlow{f: t.out.NewFlow(c.peer, c.local, time.Now())}
}

func side(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// data copies b into the tap; it never blocks on the decoder.
func (t *tap) data(f *tapFlow, fromA bool, b []byte) {
	if len(b) == 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	s := side(fromA)
	if len(t.pending.bytes)+len(b) > t.limit {
		f.lost[s] += len(b)
		t.mu.Unlock()
		return
	}
	if f.lost[s] > 0 {
		t.pending.items = append(t.pending.items, tapItem{kind: tapGap, fromA: fromA, f: f, gap: f.lost[s], t: now})
		f.lost[s] = 0
	}
	from := len(t.pending.bytes)
	t.pending.bytes = append(t.pending.bytes, b...)
	t.pending.items = append(t.pending.items, tapItem{kind: tapData, fromA: fromA, f: f, from: from, to: len(t.pending.bytes), t: now})
	t.mu.Unlock()
	t.signal()
}

// close reports the end of a flow.
func (t *tap) close(f *tapFlow) {
	now := time.Now()
	t.mu.Lock()
	if !t.closed {
		for s, n := range f.lost {
			if n > 0 {
				t.pending.items = append(t.pending.items, tapItem{kind: tapGap, fromA: s == 0, f: f, gap: n, t: now})
			}
		}
		t.pending.items = append(t.pending.items, tapItem{kind: tapClose, f: f, t: now})
	}
	t.mu.Unlock()
	t.signal()
}

func (t *tap) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// shutdown delivers what is pending and stops the tap's goroutine.
func (t *tap) shutdown() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.signal()
	<-t.done
}

func (t *tap) run() {
	defer close(t.done)
	var spare tapBatch
	for {
		<-t.wake
		for {
			t.mu.Lock()
			batch := t.pending
			t.pending = spare
			closed := t.closed
			t.mu.Unlock()
			if len(batch.items) == 0 {
				spare = batch
				if closed {
					return
				}
				break
			}
			for i := range batch.items {
				it := &batch.items[i]
				switch it.kind {
				case tapData:
					t.out.Data(it.f.f, it.fromA, batch.bytes[it.from:it.to], it.t)
				case tapGap:
					t.out.Gap(it.f.f, it.fromA, it.gap, it.t)
				case tapClose:
					t.out.Close(it.f.f, it.t)
				}
				*it = tapItem{}
			}
			spare = tapBatch{items: batch.items[:0], bytes: batch.bytes[:0]}
			// A batch that grew huge once is not kept for ever.
			if cap(spare.bytes) > 4<<20 {
				spare.bytes = nil
			}
		}
	}
}
