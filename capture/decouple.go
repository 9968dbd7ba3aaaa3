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

// GapRecorderBehind is the reason a [Decoupled] gives a recorder (see
// [Serial.SetRecorder]) for the bytes it could not take in time.
const GapRecorderBehind = "recorder behind"

// Decoupled hands the bytes of sources that forward traffic (the proxy,
// the broker's tap) to a [Serial] from a goroutine of its own, so that
// forwarding never waits for decoding: a connection copies its bytes into
// the buffer and goes on. When the handler falls behind by more than the
// buffer, the bytes that do not fit are counted instead of copied and
// reach the handler as a gap of that size, explained as
// [GapDecoderBehind] (see [ExplainGap]), before the next bytes of the
// same direction; the traffic itself is untouched.
//
// When the Serial has a recorder ([Serial.SetRecorder]: the -w file), the
// recorder gets a buffer and a goroutine of its own, so that a decoder
// behind neither delays the recording nor costs it bytes.
//
// Producers append to one buffer; the handler's goroutine swaps it with a
// spare, so the steady state allocates nothing.
type Decoupled struct {
	out   *Serial
	lanes []*lane // [0]: the decoder; [1], if any: the recorder
}

// DecoupledOption configures a [Decoupled] (see [NewDecoupled]).
type DecoupledOption func(*decoupledConfig)

type decoupledConfig struct {
	pace     bool
	coalesce time.Duration
}

// PaceDecoder has the decoder use only the CPU time the machine can
// spare: on Linux it sleeps, for longer the longer the contention lasts,
// whenever threads (the server's, its clients', the forwarding's) waited
// for a CPU while it worked. On a saturated machine the decoder so works
// about 2% of the time and falls behind, and what it cannot take is a gap
// ([GapDecoderBehind]); the traffic keeps the CPU. Elsewhere it has no
// effect. The recorder's lane is never paced.
func PaceDecoder() DecoupledOption {
	return func(c *decoupledConfig) { c.pace = true }
}

// CoalesceWakeups has the decoder, once woken by bytes after it was idle,
// wait d before it takes them: a stream of small reads (a message at a
// time) then wakes it once per d instead of once a read, each wake-up a
// thread switch that the traffic's CPU pays for. The decoder's output is
// d later; forwarding is not.
func CoalesceWakeups(d time.Duration) DecoupledOption {
	return func(c *decoupledConfig) { c.coalesce = d }
}

// lane is one consumer of a Decoupled with its own buffer and goroutine.
type lane struct {
	id      int
	deliver func(it *decoupledItem, b []byte)
	// idle, when set, is called each time the lane has delivered all it
	// had (a handler that buffers then writes its buffer out).
	idle     func()
	limit    int
	pace     bool
	coalesce time.Duration
	handed   atomic.Int64
	dropped  atomic.Int64
	// ending is set by Shutdown: what is pending is delivered at once,
	// unpaced (the traffic is over).
	ending atomic.Bool

	mu      sync.Mutex
	wake    chan struct{}
	pending decoupledBatch
	free    [][]byte // chunks given back by the handler's goroutine, for reuse
	closed  bool
	done    chan struct{}
}

// decoupledChunk is the size of the chunks a lane copies bytes into, and
// decoupledFree how many it keeps for reuse: a handler behind holds up to
// its limit in chunks, but a lane that grew does not keep more than 4 MiB
// once the handler caught up. Chunks, not one growing buffer, so that a
// batch that grows is never copied again to grow (when the decoder was
// behind, regrowing the buffer of each batch took a tenth of the broker's
// CPU).
const (
	decoupledChunk = 64 << 10
	decoupledFree  = 64
)

type decoupledBatch struct {
	items  []decoupledItem
	chunks [][]byte
	size   int // bytes in chunks
}

// put copies b into the batch's chunks, as one item per chunk it spans.
func (l *lane) put(kind itemKind, f *DecoupledFlow, fromA bool, b []byte, now time.Time) {
	bt := &l.pending
	for first := true; first || len(b) > 0; first = false {
		n := len(bt.chunks)
		if n == 0 || len(bt.chunks[n-1]) == cap(bt.chunks[n-1]) || (kind == itemNote && cap(bt.chunks[n-1])-len(bt.chunks[n-1]) < len(b)) {
			bt.chunks = append(bt.chunks, l.chunk(len(b), kind == itemNote))
			n++
		}
		c := &bt.chunks[n-1]
		take := min(len(b), cap(*c)-len(*c))
		from := len(*c)
		*c = append(*c, b[:take]...)
		bt.size += take
		bt.items = append(bt.items, decoupledItem{kind: kind, fromA: fromA, f: f, chunk: n - 1, from: from, to: len(*c), t: now})
		b = b[take:]
	}
}

// chunk returns an empty chunk: a reused one, or a new one (big enough
// for n bytes when whole is set: a note is not split).
func (l *lane) chunk(n int, whole bool) []byte {
	if k := len(l.free); k > 0 && (!whole || n <= decoupledChunk) {
		c := l.free[k-1]
		l.free[k-1] = nil
		l.free = l.free[:k-1]
		return c
	}
	if whole {
		return make([]byte, 0, max(n, decoupledChunk))
	}
	return make([]byte, 0, decoupledChunk)
}

type itemKind uint8

const (
	itemData itemKind = iota
	itemGap
	itemClose
	itemNote // bytes[from:to] is the note's kind, a NUL, then its text
)

type decoupledItem struct {
	kind     itemKind
	fromA    bool
	f        *DecoupledFlow
	chunk    int // data, note: chunks[chunk][from:to]
	from, to int
	gap      int
	t        time.Time
}

// DecoupledFlow is one connection fed through a [Decoupled].
type DecoupledFlow struct {
	f *Flow
	// lost is the bytes dropped per lane and direction, not yet reported
	// as a gap; guarded by the lane's mu.
	lost [2][2]int
}

// NewDecoupled returns a Decoupled feeding out, holding at most limit
// bytes (0: DefaultDecoupledBuffer) for its handler, and
// DefaultDecoupledBuffer for its recorder if it has one. Call Shutdown
// when the sources are done.
func NewDecoupled(out *Serial, limit int, opts ...DecoupledOption) *Decoupled {
	if limit <= 0 {
		limit = DefaultDecoupledBuffer
	}
	var cfg decoupledConfig
	for _, o := range opts {
		o(&cfg)
	}
	t := &Decoupled{out: out}
	dec := t.addLane(limit, cfg, func(it *decoupledItem, b []byte) {
		switch it.kind {
		case itemData:
			out.decodeData(it.f.f, it.fromA, b, it.t)
		case itemGap:
			out.decodeGap(it.f.f, it.fromA, it.gap, GapDecoderBehind, it.t)
		case itemClose:
			out.decodeClose(it.f.f, it.t)
		case itemNote:
			out.decodeNote(it.f.f, it.fromA, b, it.t)
		}
	})
	dec.idle = out.flushIdle
	if rec := out.recorder(); rec != nil {
		// The recorder's budget is apart from the decoder's: writing a
		// file keeps up with any traffic a disk can take.
		t.addLane(DefaultDecoupledBuffer, decoupledConfig{coalesce: cfg.coalesce}, func(it *decoupledItem, b []byte) {
			switch it.kind {
			case itemData:
				rec.Data(it.f.f, it.fromA, b, it.t)
			case itemGap:
				ExplainGap(rec, it.f.f, it.fromA, it.gap, GapRecorderBehind, it.t)
			case itemClose:
				rec.Close(it.f.f, it.t)
			}
			// Notes are not recorded: a capture file holds bytes.
		})
	}
	for _, l := range t.lanes {
		go l.run()
	}
	return t
}

// addLane adds a lane; NewDecoupled starts the lanes' goroutines once
// they are set up (idle included).
func (t *Decoupled) addLane(limit int, cfg decoupledConfig, deliver func(*decoupledItem, []byte)) *lane {
	l := &lane{id: len(t.lanes), deliver: deliver, limit: limit, pace: cfg.pace, coalesce: cfg.coalesce,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	t.lanes = append(t.lanes, l)
	return l
}

// NewFlow numbers a new connection from client a to server b (see
// [Serial.NewFlow]).
func (t *Decoupled) NewFlow(a, b netip.AddrPort, first time.Time) *DecoupledFlow {
	return &DecoupledFlow{f: t.out.NewFlow(a, b, first)}
}

// Flow returns the numbered flow.
func (f *DecoupledFlow) Flow() *Flow { return f.f }

// Dropped returns the bytes dropped so far because the handler was behind.
func (t *Decoupled) Dropped() int64 { return t.lanes[0].dropped.Load() }

// Handed returns the bytes handed to the handler so far (given to it or
// dropped), the whole of which Dropped is a part.
func (t *Decoupled) Handed() int64 { return t.lanes[0].handed.Load() }

// RecorderDropped returns the bytes the recorder missed because it was
// behind (0 without a recorder).
func (t *Decoupled) RecorderDropped() int64 {
	if len(t.lanes) < 2 {
		return 0
	}
	return t.lanes[1].dropped.Load()
}

func sideOf(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// Data copies b into the buffers; it never waits for a handler.
func (t *Decoupled) Data(f *DecoupledFlow, fromA bool, b []byte) {
	if len(b) == 0 {
		return
	}
	now := time.Now()
	for _, l := range t.lanes {
		l.data(f, fromA, b, now)
	}
}

func (l *lane) data(f *DecoupledFlow, fromA bool, b []byte, now time.Time) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.handed.Add(int64(len(b)))
	s := sideOf(fromA)
	lost := &f.lost[l.id]
	if l.pending.size+len(b) > l.limit {
		lost[s] += len(b)
		l.dropped.Add(int64(len(b)))
		l.mu.Unlock()
		return
	}
	if lost[s] > 0 {
		l.pending.items = append(l.pending.items, decoupledItem{kind: itemGap, fromA: fromA, f: f, gap: lost[s], t: now})
		lost[s] = 0
	}
	l.put(itemData, f, fromA, b, now)
	l.mu.Unlock()
	l.signal()
}

// Note hands the decoder a note on f (see [Noter]), in order with the
// bytes of the flow handed before and after it. Notes are small and few
// (one per fault injected or event seen) and are kept even when the
// handler is behind; the recorder does not get them.
func (t *Decoupled) Note(f *DecoupledFlow, fromA bool, kind, msg string) {
	l := t.lanes[0]
	now := time.Now()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	note := make([]byte, 0, len(kind)+1+len(msg))
	note = append(append(append(note, kind...), 0), msg...)
	l.put(itemNote, f, fromA, note, now)
	l.mu.Unlock()
	l.signal()
}

// Close reports the end of a flow.
func (t *Decoupled) Close(f *DecoupledFlow) {
	now := time.Now()
	for _, l := range t.lanes {
		l.close(f, now)
	}
}

func (l *lane) close(f *DecoupledFlow, now time.Time) {
	l.mu.Lock()
	if !l.closed {
		for s, n := range f.lost[l.id] {
			if n > 0 {
				l.pending.items = append(l.pending.items, decoupledItem{kind: itemGap, fromA: s == 0, f: f, gap: n, t: now})
			}
		}
		l.pending.items = append(l.pending.items, decoupledItem{kind: itemClose, f: f, t: now})
	}
	l.mu.Unlock()
	l.signal()
}

func (l *lane) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Shutdown delivers what is pending, without pacing, and stops the
// handlers' goroutines.
func (t *Decoupled) Shutdown() {
	for _, l := range t.lanes {
		l.ending.Store(true)
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.signal()
	}
	for _, l := range t.lanes {
		<-l.done
	}
}

func (l *lane) run() {
	defer close(l.done)
	var p *pacer
	if l.pace {
		if p = newPacer(); p != nil {
			defer p.close()
		}
	}
	var spare decoupledBatch
	for {
		<-l.wake
		if l.coalesce > 0 {
			time.Sleep(l.coalesce)
		}
		if p != nil {
			p.begin(time.Now())
		}
		for {
			l.mu.Lock()
			// The chunks of the batch delivered last go back for reuse.
			for i, c := range spare.chunks {
				if len(l.free) < decoupledFree && cap(c) == decoupledChunk {
					l.free = append(l.free, c[:0])
				}
				spare.chunks[i] = nil
			}
			spare.chunks = spare.chunks[:0]
			batch := l.pending
			l.pending = spare
			closed := l.closed
			l.mu.Unlock()
			if len(batch.items) == 0 {
				spare = batch
				if l.idle != nil {
					l.idle()
				}
				if closed {
					return
				}
				break
			}
			for i := range batch.items {
				it := &batch.items[i]
				var b []byte
				if it.kind == itemData || it.kind == itemNote {
					b = batch.chunks[it.chunk][it.from:it.to]
				}
				l.deliver(it, b)
				*it = decoupledItem{}
				if p != nil && !l.ending.Load() {
					p.check(time.Now())
				}
			}
			spare = decoupledBatch{items: batch.items[:0], chunks: batch.chunks}
		}
	}
}
