package loadgen

import (
	"math/bits"
	"strconv"
	"time"
)

// histogram counts durations in microseconds in log-linear buckets: exact
// below 1024 µs, then 512 buckets per power of two (an error under 0.2%).
// It is a fixed array, so recording allocates nothing.
type histogram struct {
	counts [histBuckets]uint64
	total  uint64
}

const (
	histExact   = 1024
	histHalf    = histExact / 2
	histBuckets = 55*histHalf + histExact
)

func bucketOf(us uint64) int {
	if us < histExact {
		return int(us)
	}
	shift := bits.Len64(us) - 10
	return shift*histHalf + int(us>>shift)
}

// lowerBound is the smallest value that falls in bucket i.
func lowerBound(i int) uint64 {
	if i < histExact {
		return uint64(i)
	}
	shift := (i - histHalf) / histHalf
	return uint64(i-shift*histHalf) << shift
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0 // a clock step backwards; count it as no latency
	}
	h.counts[bucketOf(uint64(us))]++
	h.total++
}

func (h *histogram) add(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
}

func (h *histogram) reset() { *h = histogram{} }

// Percentiles are latency percentiles over a set of messages, to the
// microsecond. In JSON they are integers of microseconds.
type Percentiles struct {
	Min, Median, P75, P95, P99, Max time.Duration
	Count                           uint64
}

// MarshalJSON writes the percentiles in microseconds, as PerfTest reports them.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128)
	for i, kv := range [...]struct {
		k string
		v int64
	}{{"min_us", p.Min.Microseconds()}, {"median_us", p.Median.Microseconds()},
		{"p75_us", p.P75.Microseconds()}, {"p95_us", p.P95.Microseconds()},
		{"p99_us", p.P99.Microseconds()}, {"max_us", p.Max.Microseconds()}, {"count", int64(p.Count)}} {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, kv.k...)
		b = append(b, '"', ':')
		b = strconv.AppendInt(b, kv.v, 10)
	}
	return append(b, '}'), nil
}

// percentiles returns the nearest-rank percentiles (lower bucket bounds).
func (h *histogram) percentiles() Percentiles {
	p := Percentiles{Count: h.total}
	if h.total == 0 {
		return p
	}
	ranks := [...]float64{0, 0.50, 0.75, 0.95, 0.99, 1}
	out := [...]*time.Duration{&p.Min, &p.Median, &p.P75, &p.P95, &p.P99, &p.Max}
	var seen uint64
	r := 0
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		for r < len(ranks) && float64(seen) >= rank(ranks[r], h.total) {
			*out[r] = time.Duration(lowerBound(i)) * time.Microsecond
			r++
		}
		if r == len(ranks) {
			break
		}
	}
	return p
}

// rank is the 1-based nearest rank of quantile q among n values.
func rank(q float64, n uint64) float64 {
	k := q * float64(n)
	if k < 1 {
		return 1
	}
	if k != float64(uint64(k)) {
		k = float64(uint64(k) + 1)
	}
	return k
}
