package unitlist

import (
	"testing"

	"github.com/wiretap-dev/wiretap/tui/internal/fake"
	"github.com/wiretap-dev/wiretap/tui/store"
)

// TestShownMatchesExpansion: the rows with some groups expanded, read by
// position and found by unit, are the base with each expanded container's
// units after it, as a list built the long way has them.
func TestShownMatchesExpansion(t *testing.T) {
	st := store.New()
	st.Append(fake.Generate(6000, 11))
	base := st.Top()
	expanded := map[int32]bool{}
	containers := 0
	base.Range(0, base.Len(), func(_ int, ix int32) bool {
		if st.HasKids(ix) {
			if containers%2 == 0 {
				expanded[ix] = true
			}
			containers++
		}
		return true
	})
	if len(expanded) < 3 {
		t.Fatalf("%d containers in the fake units: the test needs some", containers)
	}
	var want []int32
	base.Range(0, base.Len(), func(_ int, ix int32) bool {
		want = append(want, ix)
		if expanded[ix] {
			want = append(want, st.Kids(ix)...)
		}
		return true
	})
	s := newShown(base, st, expanded, false)
	if s.Len() != len(want) {
		t.Fatalf("%d rows, want %d", s.Len(), len(want))
	}
	for p, ix := range want {
		if s.At(p) != ix {
			t.Fatalf("row %d is unit %d, want %d", p, s.At(p), ix)
		}
		if q := s.find(ix); q != p {
			t.Fatalf("unit %d found on row %d, want %d", ix, q, p)
		}
	}
	if flat := newShown(base, st, expanded, true); flat.Len() != base.Len() {
		t.Fatalf("flat rows expanded: %d, base %d", flat.Len(), base.Len())
	}
}
