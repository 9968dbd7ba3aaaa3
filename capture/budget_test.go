package capture_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// budgeted is a recorder decoding under a budget: on flow 2's bytes it
// charges holds of its own, as a decoder would, and it logs warnings.
type budgeted struct {
	*recorder
	b      *decode.Budget
	holds  []*decode.Hold
	inData bool
	nested int // calls made while inside Data
}

type nopHolder struct{}

func (nopHolder) Evict(*decode.Hold, string) {}

func (h *budgeted) Budget() *decode.Budget { return h.b }

func (h *budgeted) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	if h.inData {
		h.nested++
	}
	h.inData = true
	defer func() { h.inData = false }()
	h.recorder.Data(f, fromA, data, t)
	if f.ID != 2 {
		return
	}
	for _, n := range []int64{30 << 10, 30 << 10, 30 << 10, 30 << 10, 1 << 10} {
		hold := new(decode.Hold)
		hold.Grow(h.b.NewAccount(), nopHolder{}, n)
		h.holds = append(h.holds, hold)
	}
}

func (h *budgeted) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	if h.inData {
		h.nested++
	}
	h.recorder.Gap(f, fromA, n, t)
}

func (h *budgeted) Warning(f *capture.Flow, fromA bool, summary, msg string, t time.Time) {
	if h.inData {
		h.nested++
	}
	fmt.Fprintf(&h.log, "warning %d %v %s: %s\n", f.ID, fromA, summary, msg)
}

// TestBudgetEvictsReassemblyQueue: a decoder's charge (inside Data of
// another flow) evicts a flow's out-of-order segments; the flow is told,
// and the bytes up to the end of those segments are reported lost, only
// once Data has returned, never from inside it.
func TestBudgetEvictsReassemblyQueue(t *testing.T) {
	b := decode.NewBudget(128 << 10) // share 32 KiB
	h := &budgeted{recorder: newRecorder(), b: b}
	a := capture.NewAssembler(h, nil, nil)
	t0 := time.Unix(1700000000, 0)
	c1, c2 := "10.0.0.1:40001", "10.0.0.1:40002"
	for i, s := range []tcp{
		{src: c1, dst: srv, seq: 100, flags: syn},
		{src: c1, dst: srv, seq: 111, flags: ack, payload: strings.Repeat("x", 8000)}, // after a 10-byte hole
		{src: c2, dst: srv, seq: 500, flags: syn},
		{src: c2, dst: srv, seq: 501, flags: ack, payload: "hello"},
		{src: c1, dst: srv, seq: 8111, flags: ack, payload: "later"},
	} {
		ip := s.ip(0)
		a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Time: t0.Add(time.Duration(i) * time.Millisecond), Data: ip, Length: len(ip)})
		if i == 1 && b.Used() < 8000 {
			t.Fatalf("the held segment charged %d", b.Used())
		}
	}
	a.Flush()
	if h.nested != 0 {
		t.Errorf("%d calls made from inside Data", h.nested)
	}
	log := h.log.String()
	want := `data 2 true "hello"
warning 1 true memory budget: out-of-order segments dropped: capture: connection 1 from 10.0.0.1:40001: 8000 bytes of out-of-order segments waiting for the bytes at sequence 101 dropped: the memory budget (--max-memory 128KiB) was reached: 8072 bytes freed, the oldest partial state going first; the 8010 bytes up to sequence 8111 are reported lost
gap 1 true 8010
data 1 true "later"
`
	if !strings.Contains(log, want) {
		t.Errorf("log:\n%s\nwant in it:\n%s", log, want)
	}
	st := a.Stats()
	if st.BudgetDrops != 1 || b.EvictionsByKind() != (decode.EvictionCounts{Partials: 1}) || b.High() > b.Limit() {
		t.Errorf("%d budget drops, evictions %+v, high-water %d", st.BudgetDrops, b.EvictionsByKind(), b.High())
	}
	for _, hold := range h.holds {
		hold.Release()
	}
	if b.Used() != 0 {
		t.Errorf("%d bytes left charged after Flush", b.Used())
	}
}

// TestBudgetRefusesSegment: a connection past its share has its segment
// refused: one warning, the hole before its oldest held segment is lost,
// and every byte after it still arrives.
func TestBudgetRefusesSegment(t *testing.T) {
	b := decode.NewBudget(16 << 10) // share 8 KiB
	h := &budgeted{recorder: newRecorder(), b: b}
	segs := []tcp{{src: cli, dst: srv, seq: 0, flags: syn}}
	seq := uint32(1)
	for i := 0; i < 8; i++ {
		seq += 10 // a hole before each
		segs = append(segs, tcp{src: cli, dst: srv, seq: seq, flags: ack, payload: strings.Repeat(string(rune('a'+i)), 1000)})
		seq += 1000
	}
	a := capture.NewAssembler(h, nil, nil)
	t0 := time.Unix(1700000000, 0)
	for i, s := range segs {
		ip := s.ip(0)
		a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Time: t0.Add(time.Duration(i) * time.Millisecond), Data: ip, Length: len(ip)})
	}
	a.Flush()
	// Each held segment costs a 2 KiB buffer: three fit in 8 KiB.
	log := h.log.String()
	if n := strings.Count(log, "warning 1 true memory budget: out-of-order segment not held"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, log)
	}
	if got := h.stream[1][0].Len(); got != 8000 {
		t.Errorf("%d bytes delivered, want all 8000", got)
	}
	if st := a.Stats(); st.BudgetDrops != 5 || b.Refusals() != 5 || st.Gaps != 8 || b.Used() != 0 {
		t.Errorf("%d budget drops, %d refusals (want 5 each), %d gaps (want 8), %d left charged", st.BudgetDrops, b.Refusals(), st.Gaps, b.Used())
	}
}
