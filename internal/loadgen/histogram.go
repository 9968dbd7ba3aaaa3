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
	ranges [len(RangeBounds) + 1]uint64 // exact counts per latency range
	total  uint64
}

// RangeBounds are the upper bounds (inclusive) of the latency ranges every
// report counts, those RabbitMQ's one-queue fast path was judged by: <=1 ms,
// <=5 ms, <=50 ms, <=500 ms, <=1000 ms; a last range holds what is over 1 s.
var RangeBounds = [...]time.Duration{time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond,
	500 * time.Millisecond, time.Second}

// rangeNames name the ranges in JSON and text, RangeBounds' then the last.
var rangeNames = [len(RangeBounds) + 1]string{"le_1ms", "le_5ms", "le_50ms", "le_500ms", "le_1000ms", "gt_1s"}

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
	h.ranges[rangeOf(us)]++
	h.total++
}

// rangeOf is the index of the range of RangeBounds us falls in.
func rangeOf(us int64) int {
	switch {
	case us <= 1000:
		return 0
	case us <= 5000:
		return 1
	case us <= 50000:
		return 2
	case us <= 500000:
		return 3
	case us <= 1000000:
		return 4
	}
	return 5
}

func (h *histogram) add(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	for i, c := range o.ranges {
		h.ranges[i] += c
	}
	h.total += o.total
}

func (h *histogram) reset() { *h = histogram{} }

// Percentiles are latency percentiles over a set of messages, to the
// microsecond (nearest rank, under 0.2% error), and how many messages fell
// in each range of [RangeBounds] (exact). In JSON the percentiles are
// integers of microseconds and the ranges an object of counts.
type Percentiles struct {
	Min, Median, P75, P95, P99, Max time.Duration
	Count                           uint64
	// Ranges counts messages per range: Ranges[i] those over
	// RangeBounds[i-1] and up to RangeBounds[i]; the last, those over 1 s.
	Ranges [len(RangeBounds) + 1]uint64
}

// MarshalJSON writes the percentiles in microseconds, as PerfTest reports them.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128)
	for i, kv := range [...]struct {
		k string
		v int64
	}{{"min_us", p.Min.Microseconds()}, {"median_us", p.Median.Microseconds()}, {"p50_us", p.Median.Microseconds()},
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
	b = append(b, `,"ranges":{`...)
	for i, n := range p.Ranges {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, rangeNames[i]...)
		b = append(b, '"', ':')
		b = strconv.AppendUint(b, n, 10)
	}
	return append(b, '}', '}'), nil
}

// percentiles returns the nearest-rank percentiles (lower bucket bounds).
func (h *histogram) percentiles() Percentiles {
	p := Percentiles{Count: h.total, Ranges: h.ranges}
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
