package capture

import (
	"bytes"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// TestPacerJudge: windows in which work waited for a CPU more than a
// tenth of the time double the sleep per unit of work, up to 49 (2% of the
// time at work); windows without shrink it to none.
func TestPacerJudge(t *testing.T) {
	p := &pacer{}
	const worked = 5 * time.Millisecond
	var ratios []float64
	for range 8 { // work waited 3 ms in 5: contended
		p.judge(3*time.Millisecond, worked)
		ratios = append(ratios, p.ratio)
	}
	want := []float64{1, 2, 4, 8, 16, 32, 49, 49}
	for i := range want {
		if ratios[i] != want[i] {
			t.Fatalf("ratios while contended %v, want %v", ratios, want)
		}
	}
	if d := p.judge(3*time.Millisecond, worked); d != 49*worked {
		t.Errorf("sleep after a contended window %v, want %v", d, 49*worked)
	}
	// Waiting a little (under a tenth) is running on spare CPU.
	n := 0
	for p.ratio > 0 {
		p.judge(400*time.Microsecond, worked)
		if n++; n > 100 {
			t.Fatalf("the ratio never came back to 0 (%v)", p.ratio)
		}
	}
	if d := p.judge(0, worked); d != 0 || p.ratio != 0 {
		t.Errorf("on an idle machine: sleep %v, ratio %v", d, p.ratio)
	}
}

// TestPacerCheck: the pacer looks at the clock once a window has lasted
// paceWindow, sleeps what judge says and begins a window after the sleep,
// so the sleep is not counted as work.
func TestPacerCheck(t *testing.T) {
	var stalled time.Duration
	var slept []time.Duration
	p := &pacer{
		stall: func() (time.Duration, bool) { return stalled, true },
		sleep: func(d time.Duration) { slept = append(slept, d) },
	}
	t0 := time.Now()
	p.begin(t0)
	stalled = 3 * time.Millisecond
	p.check(t0.Add(paceWindow / 2)) // the window is not over: no look
	if len(slept) != 0 || p.stalled != 0 {
		t.Fatalf("checked before the window ended: slept %v", slept)
	}
	before := time.Now()
	p.check(t0.Add(paceWindow))
	if len(slept) != 1 || slept[0] != paceWindow {
		t.Fatalf("after a contended window slept %v, want [%v]", slept, paceWindow)
	}
	if p.stalled != stalled || p.start.Before(before) {
		t.Fatalf("the next window does not start from the clock after the sleep: %+v", p)
	}
	// An uncontended window: the ratio shrinks, no sleep below a tenth.
	p.check(p.start.Add(paceWindow))
	if len(slept) != 2 || slept[1] != 3*paceWindow/4 {
		t.Fatalf("after a quiet window slept %v, want [.. %v]", slept, 3*paceWindow/4)
	}
}

// TestPacerClocks: on Linux a pacer has a clock, and the clock does not go
// back; off Linux there is none.
func TestPacerClocks(t *testing.T) {
	p := newPacer()
	if runtime.GOOS != "linux" {
		if p != nil {
			t.Fatal("a pacer off Linux")
		}
		return
	}
	if p == nil {
		t.Fatal("no pacer on Linux: neither /proc/pressure/cpu nor /proc/thread-self/schedstat is readable")
	}
	defer p.close()
	a, ok1 := p.stall()
	b, ok2 := p.stall()
	if !ok1 || !ok2 || b < a {
		t.Fatalf("stall clock read %v (%v) then %v (%v)", a, ok1, b, ok2)
	}
	// The thread's clock, the fallback, also reads.
	lockThread()
	defer unlockThread()
	stall, closeStall := openThreadClock()
	if stall == nil {
		t.Fatal("no /proc/thread-self/schedstat")
	}
	defer closeStall()
	if _, ok := stall(); !ok {
		t.Fatal("/proc/thread-self/schedstat unreadable")
	}
}

// TestDecoupledPacedKeepsOrder: a paced decoder with coalesced wake-ups,
// handed bytes a few at a time with pauses (so that it goes idle and is
// woken again), gets every byte in order.
func TestDecoupledPacedKeepsOrder(t *testing.T) {
	h := newRecordHandler()
	d := NewDecoupled(NewSerial(h), 1<<30, PaceDecoder(), CoalesceWakeups(time.Millisecond))
	f := d.NewFlow(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), time.Now())
	var want bytes.Buffer
	for i := range 300 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i%50)
		want.Write(p)
		d.Data(f, true, p)
		if i%50 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	d.Close(f)
	d.Shutdown()
	if got := h.got[h.key(f.Flow(), true)]; got == nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the paced decoder got other bytes than were handed (%d handed)", want.Len())
	}
	if d.Handed() != int64(want.Len()) || d.Dropped() != 0 {
		t.Errorf("Handed %d, Dropped %d; want %d, 0", d.Handed(), d.Dropped(), want.Len())
	}
}
