package store

import (
	"errors"
	"slices"
	"sort"
	"unsafe"
)

// Rows is an increasing list of unit indices as it was when it was taken:
// the store's lists (every unit, a connection's units, the units no
// container carried) and the results of filters. Reading it is safe from
// any goroutine while the store grows.
type Rows struct {
	l *ixList
	n int
	s []int32 // the entries, when l is nil
}

// RowsOf is the Rows of an increasing slice, which must not change.
func RowsOf(s []int32) Rows { return Rows{s: s[:len(s):len(s)], n: len(s)} }

// Len returns the number of entries.
func (r Rows) Len() int { return r.n }

// At returns entry p.
func (r Rows) At(p int) int32 {
	if r.l == nil {
		return r.s[p]
	}
	m := &r.l.st.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	return r.l.at(p)
}

// Head returns the first n entries (all of them when n is larger).
func (r Rows) Head(n int) Rows {
	n = min(max(n, 0), r.n)
	if r.l == nil {
		return RowsOf(r.s[:n])
	}
	return Rows{l: r.l, n: n}
}

// Range calls fn with entries [lo, hi) in order until it returns false,
// a page at a time.
func (r Rows) Range(lo, hi int, fn func(p int, ix int32) bool) bool {
	hi = min(hi, r.n)
	if r.l == nil {
		for p := lo; p < hi; p++ {
			if !fn(p, r.s[p]) {
				return false
			}
		}
		return true
	}
	for p := lo; p < hi; {
		m := &r.l.st.mem
		m.mu.RLock()
		page, base := r.l.page(p)
		m.mu.RUnlock()
		e := min(hi, base+len(page))
		for ; p < e; p++ {
			if !fn(p, page[p-base]) {
				return false
			}
		}
	}
	return true
}

// Search returns the position of the first entry at or past ix (Len when
// none is).
func (r Rows) Search(ix int32) int {
	return sort.Search(r.n, func(p int) bool { return r.At(p) >= ix })
}

// Slice returns the entries as a slice of their own.
func (r Rows) Slice() []int32 {
	if r.l == nil {
		return r.s
	}
	out := make([]int32, 0, r.n)
	r.Range(0, r.n, func(_ int, ix int32) bool { out = append(out, ix); return true })
	return out
}

// listPage is how many entries make a page of a list.
const listPage = 16384

// ixList is one of the store's lists of unit indices. Its full pages go to
// the spill file once the store freezes units, and come back through a
// cache. The UI goroutine appends, holding mu; readers hold it for
// reading.
type ixList struct {
	st    *Store
	id    int
	pages [][]int32 // full pages, nil once on file
	offs  []int64   // where page p is in the spill file, once written
	tail  []int32
	n     int
}

func (s *Store) newList() *ixList {
	s.lists++
	return &ixList{st: s, id: s.lists}
}

// rows returns the list as it is now.
func (l *ixList) rows() Rows { return Rows{l: l, n: l.n} }

// add appends ix. The caller holds mu.
func (l *ixList) add(ix int32) {
	if l.tail == nil {
		l.tail = make([]int32, 0, 16)
	}
	l.tail = append(l.tail, ix)
	l.n++
	l.st.mem.index += 4
	if len(l.tail) == listPage {
		l.pages = append(l.pages, l.tail)
		l.offs = append(l.offs, -1)
		l.st.mem.fullLists = append(l.st.mem.fullLists, fullPage{l, len(l.pages) - 1})
		l.tail = nil
	}
}

// at returns entry p. The caller holds mu for reading or is the UI
// goroutine.
func (l *ixList) at(p int) int32 {
	page, base := l.page(p)
	return page[p-base]
}

// page returns the page holding entry p and the position of its first
// entry. A page that cannot be read back from the spill file comes as
// zeros (its rows show the first unit).
func (l *ixList) page(p int) ([]int32, int) {
	k := p / listPage
	if k >= len(l.pages) {
		return l.tail, k * listPage
	}
	if pg := l.pages[k]; pg != nil {
		return pg, k * listPage
	}
	pg, err := l.st.mem.listCache.get(listKey{l.id, k}, listPage, l.st.mem.spill, l.offs[k], "spill file")
	if err != nil {
		pg = make([]int32, listPage)
	}
	return pg, k * listPage
}

// fullPage is a list's page written to no file yet.
type fullPage struct {
	l *ixList
	p int
}

// spillLists writes the full pages of the lists to the spill file and lets
// go of them; the caller flushes the writer and publishes holding mu. It
// returns the pages written and their offsets.
func (s *Store) spillLists(end int64) (written []fullPage, offs []int64, newEnd int64, err error) {
	m := &s.mem
	for _, fp := range m.fullLists {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&fp.l.pages[fp.p][0])), listPage*4)
		if _, err := m.w.Write(b); err != nil {
			return nil, nil, end, errors.New("store: spill file: " + err.Error())
		}
		written = append(written, fp)
		offs = append(offs, end)
		end += int64(len(b))
	}
	return written, offs, end, nil
}

// listKey names a list's page in the store's cache of them.
type listKey struct{ id, p int }

const cachedListPages = 32

// Seq is a list of unit indices read by position: Rows, or a view of
// them such as the unit list's rows with groups expanded.
type Seq interface {
	Len() int
	At(p int) int32
}

// Span is the Seq of the unit indices 0 to n-1: all of a store's units.
type Span int

// Len returns n.
func (s Span) Len() int { return int(s) }

// At returns p.
func (s Span) At(p int) int32 { return int32(p) }

// List is a list of unit indices its caller fills, such as a filter's
// result: like the store's own lists, its full pages go to the spill file
// once the store is over its budget, and its entries in memory count in
// the budget ([Store.Memory]). For the UI goroutine; its Rows are safe
// from any goroutine.
type List struct {
	l        *ixList
	released bool
}

// NewList returns an empty list of the store's.
func (s *Store) NewList() *List { return &List{l: s.newList()} }

// Len returns the number of entries.
func (l *List) Len() int { return l.l.n }

// Rows returns the list as it is now.
func (l *List) Rows() Rows { return l.l.rows() }

// PageRoom returns how many entries complete the list's last page (a
// whole page's when it is complete): after a slice of that many given to
// Append (copied into the page), slices of ListPage are kept as they are,
// not copied.
func (l *List) PageRoom() int { return listPage - len(l.l.tail) }

// Paged returns how many of the list's entries are in the spill file
// (their pages written and let go of).
func (l *List) Paged() int {
	m := &l.l.st.mem
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, pg := range l.l.pages {
		if pg == nil {
			n += listPage
		}
	}
	return n
}

// ListPage is how many entries make a page of a list.
const ListPage = listPage

// Append adds entries, which must be increasing and past the last. A
// slice that makes a whole page of the list (see PageRoom) becomes that
// page: the caller must not use it again. Pages past the budget go to the
// spill file at once.
func (l *List) Append(ixs []int32) {
	if l.released || len(ixs) == 0 {
		return
	}
	il := l.l
	m := &il.st.mem
	m.mu.Lock()
	if len(il.tail) == 0 && len(ixs) == listPage {
		il.addPage(ixs)
	} else {
		for _, ix := range ixs {
			il.add(ix)
		}
	}
	m.mu.Unlock()
	il.st.evict()
}

// Release lets go of the list: its entries no longer count in the budget
// and its pages are not written to the spill file. Rows taken before stay
// readable (a background export of them, say). Append does nothing after.
func (l *List) Release() {
	if l.released {
		return
	}
	l.released = true
	il := l.l
	m := &il.st.mem
	held := len(il.tail)
	for _, pg := range il.pages {
		if pg != nil {
			held += listPage
		}
	}
	m.index -= int64(held) * 4
	m.fullLists = slices.DeleteFunc(m.fullLists, func(fp fullPage) bool { return fp.l == il })
}

// addPage appends a whole page, the tail being empty. The caller holds
// mu.
func (l *ixList) addPage(pg []int32) {
	l.pages = append(l.pages, pg[:listPage:listPage])
	l.offs = append(l.offs, -1)
	l.n += listPage
	l.st.mem.index += listPage * 4
	l.st.mem.fullLists = append(l.st.mem.fullLists, fullPage{l, len(l.pages) - 1})
}
