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
			if err != nil {
				if !s.rangeUnreadable(i, cold, err, fn) {
					m.mu.RUnlock()
					return false
				}
				i = cold
			}
		}
		if !m.rangeLive(i, e, fn) {
			m.mu.RUnlock()
			return false
		}
		m.mu.RUnlock()
	}
	return true
}

// RangeShallow is Range for a match that reads nothing of a unit but its
// plain fields (what [github.com/wiretap-dev/wiretap/decode/filter.Filter.Shallow]
// reports): frozen units are
// given as shells built from their records, no blob read, holding N,
// Offset, Len, the time, Conn, Type, Channel, HasChannel, Dir, Proto,
// Secret and a Parent that holds only its N, and nothing else (no bytes,
// summary, notes or field tree). Pinned units are given as their copies
// without bytes, units held whole as they are. The shell is one unit,
// filled again for the next: fn must not keep it. Nothing is allocated
// per unit, and records not in the store's page cache are read into a
// page of the call's own, so a scan does not evict what the UI reads.
func (v View) RangeShallow(lo, hi int, fn func(i int32, u *decode.Unit) bool) bool {
	if v.s == nil {
		return v.Range(lo, hi, fn)
	}
	var sh shell
	return v.walkRecords(lo, hi, &sh, func(i int32, r *rec, page []rec, base int) bool {
		return fn(i, sh.of(v.s, i, r, page, base))
	}, fn)
}

// walkRecords calls, in order for units [lo, hi) of a store's view,
// frozen with each frozen unit's record (from the store's page cache or,
// past it, sh's page of its own; page and base are where it was found)
// and whole with each unit held whole or, for a record that cannot be
// read back, its stand-in, until one returns false; it reports whether it
// reached hi. It holds the store's lock for reading a block of rangeBlock
// units at a time; frozen and whole must not call into the store.
func (v View) walkRecords(lo, hi int, sh *shell, frozen func(i int32, r *rec, page []rec, base int) bool, whole func(i int32, u *decode.Unit) bool) bool {
	s, m := v.s, &v.s.mem
	for b := lo; b < hi; b += rangeBlock {
		e := min(b+rangeBlock, hi)
		m.mu.RLock()
		i, cold := b, min(m.cold, e)
		for i < cold {
			page, base, err := sh.page(s, i)
			if err != nil {
				if !s.rangeUnreadable(i, cold, err, whole) {
					m.mu.RUnlock()
					return false
				}
				i = cold
				break
			}
			for end := min(cold, base+len(page)); i < end; i++ {
				if !frozen(int32(i), &page[i-base], page, base) {
					m.mu.RUnlock()
					return false
				}
			}
		}
		if !m.rangeLive(i, e, whole) {
			m.mu.RUnlock()
			return false
		}
		m.mu.RUnlock()
	}
	return true
}

// loadShallow is Load for a match that reads only a unit's plain fields
// (see RangeShallow): a frozen unit comes as sh's unit filled from its
// record.
func (v View) loadShallow(i int32, sh *shell) *decode.Unit {
	if v.s == nil {
		return v.units[i]
	}
	s, m := v.s, &v.s.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	if int(i) >= m.cold {
		return m.live[int(i)-m.cold]
	}
	r, err := s.recAt(int(i))
	if err != nil {
		return s.unreadable(i, err)
	}
	return sh.of(s, i, r, nil, 0)
}

// shell is the unit RangeShallow and loadShallow give for frozen units,
// its parent's stand-in, and a page of records read past the cache.
type shell struct {
	u, parent decode.Unit
	recs      []rec
	recsAt    int // the page recs holds, -1 for none
}

// page returns the page of records holding record i (i < cold) and the
// index of its first: the tail, a cached page, or one read into recs.
// The caller holds mu for reading.
func (sh *shell) page(s *Store, i int) ([]rec, int, error) {
	m := &s.mem
	p := i / recPage
	if p >= m.pagesOut {
		return m.tail, p * recPage, nil
	}
	if page, ok := m.pages.lookup(p); ok {
		return page, p * recPage, nil
	}
	if sh.recs == nil {
		sh.recs, sh.recsAt = make([]rec, recPage), -1
	}
	if sh.recsAt != p {
		sh.recsAt = -1
		if err := readPage(sh.recs, m.idx, int64(p)*int64(recPage*recSize), "index file"); err != nil {
			return nil, 0, err
		}
		sh.recsAt = p
	}
	return sh.recs, p * recPage, nil
}

// of returns frozen unit i as its pinned copy, or sh's unit filled from
// record r; page, whose first record is base's, is where a container is
// looked for first (it is most often just before what it carried). The
// caller holds mu for reading.
func (sh *shell) of(s *Store, i int32, r *rec, page []rec, base int) *decode.Unit {
	if r.flags&recPinned != 0 {
		return s.mem.pin[i]
	}
	// Field by field rather than a new Unit: what the shell never holds
	// (Raw, Summary, Dissect, notes) stays nil, and the pointers written
	// are three, not every pointer of a Unit (write barriers, during a
	// collection).
	u := &sh.u
	u.N, u.Offset, u.Len, u.Type = int(r.n), r.offset, int(r.length), s.types[r.typ]
	u.Channel, u.Dir, u.Proto = r.ch, decode.Dir(r.dir), decode.Proto(r.proto)
	u.HasChannel, u.Secret = r.flags&recChannel != 0, r.flags&recSecret != 0
	u.SetUnixNano(r.ns)
	u.Conn, u.Parent = nil, nil
	if r.conn >= 0 {
		u.Conn = s.conns[r.conn]
	}
	if r.flags&recParent != 0 {
		if p := int(r.parent); p >= base && p < base+len(page) {
			sh.parent.N = int(page[p-base].n)
		} else {
			sh.parent.N = s.nOf(p)
		}
		u.Parent = &sh.parent
	}
	return u
}

// rangeLive calls fn for units [i, e), all held whole, until it returns
// false; it reports whether it reached e. mu is held.
func (m *memory) rangeLive(i, e int, fn func(int32, *decode.Unit) bool) bool {
	for ; i < e; i++ {
		if !fn(int32(i), m.live[i-m.cold]) {
			return false
		}
	}
	return true
}

// rangeUnreadable gives fn stand-ins for units [i, e), which could not be
// read back (err), until it returns false; it reports whether it reached e.
func (s *Store) rangeUnreadable(i, e int, err error, fn func(int32, *decode.Unit) bool) bool {
	for ; i < e; i++ {
		if !fn(int32(i), s.unreadable(int32(i), err)) {
			return false
		}
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
