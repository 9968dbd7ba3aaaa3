package unitlist

import (
	"sort"

	"github.com/wiretap-dev/wiretap/tui/store"
)

// shown is what the list shows: its base rows, each expanded container
// followed by the units it carried. It is never changed once built (a
// background search may be reading it); the list builds another. It costs
// memory for the expanded groups only, so that a base of millions of
// rows (the store's own list, paged) is not copied.
type shown struct {
	base store.Rows
	at   []int     // base positions of the expanded containers, increasing
	kids [][]int32 // the units each carried
	cum  []int     // nested rows before group k
	n    int
}

func newShown(base store.Rows, st *store.Store, expanded map[int32]bool, flat bool) *shown {
	s := &shown{base: base, n: base.Len()}
	if flat || len(expanded) == 0 {
		return s
	}
	for ix := range expanded {
		p := base.Search(ix)
		if p < base.Len() && base.At(p) == ix && len(st.Kids(ix)) > 0 {
			s.at = append(s.at, p)
		}
	}
	sort.Ints(s.at)
	total := 0
	for _, p := range s.at {
		k := st.Kids(base.At(p))
		s.kids = append(s.kids, k)
		s.cum = append(s.cum, total)
		total += len(k)
	}
	s.n += total
	return s
}

// Len returns the number of rows.
func (s *shown) Len() int { return s.n }

// At returns the unit index on row p.
func (s *shown) At(p int) int32 {
	// The last group whose container is on a row before p.
	k := sort.Search(len(s.at), func(k int) bool { return s.at[k]+s.cum[k] >= p }) - 1
	if k < 0 {
		return s.base.At(p)
	}
	r := s.at[k] + s.cum[k] // the container's row
	if p <= r+len(s.kids[k]) {
		return s.kids[k][p-r-1]
	}
	return s.base.At(p - s.cum[k] - len(s.kids[k]))
}

// find returns the row of unit ix, or -1.
func (s *shown) find(ix int32) int {
	if p := s.base.Search(ix); p < s.base.Len() && s.base.At(p) == ix {
		k := sort.SearchInts(s.at, p) // groups before p
		if k == 0 {
			return p
		}
		return p + s.cum[k-1] + len(s.kids[k-1])
	}
	for k, kids := range s.kids {
		for j, kid := range kids {
			if kid == ix {
				return s.at[k] + s.cum[k] + 1 + j
			}
		}
	}
	return -1
}
