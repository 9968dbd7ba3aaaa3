package store

import (
	"slices"

	"github.com/wiretap-dev/wiretap/decode"
	"sort"
	"time"
)

// LatencyBounds are the upper bounds of the latency histogram's buckets;
// a last bucket holds everything slower. They are the buckets RabbitMQ
// users compare delivery latency with.
var LatencyBounds = [...]time.Duration{time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, time.Second}

// Latency summarises request/answer delays.
type Latency struct {
	N             int
	Buckets       [len(LatencyBounds) + 1]int
	P50, P90, P99 time.Duration
	Max           time.Duration
}

// TypeCount is the number and bytes of units of one type.
type TypeCount struct {
	Proto string
	Type  string
	Units int
	Bytes int64
}

// Stats is what the statistics view shows.
type Stats struct {
	Units int
	Bytes int64
	Span  time.Duration
	Types []TypeCount // most frequent first
	// Rate counts units per interval of RateStep from the first unit.
	Rate     []int
	RateStep time.Duration
	Overall  Latency
	PerConn  []Latency // indexed like Conns
}

// StatsOf computes the statistics of units (a Snapshot) with a store of
// its own, so that a background goroutine can do it while the UI's store
// grows. That store has a budget of its own, statsBudget, and freezes
// what is past it as the UI's store does.
func StatsOf(units View, buckets int) Stats {
	s := New()
	s.SetBudget(statsBudget)
	defer s.Close()
	batch := make([]*decode.Unit, 0, rangeBlock)
	for lo := 0; lo < units.Len(); lo += rangeBlock {
		batch = batch[:0]
		units.Range(lo, min(lo+rangeBlock, units.Len()), func(_ int32, u *decode.Unit) bool {
			batch = append(batch, u)
			return true
		})
		s.Append(batch)
	}
	return s.Stats(buckets)
}

// statsBudget bounds the store StatsOf builds.
const statsBudget = 64 << 20

// Stats computes statistics over every unit; buckets is the number of
// rate intervals wanted (the chart's width).
func (s *Store) Stats(buckets int) Stats {
	var st Stats
	if buckets < 1 {
		buckets = 1
	}
	st.Units = s.n
	if s.n == 0 {
		return st
	}
	type key struct {
		proto decode.Proto
		typ   string
	}
	types := map[key]*TypeCount{}
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
		k := key{u.proto, u.typ}
		tc := types[k]
		if tc == nil {
			tc = &TypeCount{Proto: k.proto.String(), Type: k.typ}
			types[k] = tc
		}
		tc.Units++
		tc.Bytes += int64(u.length)
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
		b := int(s.head(i).time().Sub(first) / st.RateStep)
		if b >= 0 && b < buckets {
			st.Rate[b]++
		}
	}

	s.PairAll()
	per := make([][]time.Duration, len(s.conns))
	var all []time.Duration
	s.Pairs(func(req, ans int32) {
		rq := s.head(req)
		d := s.head(ans).time().Sub(rq.time())
		if d < 0 {
			d = 0
		}
		all = append(all, d)
		if rq.conn >= 0 {
			per[rq.conn] = append(per[rq.conn], d)
		}
	})
	st.Overall = Summarise(all)
	st.PerConn = make([]Latency, len(s.conns))
	for i, ds := range per {
		st.PerConn[i] = Summarise(ds)
	}
	return st
}

// Summarise builds a latency histogram and percentiles; it sorts ds.
func Summarise(ds []time.Duration) Latency {
	var l Latency
	l.N = len(ds)
	if l.N == 0 {
		return l
	}
	slices.Sort(ds)
	for _, d := range ds {
		b := len(LatencyBounds)
		for i, bound := range LatencyBounds {
			if d <= bound {
				b = i
				break
			}
		}
		l.Buckets[b]++
	}
	// Nearest-rank percentiles.
	pct := func(p int) time.Duration {
		r := (p*l.N + 99) / 100
		if r < 1 {
			r = 1
		}
		return ds[r-1]
	}
	l.P50, l.P90, l.P99 = pct(50), pct(90), pct(99)
	l.Max = ds[l.N-1]
	return l
}
