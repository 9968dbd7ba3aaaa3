// Package latency keeps the embedded broker's latency histograms: for each
// queue and exchange, publish-to-deliver and deliver-to-ack, observed on
// the hot path with a few atomic adds and no allocation, read as the
// buckets RabbitMQ's own discussions used (<=1 ms, <=5 ms, <=50 ms,
// <=500 ms, <=1000 ms, >1 s) and as p50 / p99.
package latency

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds of the reported buckets; a last bucket
// takes what is above them.
var Bounds = [...]time.Duration{time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, time.Second}

// BucketNames name the reported buckets, Bounds' and the last.
var BucketNames = [len(Bounds) + 1]string{"<=1ms", "<=5ms", "<=50ms", "<=500ms", "<=1000ms", ">1s"}

// Fine buckets for percentiles: by the power of two of the nanoseconds,
// each cut in subBuckets, so a percentile is known within 1/subBuckets
// of its power of two (about 12%).
const (
	subBits    = 3
	subBuckets = 1 << subBits
	fineLen    = 64 * subBuckets
)

// Histogram counts durations. The zero value is ready; it is safe for
// concurrent use.
type Histogram struct {
	count  atomic.Uint64
	coarse [len(Bounds) + 1]atomic.Uint64
	fine   [fineLen]atomic.Uint64
}

// Observe counts one duration of ns nanoseconds (negative counts as 0).
func (h *Histogram) Observe(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.count.Add(1)
	i := 0
	for i < len(Bounds) && ns > int64(Bounds[i]) {
		i++
	}
	h.coarse[i].Add(1)
	h.fine[fineIndex(uint64(ns))].Add(1)
}

// fineIndex is the fine bucket of v: values below subBuckets have one
// each; above, the power of two and the next subBits bits.
func fineIndex(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	p := bits.Len64(v) - 1 // v >= 2^p
	sub := (v >> (p - subBits)) & (subBuckets - 1)
	return (p-subBits+1)*subBuckets + int(sub)
}

// fineUpper is the largest value of fine bucket i.
func fineUpper(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	p := i/subBuckets + subBits - 1
	sub := uint64(i % subBuckets)
	lo := uint64(1)<<p | sub<<(p-subBits)
	return lo + uint64(1)<<(p-subBits) - 1
}

// Snapshot is a histogram read at one moment.
type Snapshot struct {
	Count   uint64
	Buckets [len(Bounds) + 1]uint64 // as BucketNames
	// P50 and P99 are upper bounds of the fine buckets the percentiles
	// fall in (0 when Count is 0).
	P50, P99 time.Duration
}

// Snapshot reads h. Observations made meanwhile may show in some counts
// and not others.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	for i := range h.coarse {
		s.Buckets[i] = h.coarse[i].Load()
	}
	var fine [fineLen]uint64
	var total uint64
	for i := range h.fine {
		fine[i] = h.fine[i].Load()
		total += fine[i]
	}
	s.Count = total
	if total == 0 {
		return s
	}
	s.P50 = percentile(&fine, total, 50)
	s.P99 = percentile(&fine, total, 99)
	return s
}

func percentile(fine *[fineLen]uint64, total uint64, p uint64) time.Duration {
	rank := (total*p + 99) / 100 // the rank-th smallest, from 1
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, n := range fine {
		seen += n
		if seen >= rank {
			return time.Duration(fineUpper(i))
		}
	}
	return time.Duration(fineUpper(fineLen - 1))
}

// Pair is the two histograms kept for a queue or an exchange.
type Pair struct {
	PublishToDeliver Histogram
	DeliverToAck     Histogram
}

// epoch starts the broker's latency clock.
var epoch = time.Now()

// Now is the latency clock: monotonic nanoseconds since the process
// started, cheap to store in a message.
func Now() int64 { return int64(time.Since(epoch)) }
