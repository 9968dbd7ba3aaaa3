package capture

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// recordHandler keeps what each flow and direction received, gaps as
// their size.
type recordHandler struct {
	mu    sync.Mutex
	got   map[[2]int]*bytes.Buffer // {flow, 0 from A | 1 from B}
	gaps  map[[2]int]int
	order []string // "data" / "gap" per call, for the side of interest
	block chan struct{}
	// entered, when set, gets a value as a blocked Data call starts
	// waiting on block.
	entered chan struct{}
}

func newRecordHandler() *recordHandler {
	return &recordHandler{got: map[[2]int]*bytes.Buffer{}, gaps: map[[2]int]int{}}
}

func (h *recordHandler) key(f *Flow, fromA bool) [2]int {
	k := [2]int{f.ID, 1}
	if fromA {
		k[1] = 0
	}
	return k
}

func (h *recordHandler) Data(f *Flow, fromA bool, b []byte, _ time.Time) {
	if h.block != nil {
		if h.entered != nil {
			select {
			case h.entered <- struct{}{}:
			default:
			}
		}
		<-h.block
	}
	h.mu.Lock()
	k := h.key(f, fromA)
	if h.got[k] == nil {
		h.got[k] = &bytes.Buffer{}
	}
	h.got[k].Write(b)
	h.order = append(h.order, "data")
	h.mu.Unlock()
}

func (h *recordHandler) Gap(f *Flow, fromA bool, n int, _ time.Time) {
	h.mu.Lock()
	h.gaps[h.key(f, fromA)] += n
	h.order = append(h.order, "gap")
	h.mu.Unlock()
}

func (h *recordHandler) Close(*Flow, time.Time) {}

// TestDecoupledKeepsOrderAcrossChunks: writes of every size, from 1 byte
// to several chunks, from two flows in both directions, reach the handler
// in order and whole.
func TestDecoupledKeepsOrderAcrossChunks(t *testing.T) {
	h := newRecordHandler()
	d := NewDecoupled(NewSerial(h), 1<<30)
	a, b := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")
	flows := []*DecoupledFlow{d.NewFlow(a, b, time.Now()), d.NewFlow(a, b, time.Now())}
	want := map[[2]int]*bytes.Buffer{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		n := 1 + rng.IntN(300)
		if i%97 == 0 {
			n = 1 + rng.IntN(3*decoupledChunk) // past a chunk
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		f := flows[rng.IntN(2)]
		fromA := rng.IntN(2) == 0
		k := h.key(f.Flow(), fromA)
		if want[k] == nil {
			want[k] = &bytes.Buffer{}
		}
		want[k].Write(p)
		d.Data(f, fromA, p)
		clear(p) // the Decoupled must have copied it
	}
	for _, f := range flows {
		d.Close(f)
	}
	d.Shutdown()
	for k, w := range want {
		if g := h.got[k]; g == nil || !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Errorf("flow %d side %d: the bytes differ from those handed (%d handed)", k[0], k[1], w.Len())
		}
	}
	if len(h.gaps) != 0 {
		t.Errorf("gaps %v with room for everything", h.gaps)
	}
}

// TestDecoupledDropsAsGap: a handler behind by more than the limit gets
// the bytes that did not fit as a gap, before the next bytes, and every
// byte is either delivered or counted.
func TestDecoupledDropsAsGap(t *testing.T) {
	h := newRecordHandler()
	h.block = make(chan struct{})
	h.entered = make(chan struct{}, 1)
	const limit = 100 << 10
	d := NewDecoupled(NewSerial(h), limit)
	f := d.NewFlow(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), time.Now())
	p := make([]byte, 1000)
	// The handler takes the first bytes and stays stuck in them, so what
	// follows piles up to the limit and the rest is dropped, however the
	// goroutines are scheduled.
	d.Data(f, true, p)
	total := len(p)
	<-h.entered
	for range 1000 {
		d.Data(f, true, p)
		total += len(p)
	}
	close(h.block)
	for caughtUp := false; !caughtUp; time.Sleep(time.Millisecond) {
		l := d.lanes[0]
		l.mu.Lock()
		caughtUp = len(l.pending.items) == 0
		l.mu.Unlock()
	}
	h.mu.Lock()
	h.mu.Unlock()
	d.Data(f, true, p) // after the handler caught up
	total += len(p)
	d.Close(f)
	d.Shutdown()
	k := h.key(f.Flow(), true)
	got := h.got[k].Len()
	if got+h.gaps[k] != total || int64(h.gaps[k]) != d.Dropped() {
		t.Fatalf("%d delivered + %d in gaps, want %d; Dropped %d", got, h.gaps[k], total, d.Dropped())
	}
	if got > 2*limit+len(p) || h.gaps[k] == 0 {
		t.Fatalf("%d bytes delivered to a handler stuck behind a %d-byte limit", got, limit)
	}
	if last := h.order[len(h.order)-2:]; last[0] != "gap" || last[1] != "data" {
		t.Errorf("the gap is not reported before the next bytes: ... %v", last)
	}
}

// TestDecoupledDataAllocatesNothing: in steady state, handing bytes over
// allocates nothing (the chunks are reused).
func TestDecoupledDataAllocatesNothing(t *testing.T) {
	var h nopHandler
	d := NewDecoupled(NewSerial(h), 0)
	defer d.Shutdown()
	f := d.NewFlow(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), time.Now())
	p := make([]byte, 4096)
	for range 1000 { // warm up: chunks and item slices reach their size
		d.Data(f, true, p)
	}
	time.Sleep(50 * time.Millisecond)
	allocs := testing.AllocsPerRun(2000, func() { d.Data(f, true, p) })
	if allocs > 0.05 {
		t.Errorf("Decoupled.Data: %.2f allocations per call, want none in steady state", allocs)
	}
}

type nopHandler struct{}

func (nopHandler) Data(*Flow, bool, []byte, time.Time) {}
func (nopHandler) Gap(*Flow, bool, int, time.Time)     {}
func (nopHandler) Close(*Flow, time.Time)              {}

func BenchmarkDecoupledData(b *testing.B) {
	d := NewDecoupled(NewSerial(nopHandler{}), 0)
	defer d.Shutdown()
	f := d.NewFlow(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), time.Now())
	p := make([]byte, 4096)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		d.Data(f, true, p)
	}
}
