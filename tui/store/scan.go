package store

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/decode"
)

// Scan returns, in order, the indices i in [from, len(units)) (or, when
// within is not nil, the entries of within at or past from) whose unit
// satisfies match, and the index where it stopped: len(units), or earlier
// when limit > 0 matches were found (so a first screenful can be shown
// before the rest is scanned). It is meant for a background goroutine: it
// stops with ctx.Err() when ctx is cancelled, and stores how many units it
// has looked at in progress as it goes.
//
// When shallow is set, match reads nothing of a unit but its plain fields
// (decode/filter's Filter.Shallow says which filters do) and is given
// frozen units as shells of their records, their blobs not read (see
// [View.RangeShallow]); it must not keep the units it is given.
func Scan(ctx context.Context, units View, within *Rows, from int32, limit int, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64) ([]int32, int32, error) {
	var out []int32
	var err error
	stop := int32(-1)
	// visit looks at unit i, the n-th looked at (progress counts in n).
	visit := func(n int, i int32, u *decode.Unit) bool {
		const every = 4096
		if n%every == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
			if progress != nil {
				progress.Store(int64(n))
			}
		}
		if match(u) {
			out = append(out, i)
			if len(out) == limit {
				stop = i + 1
				return false
			}
		}
		return true
	}
	switch {
	case within == nil:
		units.rangeFor(shallow)(int(from), units.Len(), func(i int32, u *decode.Unit) bool { return visit(int(i), i, u) })
	case shallow:
		var sh shell
		within.Range(within.Search(from), within.Len(), func(n int, i int32) bool {
			return int(i) < units.Len() && visit(n, i, units.loadShallow(i, &sh))
		})
	default:
		within.Range(within.Search(from), within.Len(), func(n int, i int32) bool {
			return int(i) < units.Len() && visit(n, i, units.Load(i))
		})
	}
	if err != nil {
		return nil, from, err
	}
	if stop >= 0 {
		return out, stop, nil
	}
	return out, int32(units.Len()), nil
}

// rangeFor returns Range, or RangeShallow when shallow is set.
func (v View) rangeFor(shallow bool) func(lo, hi int, fn func(i int32, u *decode.Unit) bool) bool {
	if shallow {
		return v.RangeShallow
	}
	return v.Range
}

// ScanAll is Scan without a limit over units [from, len(units)), split
// across the available processors; progress counts units looked at.
func ScanAll(ctx context.Context, units View, from int32, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64) ([]int32, error) {
	n := units.Len() - int(from)
	workers := min(runtime.GOMAXPROCS(0), max(1, n/(1<<16)))
	if workers <= 1 {
		rows, _, err := Scan(ctx, units, nil, from, 0, match, shallow, progress)
		return rows, err
	}
	parts := make([][]int32, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := range workers {
		lo := int(from) + w*per
		hi := min(lo+per, units.Len())
		wg.Go(func() {
			var out []int32
			units.rangeFor(shallow)(lo, hi, func(i int32, u *decode.Unit) bool {
				if (int(i)-lo)%4096 == 0 && int(i) > lo {
					if err := ctx.Err(); err != nil {
						errs[w] = err
						return false
					}
					if progress != nil {
						progress.Add(4096)
					}
				}
				if match(u) {
					out = append(out, i)
				}
				return true
			})
			parts[w] = out
		})
	}
	wg.Wait()
	total := 0
	for w := range workers {
		if errs[w] != nil {
			return nil, errs[w]
		}
		total += len(parts[w])
	}
	rows := make([]int32, 0, total)
	for _, p := range parts {
		rows = append(rows, p...)
	}
	return rows, nil
}

// Find returns the first position p in rows, starting at start and moving
// by step (+1 or -1) with wrap-around, whose unit satisfies match, or -1.
// It honours ctx like Scan.
func Find(ctx context.Context, units View, rows Seq, start, step int, match func(*decode.Unit) bool) (int, error) {
	n := rows.Len()
	if n == 0 {
		return -1, nil
	}
	p := start
	for k := 0; k < n; k++ {
		p = ((p+step)%n + n) % n
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return -1, err
			}
		}
		if ix := rows.At(p); int(ix) < units.Len() && match(units.Load(ix)) {
			return p, nil
		}
	}
	return -1, nil
}
