package store

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
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

// TestListOfCaller: a List filled by ScanPages's pages (and by small
// slices between them) under a tiny budget pages out to the spill file as
// it fills, reads back as it was filled while more is added (from another
// goroutine too: run with -race), and once released costs nothing in the
// budget while Rows taken before stay readable. Whole pages are taken as
// they are, not copied.
func TestListOfCaller(t *testing.T) {
	units := fake.Generate(20000, 4)
	s := New()
	s.SetBudget(1)
	defer s.Close()
	s.Append(units)
	before, _ := s.Memory()
	l := s.NewList()
	var want []int32
	next := int32(0)
	take := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = next
			next += 3
		}
		want = append(want, out...)
		return out
	}
	l.Append(take(10))
	if l.PageRoom() != ListPage-10 {
		t.Fatalf("room %d", l.PageRoom())
	}
	var early Rows
	done := make(chan bool)
	for k := range 20 {
		if k == 5 {
			early = l.Rows()
			wantEarly := slices.Clone(want)
			go func() {
				ok := true
				for range 3 {
					ok = ok && slices.Equal(early.Slice(), wantEarly)
				}
				done <- ok
			}()
		}
		l.Append(take(l.PageRoom()))
		if k%7 == 3 {
			l.Append(take(100)) // a small slice between pages
		}
	}
	l.Append(take(42))
	if !<-done {
		t.Fatal("a snapshot of the list read back otherwise while it grew")
	}
	if got := l.Rows().Slice(); !slices.Equal(got, want) {
		t.Fatalf("%d entries read back, want %d", len(got), len(want))
	}
	if p := l.Paged(); p < l.Len()-ListPage {
		t.Fatalf("%d of %d entries on file", p, l.Len())
	}
	if used, _ := s.Memory(); used-before > ListPage*4 {
		t.Fatalf("the list of %d entries costs %d bytes in memory", l.Len(), used-before)
	}
	rows := l.Rows()
	l.Release()
	if used, _ := s.Memory(); used != before {
		t.Fatalf("released: %d bytes accounted, %d before the list", used, before)
	}
	l.Append(take(5))
	want = want[:len(want)-5]
	if got := rows.Slice(); !slices.Equal(got, want) || l.Len() != len(want) {
		t.Fatal("rows of a released list read back otherwise")
	}

	// Without a budget nothing is written, and a whole page is kept as
	// it was given.
	r := New()
	defer r.Close()
	rl := r.NewList()
	page := make([]int32, ListPage)
	for i := range page {
		page[i] = int32(i)
	}
	rl.Append(page)
	if rl.l.pages[0] == nil || &rl.l.pages[0][0] != &page[0] {
		t.Fatal("a whole page was copied")
	}
}

// TestScanPages: ScanPages hands the matches ScanAll finds, in order, in
// pages of the sizes asked for, across processors or within a list, and
// stops when emit says so.
func TestScanPages(t *testing.T) {
	units := fake.Generate(300_000, 6)
	s := New()
	s.SetBudget(1 << 20)
	defer s.Close()
	s.Append(units)
	v := s.Snapshot()
	match := func(u *decode.Unit) bool { return u.N%5 != 0 }
	var want []int32
	for i, u := range units {
		if match(u) {
			want = append(want, int32(i))
		}
	}
	ctx := context.Background()
	for _, first := range []int{0, 1, 100, ListPage} {
		var got []int32
		var sizes []int
		err := ScanPages(ctx, v, nil, 0, match, true, nil, first, func(p []int32) bool {
			got, sizes = append(got, p...), append(sizes, len(p))
			return true
		})
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("first %d: %d matches, want %d (%v)", first, len(got), len(want), err)
		}
		if first == 0 {
			first = ListPage
		}
		for k, n := range sizes {
			if (k == 0 && n != first) || (k > 0 && k < len(sizes)-1 && n != ListPage) {
				t.Fatalf("first %d: page %d of %d entries", first, k, n)
			}
		}
	}
	all := s.ConnUnits(1)
	var wantIn []int32
	all.Range(0, all.Len(), func(_ int, ix int32) bool {
		if ix >= 1000 && match(units[ix]) {
			wantIn = append(wantIn, ix)
		}
		return true
	})
	var got []int32
	if err := ScanPages(ctx, v, &all, 1000, match, false, nil, 0, func(p []int32) bool { got = append(got, p...); return true }); err != nil || !slices.Equal(got, wantIn) {
		t.Fatalf("within a connection: %d matches, want %d (%v)", len(got), len(wantIn), err)
	}
	pages := 0
	ScanPages(ctx, v, nil, 0, match, true, nil, 0, func(p []int32) bool { pages++; return pages < 2 })
	if pages != 2 {
		t.Fatalf("%d pages after emit said stop", pages)
	}
}
