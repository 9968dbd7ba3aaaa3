package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestFineBucketsCoverEveryValue(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 7, 8, 9, 15, 16, 17, 1000, 1 << 20, 1<<20 + 1, 1<<40 - 1, 1 << 62, 1<<63 - 1} {
		i := fineIndex(v)
		if i < prev || i >= fineLen {
			t.Fatalf("value %d: bucket %d after %d", v, i, prev)
		}
		prev = i
		if up := fineUpper(i); up < v {
			t.Fatalf("value %d in bucket %d whose upper bound is %d", v, i, up)
		}
		if i > 0 && fineUpper(i-1) >= v {
			t.Fatalf("value %d in bucket %d but bucket %d goes to %d", v, i, i-1, fineUpper(i-1))
		}
	}
}

func TestBucketsAndPercentiles(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(1, 2))
	var all []int64
	for range 100000 {
		// Log-uniform from 1 µs to 2 s: every bucket gets some.
		ns := int64(1000 * math.Exp2(r.Float64()*21))
		all = append(all, ns)
		h.Observe(ns)
	}
	s := h.Snapshot()
	var want [len(Bounds) + 1]uint64
	for _, ns := range all {
		i := 0
		for i < len(Bounds) && ns > int64(Bounds[i]) {
			i++
		}
		want[i]++
	}
	if s.Buckets != want || s.Count != uint64(len(all)) {
		t.Fatalf("buckets %v count %d, want %v %d", s.Buckets, s.Count, want, len(all))
	}
	slices.Sort(all)
	for _, c := range []struct {
		got time.Duration
		p   int
	}{{s.P50, 50}, {s.P99, 99}} {
		exact := time.Duration(all[len(all)*c.p/100-1])
		// Within one fine bucket above: at most 1/8 more.
		if c.got < exact || c.got > exact+exact/8+1 {
			t.Errorf("p%d %v, exact %v", c.p, c.got, exact)
		}
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Observe(Now() % 1e9) }); n != 0 {
		t.Fatalf("%v allocations per observation", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for b.Loop() {
		h.Observe(1234567)
	}
}
