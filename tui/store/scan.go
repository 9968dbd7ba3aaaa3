package store

import (
	"context"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/decode"
)

// Scan returns, in order, the indices i in [from, len(units)) (or, when
// within is not nil, the members of within at or past from) whose unit
// satisfies match, and the index where it stopped: len(units), or earlier
// when limit > 0 matches were found (so a first screenful can be shown
// before the rest is scanned). It is meant for a background goroutine: it
// stops with ctx.Err() when ctx is cancelled, and stores how many units it
// has looked at in progress as it goes.
func Scan(ctx context.Context, units []*decode.Unit, within []int32, from int32, limit int, match func(*decode.Unit) bool, progress *atomic.Int64) ([]int32, int32, error) {
	var out []int32
	const every = 4096
	if within == nil {
		for i := int(from); i < len(units); i++ {
			if i%every == 0 {
				if err := ctx.Err(); err != nil {
					return nil, from, err
				}
				if progress != nil {
					progress.Store(int64(i))
				}
			}
			if match(units[i]) {
				out = append(out, int32(i))
				if len(out) == limit {
					return out, int32(i + 1), nil
				}
			}
		}
		return out, int32(len(units)), nil
	}
	for n, i := range within {
		if i < from || int(i) >= len(units) {
			continue
		}
		if n%every == 0 {
			if err := ctx.Err(); err != nil {
				return nil, from, err
			}
			if progress != nil {
				progress.Store(int64(n))
			}
		}
		if match(units[i]) {
			out = append(out, i)
			if len(out) == limit {
				return out, i + 1, nil
			}
		}
	}
	return out, int32(len(units)), nil
}

// Find returns the first position p in rows, starting at start and moving
// by step (+1 or -1) with wrap-around, whose unit satisfies match, or -1.
// It honours ctx like Scan.
func Find(ctx context.Context, units []*decode.Unit, rows []int32, start, step int, match func(*decode.Unit) bool) (int, error) {
	n := len(rows)
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
		if int(rows[p]) < len(units) && match(units[rows[p]]) {
			return p, nil
		}
	}
	return -1, nil
}
