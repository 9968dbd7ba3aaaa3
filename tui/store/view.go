package store

import (
	"iter"

	"github.com/wiretap-dev/wiretap/decode"
)

// View is the store's units as they were when [Store.Snapshot] was
// called: what background goroutines (filters, searches, statistics,
// export) read while the UI goroutine keeps appending and freezing.
type View struct {
	s *Store
	n int
	// units are the units of a view held by no store.
	units []*decode.Unit
}

// ViewOf is a view of units held by no store, all resident (tests, and
// callers that built their own units).
func ViewOf(units []*decode.Unit) View {
	return View{units: units[:len(units):len(units)], n: len(units)}
}

// Len reports how many units the view holds.
func (v View) Len() int { return v.n }

// Unit returns unit i for its plain fields (see [Store.Unit]); safe from
// any goroutine.
func (v View) Unit(i int32) *decode.Unit {
	if v.s == nil {
		return v.units[i]
	}
	v.s.mem.mu.RLock()
	defer v.s.mem.mu.RUnlock()
	return v.s.unitAt(i)
}

// Load returns unit i with its bytes; safe from any goroutine.
func (v View) Load(i int32) *decode.Unit {
	if v.s == nil {
		return v.units[i]
	}
	v.s.mem.mu.RLock()
	defer v.s.mem.mu.RUnlock()
	return v.s.loadAt(i)
}

// rangeBlock is how many units Range looks at per hold of the store's
// lock: freezing waits for at most one block.
const rangeBlock = 1024

// Range calls fn, in order, for units [lo, hi) with their bytes, until fn
// returns false; it reports whether it reached hi. Frozen units are
// rebuilt a block at a time, their bytes read in one read per block; fn
// runs with the store's lock held for reading and must not call back into
// the store. A block that cannot be read back is given as stand-ins that
// say so.
func (v View) Range(lo, hi int, fn func(i int32, u *decode.Unit) bool) bool {
	if v.s == nil {
		for i := lo; i < hi; i++ {
			if !fn(int32(i), v.units[i]) {
				return false
			}
		}
		return true
	}
	s, m := v.s, &v.s.mem
	for b := lo; b < hi; b += rangeBlock {
		e := min(b+rangeBlock, hi)
		m.mu.RLock()
		i, cold := b, min(m.cold, e)
		if i < cold {
			ok := true
			_, err := s.loadRange(i, cold, func(j int32, u *decode.Unit) bool {
				i = int(j) + 1
				ok = fn(j, u)
				return ok
			})
			if !ok {
				m.mu.RUnlock()
				return false
			}
			for ; err != nil && i < cold; i++ {
				if !fn(int32(i), s.unreadable(int32(i), err)) {
					m.mu.RUnlock()
					return false
				}
			}
		}
		for ; i < e; i++ {
			if !fn(int32(i), m.live[i-m.cold]) {
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
	n = min(max(n, 0), v.n)
	if v.s == nil {
		return ViewOf(v.units[:n])
	}
	return View{s: v.s, n: n}
}

// All yields the view's units as [View.Unit] gives them.
func (v View) All() iter.Seq2[int32, *decode.Unit] {
	return func(yield func(int32, *decode.Unit) bool) {
		for i := range v.n {
			if !yield(int32(i), v.Unit(int32(i))) {
				return
			}
		}
	}
}

// Parent returns the index of the container of unit i, or -1 (see
// [Store.Parent]; always -1 in a view held by no store); safe from any
// goroutine.
func (v View) Parent(i int32) int32 {
	if v.s == nil {
		return -1
	}
	v.s.mem.mu.RLock()
	defer v.s.mem.mu.RUnlock()
	return v.s.Parent(i)
}
