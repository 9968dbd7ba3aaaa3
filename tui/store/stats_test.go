package store

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// statsByStore is how StatsOf computed the statistics before it streamed
// them: the units appended into a store of its own, every unit's head
// read twice, the store's own pairing, every delay kept and sorted.
func statsByStore(units View, buckets int) Stats {
	s := New()
	defer s.Close()
	var batch []*decode.Unit
	units.Range(0, units.Len(), func(_ int32, u *decode.Unit) bool { batch = append(batch, u); return true })
	s.Append(batch)
	var st Stats
	st.Units = s.n
	if s.n == 0 {
		return st
	}
	buckets = max(buckets, 1)
	types := map[typeKey]*TypeCount{}
	first, last := s.head(0).time(), s.head(0).time()
	for i := range int32(s.n) {
		u := s.head(i)
		st.Bytes += int64(u.length)
		t := u.time()
		if t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
		k := typeKey{u.proto, u.typ}
		if types[k] == nil {
			types[k] = &TypeCount{Proto: k.proto.String(), Type: k.typ}
		}
		types[k].Units++
		types[k].Bytes += int64(u.length)
	}
	for _, tc := range types {
		st.Types = append(st.Types, *tc)
	}
	sort.Slice(st.Types, func(i, j int) bool {
		a, b := st.Types[i], st.Types[j]
		if a.Units != b.Units {
			return a.Units > b.Units
		}
		return a.Proto+a.Type < b.Proto+b.Type
	})
	st.Span = last.Sub(first)
	st.RateStep = st.Span/time.Duration(buckets) + 1
	st.Rate = make([]int, buckets)
	for i := range int32(s.n) {
		if b := int(s.head(i).time().Sub(first) / st.RateStep); b >= 0 && b < buckets {
			st.Rate[b]++
		}
	}
	s.PairAll()
	per := make([][]time.Duration, len(s.conns))
	var all []time.Duration
	s.Pairs(func(req, ans int32) {
		rq := s.head(req)
		d := max(s.head(ans).time().Sub(rq.time()), 0)
		all = append(all, d)
		per[rq.conn] = append(per[rq.conn], d)
	})
	st.Overall = Summarise(all)
	st.PerConn = make([]Latency, len(s.conns))
	for i, ds := range per {
		st.PerConn[i] = Summarise(ds)
	}
	return st
}

func sameStats(t *testing.T, what string, got, want Stats) {
	t.Helper()
	if got.Units != want.Units || got.Bytes != want.Bytes || got.Span != want.Span || got.RateStep != want.RateStep ||
		!slices.Equal(got.Types, want.Types) || !slices.Equal(got.Rate, want.Rate) ||
		got.Overall != want.Overall || !slices.Equal(got.PerConn, want.PerConn) {
		t.Fatalf("%s: stats\n%+v\nwant\n%+v", what, got, want)
	}
}

// TestStatsOfCaptures: on every shipped capture, resident and with every
// unit frozen, the statistics are those of the store StatsOf used to
// build, pairs and exact percentiles included.
func TestStatsOfCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.pcap*"))
	if len(files) == 0 {
		t.Fatal("no captures")
	}
	pairs := 0
	for _, path := range files {
		units := decodeFile(t, path)
		want := statsByStore(ViewOf(units), 80)
		pairs += want.Overall.N
		sameStats(t, path+" (units of no store)", StatsOf(ViewOf(units), 80), want)
		for _, budget := range []int64{0, 1} {
			s := New()
			s.SetBudget(budget)
			for i := 0; i < len(units); i += 50 {
				s.Append(units[i:min(i+50, len(units))])
			}
			if k, _ := s.Spilled(); budget == 1 && k != len(units) {
				t.Fatalf("%s: %d of %d frozen", path, k, len(units))
			}
			sameStats(t, path, StatsOf(s.Snapshot(), 80), want)
			// A snapshot taken earlier is what it was.
			if h := len(units) / 2; h > 0 {
				sameStats(t, path+" (half)", StatsOf(s.Snapshot().Head(h), 80), statsByStore(ViewOf(units[:h]), 80))
			}
			s.Close()
		}
	}
	if pairs == 0 {
		t.Fatal("nothing paired")
	}
}

// TestStatsOfFrozenFake: the same on many fake units, most of them frozen
// (the pairing reads the fields of frozen acks, transfers and
// dispositions), past ExactLatencies pairs: all but the percentiles are
// exact, and those are within LatencyError.
func TestStatsOfFrozenFake(t *testing.T) {
	s, units := budgeted(t, 200_000, 1<<20)
	if k, _ := s.Spilled(); k < len(units)*3/4 {
		t.Fatalf("%d of %d frozen", k, len(units))
	}
	got, want := StatsOf(s.Snapshot(), 120), statsByStore(ViewOf(units), 120)
	if want.Overall.N <= ExactLatencies || !got.Overall.Approx {
		t.Fatalf("%d pairs, approximated %v: want more than %d", want.Overall.N, got.Overall.Approx, ExactLatencies)
	}
	near := func(what string, g, w Latency) {
		for _, p := range [][2]time.Duration{{g.P50, w.P50}, {g.P90, w.P90}, {g.P99, w.P99}} {
			if diff := (p[0] - p[1]).Abs(); float64(diff) > LatencyError*float64(p[1]) {
				t.Fatalf("%s: percentile %v, exact %v", what, p[0], p[1])
			}
		}
		g.P50, g.P90, g.P99, g.Approx = w.P50, w.P90, w.P99, false
		if g != w {
			t.Fatalf("%s: %+v, want %+v", what, g, w)
		}
	}
	near("overall", got.Overall, want.Overall)
	for i := range want.PerConn {
		near("conn", got.PerConn[i], want.PerConn[i])
	}
	got.Overall, want.Overall, got.PerConn, want.PerConn = Latency{}, Latency{}, nil, nil
	sameStats(t, "fake", got, want)
}

// TestLatencyHistogram: past the delays kept exactly, percentiles of
// delays spread over nanoseconds to minutes are within LatencyError, and
// what is counted exactly stays exact.
func TestLatencyHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{10, ExactLatencies, ExactLatencies + 1, 300_000} {
		var a latAcc
		pool := 0
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = time.Duration(r.ExpFloat64() * float64(time.Duration(1)<<r.IntN(36)))
			a.add(ds[i], &pool)
		}
		got, want := a.latency(), Summarise(ds)
		if got.Approx != (n > ExactLatencies) {
			t.Fatalf("%d delays: approximated %v", n, got.Approx)
		}
		for _, p := range [][2]time.Duration{{got.P50, want.P50}, {got.P90, want.P90}, {got.P99, want.P99}} {
			if diff := (p[0] - p[1]).Abs(); float64(diff) > LatencyError*float64(p[1]) {
				t.Fatalf("%d delays: percentile %v, exact %v (error %.4f)", n, p[0], p[1], float64(diff)/float64(p[1]))
			}
		}
		got.P50, got.P90, got.P99, got.Approx = want.P50, want.P90, want.P99, false
		if got != want {
			t.Fatalf("%d delays: %+v, want %+v", n, got, want)
		}
	}
	// The pool bounds what all a computation's Latencies hold exactly.
	var a, b latAcc
	pool := exactPool - 10
	for i := range 20 {
		a.add(time.Duration(i), &pool)
	}
	b.add(1, &pool)
	if a.hist == nil || b.hist != nil || pool != exactPool-10+1 {
		t.Fatalf("pool %d, a approximated %v, b %v", pool, a.hist != nil, b.hist != nil)
	}
}

// TestStatsWhileAppending: statistics over a snapshot, computed while the
// UI goroutine appends and freezes, are those of the snapshot (with
// -race, this checks the locking too).
func TestStatsWhileAppending(t *testing.T) {
	units := fake.Generate(60_000, 5)
	s := New()
	s.SetBudget(1 << 20)
	defer s.Close()
	s.Append(units[:20_000])
	v := s.Snapshot()
	want := statsByStore(ViewOf(units[:20_000]), 60)
	done := make(chan Stats)
	go func() { done <- StatsOf(v, 60) }()
	for i := 20_000; i < len(units); i += 100 {
		s.Append(units[i:min(i+100, len(units))])
	}
	sameStats(t, "snapshot", <-done, want)
}
