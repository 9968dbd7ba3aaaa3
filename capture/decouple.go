package capture

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultDecoupledBuffer is the bytes a [Decoupled] holds for its handler
// before it drops (and reports as a gap) what a slow handler cannot take.
const DefaultDecoupledBuffer = 64 << 20

// GapDecoderBehind is the reason a [Decoupled] gives for the bytes it did
// not hand on: the handler was too far behind to take them.
const GapDecoderBehind = "decoder behind"

// GapExplainer is implemented by handlers that can show why bytes are
// missing. A source that drops bytes for a reason of its own, rather than
// because the capture lost them, reports them with [ExplainGap].
type GapExplainer interface {
	// GapBecause is [Handler.Gap] with a reason ("decoder behind"): the
	// handler shows "n bytes not decoded: reason" where it shows units.
	GapBecause(f *Flow, fromA bool, n int, reason string, t time.Time)
}

// ExplainGap calls h.GapBecause when h is a [GapExplainer], h.Gap
// otherwise.
func ExplainGap(h Handler, f *Flow, fromA bool, n int, reason string, t time.Time) {
	if e, ok := h.(GapExplainer); ok {
		e.GapBecause(f, fromA, n, reason, t)
		return
	}
	h.Gap(f, fromA, n, t)
}

// Decoupled hands the bytes of sources that forward traffic (the proxy,
// the broker's tap) to a [Serial] from a goroutine of its own, so that
// forwarding never waits for decoding: a connection copies its bytes into
// the buffer and goes on. When the handler falls behind by more than the
// buffer, the bytes that do not fit are counted instead of copied and
// reach the handler as a gap of that size, explained as
// [GapDecoderBehind] (see [ExplainGap]), before the next bytes of the
// same direction; the traffic itself is untouched.
//
// Producers append to one buffer; the handler's goroutine swaps it with a
// spare, so the steady state allocates nothing.
type Decoupled struct {
	out     *Serial
	limit   int
	dropped atomic.Int64

	mu      sync.Mutex
	wake    chan struct{}
	pending decoupledBatch
	closed  bool
	done    chan struct{}
}

type decoupledBatch struct {
	items []decoupledItem
	bytes []byte
}

type itemKind uint8

const (
	itemData itemKind = iota
	itemGap
	itemClose
)

type decoupledItem struct {
	kind     itemKind
	fromA    bool
	f        *DecoupledFlow
	from, to int // data: bytes[from:to]
	gap      int
	t        time.Time
}

// DecoupledFlow is one connection fed through a [Decoupled].
type DecoupledFlow struct {
	f    *Flow
	lost [2]int // bytes dropped per direction, not yet reported as a gap
}

// NewDecoupled returns a Decoupled feeding out, holding at most limit
// bytes (0: DefaultDecoupledBuffer). Call Shutdown when the sources are
// done.
func NewDecoupled(out *Serial, limit int) *Decoupled {
	if limit <= 0 {
		limit = DefaultDecoupledBuffer
	}
	t := &Decoupled{out: out, limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go t.run()
	return t
}

// NewFlow numbers a new connection from client a to server b (see
// [Serial.NewFlow]).
func (t *Decoupled) NewFlow(a, b netip.AddrPort, first time.Time) *DecoupledFlow {
	return &DecoupledFlow{f: t.out.NewFlow(a, b, first)}
}

// Flow returns the numbered flow.
func (f *DecoupledFlow) Flow() *Flow { return f.f }

// Dropped returns the bytes dropped so far because the handler was behind.
func (t *Decoupled) Dropped() int64 { return t.dropped.Load() }

func sideOf(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// Data copies b into the buffer; it never waits for the handler.
func (t *Decoupled) Data(f *DecoupledFlow, fromA bool, b []byte) {
	if len(b) == 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	s := sideOf(fromA)
	if len(t.pending.bytes)+len(b) > t.limit {
		f.lost[s] += len(b)
		t.dropped.Add(int64(len(b)))
		t.mu.Unlock()
		return
	}
	if f.lost[s] > 0 {
		t.pending.items = append(t.pending.items, decoupledItem{kind: itemGap, fromA: fromA, f: f, gap: f.lost[s], t: now})
		f.lost[s] = 0
	}
	from := len(t.pending.bytes)
	t.pending.bytes = append(t.pending.bytes, b...)
	t.pending.items = append(t.pending.items, decoupledItem{kind: itemData, fromA: fromA, f: f, from: from, to: len(t.pending.bytes), t: now})
	t.mu.Unlock()
	t.signal()
}

// Close reports the end of a flow.
func (t *Decoupled) Close(f *DecoupledFlow) {
	now := time.Now()
	t.mu.Lock()
	if !t.closed {
		for s, n := range f.lost {
			if n > 0 {
				t.pending.items = append(t.pending.items, decoupledItem{kind: itemGap, fromA: s == 0, f: f, gap: n, t: now})
			}
		}
		t.pending.items = append(t.pending.items, decoupledItem{kind: itemClose, f: f, t: now})
	}
	t.mu.Unlock()
	t.signal()
}

func (t *Decoupled) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Shutdown delivers what is pending and stops the handler's goroutine.
func (t *Decoupled) Shutdown() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.signal()
	<-t.done
}

func (t *Decoupled) run() {
	defer close(t.done)
	var spare decoupledBatch
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
				case itemData:
					t.out.Data(it.f.f, it.fromA, batch.bytes[it.from:it.to], it.t)
				case itemGap:
					t.out.GapBecause(it.f.f, it.fromA, it.gap, GapDecoderBehind, it.t)
				case itemClose:
					t.out.Close(it.f.f, it.t)
				}
				*it = decoupledItem{}
			}
			spare = decoupledBatch{items: batch.items[:0], bytes: batch.bytes[:0]}
			// A batch that grew huge once is not kept for ever.
			if cap(spare.bytes) > 4<<20 {
				spare.bytes = nil
			}
		}
	}
}
