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
	visitUnits(units, within, from, shallow, visit)
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
// across the available processors; progress counts units looked at. It
// returns every match at once: [ScanPages] hands them over as they come.
func ScanAll(ctx context.Context, units View, from int32, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64) ([]int32, error) {
	rows := []int32{}
	err := ScanPages(ctx, units, nil, from, match, shallow, progress, listPage, func(page []int32) bool {
		rows = append(rows, page...)
		return true
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// scanBlock is how many units a processor of ScanPages scans at a time.
const scanBlock = 1 << 16

// ScanPages is Scan without a limit (over units [from, len(units)), or the
// entries of within at or past from) handing its matches, in order, to
// emit as pages fill: the first of first entries (ListPage when first is
// not in (0, ListPage]), the others of ListPage, the last what is left.
// Without within, the units are split in blocks across the available
// processors. What it holds, whatever the number of matches, is a few
// blocks of matches per processor and the page being filled: a page given
// to emit is emit's (a [List] takes it as it is). emit runs on the
// caller's goroutine and may hold the scan up; it returns false to stop
// it. It stops with ctx.Err() when ctx is cancelled, and stores how many
// units it has looked at in progress as it goes.
func ScanPages(ctx context.Context, units View, within *Rows, from int32, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64, first int, emit func(page []int32) bool) error {
	if first <= 0 || first > listPage {
		first = listPage
	}
	pg := pager{size: first, emit: emit}
	n := units.Len() - int(from)
	workers := min(runtime.GOMAXPROCS(0), max(1, n/scanBlock))
	var err error
	if within != nil || workers <= 1 {
		err = scanSeq(ctx, units, within, from, match, shallow, progress, pg.add)
	} else {
		err = scanBlocks(ctx, units, from, workers, match, shallow, progress, pg.add)
	}
	if err != nil {
		return err
	}
	if !pg.stopped {
		pg.flush()
	}
	return nil
}

// pager fills pages of matches for ScanPages's emit.
type pager struct {
	size    int
	page    []int32
	emit    func([]int32) bool
	stopped bool
}

// add appends ix, emitting the page once full; it reports false once
// emit has.
func (p *pager) add(ix int32) bool {
	if p.page == nil {
		p.page = make([]int32, 0, p.size)
	}
	p.page = append(p.page, ix)
	if len(p.page) == p.size {
		return p.flush()
	}
	return true
}

func (p *pager) flush() bool {
	if len(p.page) > 0 {
		page := p.page
		p.page, p.size = nil, listPage
		if !p.emit(page) {
			p.stopped = true
		}
	}
	return !p.stopped
}

// scanSeq calls add, on the caller's goroutine, with the matches of units
// [from, len(units)) (or of within's entries at or past from) in order,
// until add returns false.
func scanSeq(ctx context.Context, units View, within *Rows, from int32, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64, add func(int32) bool) error {
	var err error
	visit := func(n int, i int32, u *decode.Unit) bool {
		if n%4096 == 0 {
			if err = ctx.Err(); err != nil {
				return false
			}
			if progress != nil {
				progress.Store(int64(n))
			}
		}
		return !match(u) || add(i)
	}
	visitUnits(units, within, from, shallow, visit)
	return err
}

// scanBlocks is scanSeq without within across workers: worker w scans
// blocks w, w+workers, ... of scanBlock units, and the caller's goroutine
// takes their matches block by block, in order. A worker runs at most
// scanAhead blocks ahead of the caller.
func scanBlocks(ctx context.Context, units View, from int32, workers int, match func(*decode.Unit) bool, shallow bool, progress *atomic.Int64, add func(int32) bool) error {
	const scanAhead = 2
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lo, hi := int(from), units.Len()
	blocks := (hi - lo + scanBlock - 1) / scanBlock
	done := make([]chan []int32, workers) // a worker's blocks' matches, in order
	free := make([]chan []int32, workers) // buffers given back to a worker
	var wg sync.WaitGroup
	defer wg.Wait()
	for w := range workers {
		done[w], free[w] = make(chan []int32, scanAhead), make(chan []int32, scanAhead+1)
		for range scanAhead + 1 {
			free[w] <- nil
		}
		wg.Go(func() {
			for b := w; b < blocks; b += workers {
				var out []int32
				select {
				case out = <-free[w]:
				case <-ctx.Done():
					return
				}
				out = out[:0]
				bl, bh := lo+b*scanBlock, min(lo+(b+1)*scanBlock, hi)
				units.rangeFor(shallow)(bl, bh, func(i int32, u *decode.Unit) bool {
					if k := int(i) - bl; k%4096 == 0 && k > 0 {
						if ctx.Err() != nil {
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
				select {
				case done[w] <- out:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	for b := range blocks {
		var out []int32
		select {
		case out = <-done[b%workers]:
		case <-ctx.Done():
			return ctx.Err()
		}
		for _, ix := range out {
			if !add(ix) {
				return nil
			}
		}
		free[b%workers] <- out
	}
	return ctx.Err()
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

// visitUnits calls visit, in order, for units [from, len(units)), or for
// within's entries at or past from, with the position n each has in what
// is looked at, until visit returns false. Shallow gives frozen units as
// shells of their records (see [View.RangeShallow]).
func visitUnits(units View, within *Rows, from int32, shallow bool, visit func(n int, i int32, u *decode.Unit) bool) {
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
}
