package store

import (
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// frozenStore is a store of n fake units under a budget of 8 MiB, so that
// nearly all of them are frozen; made once per size for the benchmarks.
var frozenStores sync.Map

func frozenStore(b *testing.B, n int) *Store {
	if s, ok := frozenStores.Load(n); ok {
		return s.(*Store)
	}
	g := fake.New(21)
	s := New()
	s.SetBudget(8 << 20)
	for s.Len() < n {
		s.Append(g.Units(min(4096, n-s.Len())))
	}
	if k, err := s.Spilled(); err != nil || k < n*9/10 {
		b.Fatalf("%d of %d frozen (%v)", k, n, err)
	}
	frozenStores.Store(n, s)
	return s
}

// BenchmarkStatsFrozen measures the statistics view's computation on a
// large store nearly all frozen (WIRETAP_STATS_UNITS units, 2 million by
// default): time, and what it allocates.
func BenchmarkStatsFrozen(b *testing.B) {
	n := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("WIRETAP_STATS_UNITS")); err == nil && v > 0 {
		n = v
	}
	s := frozenStore(b, n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		st := StatsOf(s.Snapshot(), 120)
		if st.Overall.N == 0 || st.Units != s.Len() {
			b.Fatalf("%d units, %d pairs", st.Units, st.Overall.N)
		}
	}
}
