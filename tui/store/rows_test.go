package store

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// TestListsSpillAndComeBack: with a budget far below what the lists take,
// their full pages go to the spill file (what the store accounts stays
// well below 4 bytes an entry) and every list reads back as it was built:
// by position, by range, by search, and as a snapshot taken before more
// units arrived.
func TestListsSpillAndComeBack(t *testing.T) {
	units := fake.Generate(120000, 3)
	n := len(units)
	ref, s := New(), New()
	s.SetBudget(1)
	defer s.Close()
	ref.Append(units)
	var early Rows
	for i := 0; i < n; i += 700 {
		s.Append(units[i:min(i+700, n)])
		if i == 700*50 {
			early = s.Top()
		}
	}
	// What stays is each list's last, partial page and the pinned.
	lists := 1 + 2*len(s.Conns())
	if used, _ := s.Memory(); used > int64(lists*listPage*4+len(s.mem.pin)*256) || used > int64(n*4) {
		t.Fatalf("%d bytes accounted for %d units in %d lists: the lists stayed in memory", used, n, lists)
	}
	spilled := 0
	for _, l := range append([]*ixList{s.top}, append(s.byConn, s.connTop...)...) {
		for _, p := range l.pages {
			if p == nil {
				spilled++
			}
		}
	}
	if spilled == 0 {
		t.Fatal("no list page went to the spill file")
	}
	type pair struct {
		name      string
		got, want Rows
	}
	pairs := []pair{{"top", s.Top(), ref.Top()}}
	for c := range ref.Conns() {
		pairs = append(pairs, pair{"conn", s.ConnUnits(c), ref.ConnUnits(c)}, pair{"conn top", s.ConnTop(c), ref.ConnTop(c)})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range pairs {
		want := p.want.Slice()
		if got := p.got.Slice(); !slices.Equal(got, want) {
			t.Fatalf("%s: %d entries differ from %d", p.name, len(got), len(want))
		}
		for range 200 {
			k := rng.IntN(len(want))
			if p.got.At(k) != want[k] {
				t.Fatalf("%s: entry %d is %d, want %d", p.name, k, p.got.At(k), want[k])
			}
			if q := p.got.Search(want[k]); q != k {
				t.Fatalf("%s: Search(%d) = %d, want %d", p.name, want[k], q, k)
			}
		}
		lo := rng.IntN(len(want))
		var part []int32
		p.got.Range(lo, lo+listPage+5, func(_ int, ix int32) bool { part = append(part, ix); return true })
		if !slices.Equal(part, want[lo:min(lo+listPage+5, len(want))]) {
			t.Fatalf("%s: Range from %d differs", p.name, lo)
		}
	}
	if got, want := early.Slice(), ref.Top().Slice()[:early.Len()]; early.Len() == 0 || !slices.Equal(got, want) {
		t.Fatalf("a snapshot of the top list changed: %d entries", early.Len())
	}
}
