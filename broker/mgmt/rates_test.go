package mgmt

import (
	"testing"
	"time"
)

func TestRateUsesTheLastWindow(t *testing.T) {
	var rt rateTable
	t0 := time.Unix(1000, 0)
	out := make([]float64, 1)
	// A counter at 10/s for 10s, then 100/s: with readings every second
	// the rate follows within a window.
	v := uint64(0)
	for s := 0; s <= 10; s++ {
		rt.rates(t0.Add(time.Duration(s)*time.Second), kindQueue, "/", "q", []uint64{v}, 1, out)
		v += 10
	}
	if out[0] != 10 {
		t.Fatalf("steady rate %v, want 10", out[0])
	}
	for s := 11; s <= 13; s++ {
		v += 90
		rt.rates(t0.Add(time.Duration(s)*time.Second), kindQueue, "/", "q", []uint64{v}, 1, out)
	}
	// Base: the reading at 8s (80), the newest at least 5s before 13s;
	// not the oldest kept (5s) nor the last (12s).
	if want := float64(v-80) / 5; out[0] != want || want != 60 {
		t.Errorf("rate %v, want %v", out[0], want)
	}
}

func TestRateIgnoresReadingsTooClose(t *testing.T) {
	var rt rateTable
	t0 := time.Unix(1000, 0)
	out := make([]float64, 1)
	rt.rates(t0, kindConn, "", "c", []uint64{0}, 1, out)
	rt.rates(t0.Add(10*time.Millisecond), kindConn, "", "c", []uint64{1000}, 1, out)
	if out[0] != 0 {
		t.Errorf("rate over 10ms = %v, want 0 (too close to say)", out[0])
	}
	rt.rates(t0.Add(1500*time.Millisecond), kindConn, "", "c", []uint64{1500}, 1, out)
	if out[0] != 1000 {
		t.Errorf("rate = %v, want 1000", out[0])
	}
}

func TestRateKindsAndNamesApart(t *testing.T) {
	var rt rateTable
	t0 := time.Unix(1000, 0)
	out := make([]float64, 1)
	// Same vhost and name, different kinds; and names whose
	// concatenation with the vhost would collide.
	rt.rates(t0, kindQueue, "a", "bc", []uint64{0}, 1, out)
	rt.rates(t0, kindExchange, "a", "bc", []uint64{100}, 1, out)
	rt.rates(t0, kindQueue, "ab", "c", []uint64{1000}, 1, out)
	rt.rates(t0.Add(2*time.Second), kindQueue, "a", "bc", []uint64{10}, 1, out)
	if out[0] != 5 {
		t.Errorf("rate = %v, want 5", out[0])
	}
	if n := rt.len(); n != 3 {
		t.Errorf("%d histories, want 3", n)
	}
}

func TestRateHistoryIsSwept(t *testing.T) {
	var rt rateTable
	t0 := time.Unix(1000, 0)
	out := make([]float64, 1)
	rt.rates(t0, kindQueue, "/", "old", []uint64{1}, 1, out)
	rt.rates(t0.Add(historyTTL/2), kindQueue, "/", "recent", []uint64{1}, 1, out)
	rt.rates(t0.Add(historyTTL+sweepEvery), kindQueue, "/", "new", []uint64{1}, 1, out)
	if n := rt.len(); n != 2 {
		t.Errorf("%d histories after the sweep, want 2 (recent, new)", n)
	}
}

func TestRateClockBackwards(t *testing.T) {
	var rt rateTable
	t0 := time.Unix(1000, 0)
	out := make([]float64, 1)
	rt.rates(t0, kindQueue, "/", "q", []uint64{0}, 1, out)
	rt.rates(t0.Add(-time.Hour), kindQueue, "/", "q", []uint64{100}, 1, out)
	if out[0] != 0 {
		t.Errorf("rate across a clock step back = %v", out[0])
	}
	rt.rates(t0.Add(-time.Hour+2*time.Second), kindQueue, "/", "q", []uint64{120}, 1, out)
	if out[0] != 10 {
		t.Errorf("rate after = %v, want 10", out[0])
	}
}
