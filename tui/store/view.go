package store

import (
	"iter"

	"github.com/wiretap-dev/wiretap/decode"
)

// View is the store's units as they were when [Store.Snapshot] was
// called: what background goroutines (filters, searches, statistics,
// export) read while the UI goroutine keeps appending and spilling.
type View struct {
	s     *Store
	units []*decode.Unit
}

// ViewOf is a view of units held by no store, all resident (tests, and
// callers that built their own units).
func ViewOf(units []*decode.Unit) View { return View{units: units[:len(units):len(units)]} }

// Len reports how many units the view holds.
func (v View) Len() int { return len(v.units) }

// Unit returns unit i as indexed (see [Store.Unit]); [View.Load] gives
// the bytes.
func (v View) Unit(i int32) *decode.Unit {
	if !v.budgeted() {
		return v.units[i]
	}
	v.s.mem.mu.RLock()
	defer v.s.mem.mu.RUnlock()
	return v.units[i]
}

// places copies the view's units as indexed.
func (v View) places() []*decode.Unit {
	if !v.budgeted() {
		return v.units
	}
	out := make([]*decode.Unit, len(v.units))
	for b := 0; b < len(out); b += rangeBlock {
		v.s.mem.mu.RLock()
		copy(out[b:min(b+rangeBlock, len(out))], v.units[b:])
		v.s.mem.mu.RUnlock()
	}
	return out
}

// budgeted says whether units of the view may have their bytes spilled.
func (v View) budgeted() bool { return v.s != nil && v.s.mem.budget > 0 }

// Load returns unit i with its bytes; safe from any goroutine. With a
// budget it is a copy (see [Store.Load]).
func (v View) Load(i int32) *decode.Unit {
	if !v.budgeted() {
		return v.units[i]
	}
	v.s.mem.mu.RLock()
	defer v.s.mem.mu.RUnlock()
	return v.s.loaded(i, nil, 0)
}

// rangeBlock is how many units Range looks at per hold of the store's
// lock: spilling waits for at most one block.
const rangeBlock = 1024

// Range calls fn, in order, for units [lo, hi) with their bytes, until fn
// returns false; it reports whether it reached hi. Spilled units are read
// back a block at a time, in one read per block; fn runs with the store's
// lock held for reading and must not call back into the store.
func (v View) Range(lo, hi int, fn func(i int32, u *decode.Unit) bool) bool {
	if !v.budgeted() {
		for i := lo; i < hi; i++ {
			if !fn(int32(i), v.units[i]) {
				return false
			}
		}
		return true
	}
	m := &v.s.mem
	for b := lo; b < hi; b += rangeBlock {
		e := min(b+rangeBlock, hi)
		m.mu.RLock()
		ev := min(m.evicted, e)
		var buf []byte
		if b < ev {
			buf, _ = m.read(b, ev) // on error, units are given without bytes
		}
		for i := b; i < e; i++ {
			u := v.units[i]
			if i < ev {
				if buf != nil {
					u = v.s.loaded(int32(i), buf, b)
				} else {
					cp := *u
					u = &cp
				}
			}
			if !fn(int32(i), u) {
				m.mu.RUnlock()
				return false
			}
		}
		m.mu.RUnlock()
	}
	return true
}

// Head returns the view of its first n units (all of them when n is
// larger).
func (v View) Head(n int) View {
	n = min(max(n, 0), len(v.units))
	return View{s: v.s, units: v.units[:n:n]}
}

// All yields the view's units as indexed, without their bytes (see
// [View.Unit]).
func (v View) All() iter.Seq2[int32, *decode.Unit] {
	return func(yield func(int32, *decode.Unit) bool) {
		for i := range v.units {
			if !yield(int32(i), v.Unit(int32(i))) {
				return
			}
		}
	}
}
