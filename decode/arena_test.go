package decode

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// take hands out n units of a, each marked with its number.
func take(a *Arena, n int) []*Unit {
	us := make([]*Unit, n)
	for i := range us {
		u := a.Unit()
		if u.N != 0 || u.Raw != nil || u.Summary != "" || u.notes != nil {
			panicUnit(u)
		}
		u.N, u.Summary, u.Raw = i+1, "unit "+strconv.Itoa(i+1), []byte{byte(i)}
		u.Warn("dirty")
		us[i] = u
	}
	return us
}

func panicUnit(u *Unit) { panic("arena handed out a unit not zero: " + u.Summary) }

func TestArenaReusesReleasedSlabs(t *testing.T) {
	a := NewArena(4)
	first := take(a, 4)
	second := take(a, 4) // closes the first slab
	if &first[0] == &second[0] || first[3] == second[0] {
		t.Fatal("two slabs share a unit")
	}
	// Three of four released: the slab stays out.
	a.Release(first[:3])
	third := take(a, 4) // closes the second slab
	for _, u := range third {
		for _, f := range first {
			if u == f {
				t.Fatal("a slab with a unit not released was reused")
			}
		}
	}
	a.Release(first[3:])
	// Released units are cleared at once.
	for _, u := range first {
		if u.N != 0 || u.Raw != nil || len(u.Warnings()) != 0 {
			t.Fatalf("released unit not cleared: %+v", *u)
		}
	}
	fourth := take(a, 4) // closes the third slab, opens the first again
	for i, u := range fourth {
		if u != first[i] {
			t.Fatalf("unit %d of the released slab not reused", i)
		}
	}
}

func TestArenaReleasesOnlyItsOwn(t *testing.T) {
	a := NewArena(2)
	us := take(a, 2)
	heap := &Unit{N: 7}
	cp := *us[0] // a copy carries the slab's number but lies elsewhere
	a.Release([]*Unit{heap, &cp, nil})
	if heap.N != 7 || cp.N != 1 {
		t.Fatal("Release cleared a unit the arena did not hand out")
	}
	take(a, 1) // closes the slab: none of its units released
	a.Release(us[:1])
	next := take(a, 2)
	for _, u := range next {
		if u == us[0] || u == us[1] {
			t.Fatal("slab reused with a unit not released (a copy was counted)")
		}
	}
	// Released in full while current: the slab is free as soon as it
	// is closed.
	b := NewArena(2)
	cur := take(b, 2)
	b.Release(cur)
	if b.Unit() != cur[0] {
		t.Fatal("a slab released in full was not reused once closed")
	}
	var nilArena *Arena
	if u := nilArena.Unit(); u == nil || u.slab != 0 {
		t.Fatal("a nil arena's Unit is not a plain unit")
	}
	nilArena.Release([]*Unit{heap})
}

// TestArenaDoubleRelease: a poisoned arena panics at a unit released a
// second time before it is handed out again, and not at units released
// once, handed out anew and released again, nor at units of its own
// released once each across slabs reused.
func TestArenaDoubleRelease(t *testing.T) {
	a := NewArena(2)
	a.Poison = true
	for range 4 {
		us := take(a, 4)
		a.Release(us)
	}
	us := take(a, 2)
	a.Release(us[:1])
	twice := func() (msg any) {
		defer func() { msg = recover() }()
		a.Release(us[:1])
		return nil
	}
	if msg := twice(); msg == nil || !strings.Contains(fmt.Sprint(msg), "released twice") {
		t.Fatalf("a unit released twice: %v", msg)
	}
	// Without Poison the second release is passed over.
	b := NewArena(2)
	vs := take(b, 2)
	b.Release(vs)
	b.Release(vs)
}

func TestArenaBeyondItsSlabs(t *testing.T) {
	a := NewArena(1)
	us := take(a, arenaSlabs+3)
	for i, u := range us {
		if numbered := i < arenaSlabs; numbered != (u.slab != 0) {
			t.Fatalf("unit %d: slab %d", i, u.slab)
		}
	}
	// Units past the numbered slabs are plain: released, nothing happens.
	a.Release(us[arenaSlabs:])
	if us[arenaSlabs].N == 0 {
		t.Fatal("a unit the arena does not recycle was cleared")
	}
	a.Release(us[:arenaSlabs])
	if u := a.Unit(); u.slab == 0 {
		t.Fatal("released slabs were not reused")
	}
}

type slotted struct {
	body []byte
	n    int
}

func TestSlots(t *testing.T) {
	a := NewArena(2)
	s := SlotsOf[slotted](a)
	if SlotsOf[slotted](a) != s || SlotsOf[int](a) == nil {
		t.Fatal("SlotsOf does not return one Slots per type")
	}
	if SlotsOf[slotted](nil) != nil || (*Slots[slotted])(nil).Of(&Unit{}) != nil {
		t.Fatal("nil arena's Slots")
	}
	us := take(a, 2)
	m0, m1 := s.Of(us[0]), s.Of(us[1])
	if m0 == nil || m1 == nil || m0 == m1 || s.Of(us[0]) != m0 {
		t.Fatal("Of: one slot per unit")
	}
	if s.Of(&Unit{}) != nil {
		t.Fatal("Of gave a slot to a unit the arena did not hand out")
	}
	m0.body, m0.n = make([]byte, 1<<20), 1
	m1.n = 2
	take(a, 2) // closes the slab, fills the next
	a.Release(us)
	if m0.body != nil || m0.n != 0 || m1.n != 0 {
		t.Fatal("a released unit's slot was not cleared")
	}
	again := take(a, 2) // closes the second slab, opens the first again
	if again[0] != us[0] || s.Of(again[0]) != m0 || m0.n != 0 {
		t.Fatal("slot not reused, zero, with its unit")
	}
}

// TestArenaConcurrent hands units from a decoding goroutine to a reader
// that checks them and releases them, as read's writer does: under -race,
// a unit read after its release or reused before is a race.
func TestArenaConcurrent(t *testing.T) {
	a := NewArena(8)
	s := SlotsOf[slotted](a)
	type item struct {
		u *Unit
		m *slotted
	}
	batches := make(chan []item, 4)
	errs := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		next := 1
		var us []*Unit
		for b := range batches {
			us = us[:0]
			for _, it := range b {
				u, m := it.u, it.m
				if u.N != next || u.Summary != strconv.Itoa(next) || (m != nil && m.n != next) {
					select {
					case errs <- "unit " + strconv.Itoa(next) + " changed before it was released":
					default:
					}
				}
				us = append(us, u)
				next++
			}
			a.Release(us)
		}
	}()
	var b []item
	for i := 1; i <= 20000; i++ {
		u := a.Unit()
		if u.N != 0 || u.Summary != "" {
			t.Fatal("unit handed out not zero")
		}
		u.N, u.Summary = i, strconv.Itoa(i)
		m := s.Of(u)
		if m != nil {
			if m.n != 0 {
				t.Fatal("slot handed out not zero")
			}
			m.n = i
		}
		b = append(b, item{u, m})
		if len(b) == 13 {
			batches <- b
			b = nil
		}
	}
	batches <- b
	close(batches)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
	if a.made == arenaSlabs {
		t.Errorf("all %d slabs made for a few batches in flight: slabs not reused", a.made)
	}
}

// TestArenaAllocs: in steady state, units and slots come and go without
// allocating.
func TestArenaAllocs(t *testing.T) {
	a := NewArena(64)
	s := SlotsOf[slotted](a)
	batch := make([]*Unit, 64)
	cycle := func() {
		for i := range batch {
			batch[i] = a.Unit()
			s.Of(batch[i]).n = i
		}
		a.Release(batch)
	}
	cycle()
	cycle()
	if n := testing.AllocsPerRun(100, cycle); n != 0 {
		t.Fatalf("%v allocations per 64 units", n)
	}
}

// BenchmarkArenaUnit: a unit handed out, filled and released, against
// the same from a fresh slab.
func BenchmarkArenaUnit(b *testing.B) {
	const batch = 4096
	fill := func(u *Unit, i int) {
		u.N, u.Offset, u.Len, u.Summary, u.Type = i, int64(i), 16, "Content-Body", "body"
	}
	b.Run("arena", func(b *testing.B) {
		a := NewArena(0)
		us := make([]*Unit, 0, batch)
		b.ReportAllocs()
		b.SetBytes(int64(unitSize))
		for i := 0; b.Loop(); i++ {
			u := a.Unit()
			fill(u, i)
			us = append(us, u)
			if len(us) == batch {
				a.Release(us)
				us = us[:0]
			}
		}
	})
	b.Run("slab", func(b *testing.B) {
		var slab []Unit
		b.ReportAllocs()
		b.SetBytes(int64(unitSize))
		for i := 0; b.Loop(); i++ {
			if len(slab) == 0 {
				slab = make([]Unit, arenaSlabUnits)
			}
			u := &slab[0]
			slab = slab[1:]
			fill(u, i)
		}
	})
}

func TestArenaBytes(t *testing.T) {
	a := NewArena(2)
	if b := a.Bytes(100); cap(b) < 100 || len(b) != 0 {
		t.Fatal("Bytes: no room")
	}
	us := take(a, 2)
	big := make([]byte, 10000)
	small := make([]byte, 100)
	a.Own(us[0], big)
	a.Own(us[1], small) // too small to be pooled
	a.Own(&Unit{}, big) // not the arena's: passed over
	if b := a.Bytes(5000); &b[:1][0] == &big[0] {
		t.Fatal("a buffer pooled before its unit was released")
	}
	a.Poison = true
	a.Release(us)
	if big[0] != 0xdb || big[len(big)-1] != 0xdb || small[0] != 0 {
		t.Fatal("Poison: the released unit's buffer not overwritten (or the small one was)")
	}
	if b := a.Bytes(20000); cap(b) >= 10000 && &b[:1][0] == &big[0] {
		t.Fatal("Bytes gave a buffer smaller than asked")
	}
	b := a.Bytes(8000)
	if len(b) != 0 || cap(b) != 10000 || &b[:1][0] != &big[0] {
		t.Fatal("Bytes did not give the pooled buffer")
	}
	if c := a.Bytes(8000); cap(c) == 10000 && &c[:1][0] == &big[0] {
		t.Fatal("a pooled buffer given out twice")
	}
	if st := a.Stats(); st.BytesReused != 1 {
		t.Fatalf("Stats: %d buffers reused, want 1", st.BytesReused)
	}
	var nilArena *Arena
	nilArena.Own(us[0], big)
	if b := nilArena.Bytes(10); cap(b) < 10 {
		t.Fatal("a nil arena's Bytes")
	}
	// The pool keeps at most poolBytes.
	for range 2 * poolBytes / 10000 {
		u := a.Unit()
		a.Own(u, make([]byte, 10000))
		a.Release([]*Unit{u})
	}
	if n := a.pool.Bytes(); n > poolBytes {
		t.Fatalf("the pool keeps %d bytes", n)
	}
}

// BenchmarkArenaRelease: units handed out, a third of them with a slot
// (an AMQP 0-9-1 fanout's messages), released in read's batches.
func BenchmarkArenaRelease(b *testing.B) {
	type message struct {
		method, header []byte
		body           *int
		size           uint64
		cut, inUnit    bool
		bound          [2]uintptr
	}
	const batch = 4096
	a := NewArena(0)
	s := SlotsOf[message](a)
	us := make([]*Unit, 0, batch)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		u := a.Unit()
		u.N, u.Summary, u.Len = i, "Content-Body", 16
		if i%3 == 2 {
			s.Of(u).size = 16
		}
		us = append(us, u)
		if len(us) == batch {
			a.Release(us)
			us = us[:0]
		}
	}
}

// TestBufferPool checks the pool's order (the last put first, among
// those with room enough) and its bound.
func TestBufferPool(t *testing.T) {
	p := NewBufferPool(60)
	a, b := make([]byte, 3, 10), make([]byte, 0, 20)
	p.Put(a)
	p.Put(b)
	if got := p.Get(5); cap(got) != 20 || len(got) != 0 {
		t.Fatalf("Get(5): cap %d len %d, want the last put (cap 20), empty", cap(got), len(got))
	}
	if got := p.Get(15); got != nil {
		t.Fatalf("Get(15) gave cap %d with only 10 pooled", cap(got))
	}
	if got := p.Get(10); cap(got) != 10 || len(got) != 0 {
		t.Fatalf("Get(10): cap %d len %d, want the first put, empty", cap(got), len(got))
	}
	p.Put(make([]byte, 0, 40))
	p.Put(make([]byte, 0, 40)) // past the bound: not kept
	if n := p.Bytes(); n != 40 {
		t.Fatalf("%d bytes kept, want 40", n)
	}
	if got := p.Take(30); cap(got) != 40 || len(got) != 0 {
		t.Fatalf("Take(30): cap %d len %d, want the pooled 40, empty", cap(got), len(got))
	}
	if got := p.Take(30); cap(got) < 30 || len(got) != 0 {
		t.Fatalf("Take(30) from an empty pool: cap %d len %d", cap(got), len(got))
	}
}
