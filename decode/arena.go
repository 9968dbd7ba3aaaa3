package decode

import (
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Arena recycles the memory of units, and of what a decoder attaches to
// a unit (see [Slots]), for a caller that lets go of every unit soon after
// its sink has it and says when ([Arena.Release]): `read`, whose units are
// garbage once printed. Without it every unit is fresh memory: read's
// heap cycles through a hundred megabytes or more between collections,
// so that each unit is written to memory no cache holds, after the
// allocator zeroed it there. With it, the units in flight between the
// decoder and the writer, some tens of thousands, are all the memory
// units take, and it stays in the caches.
//
// Units are handed out in slabs; a slab is reused once
// the decoder has moved on from it and every unit of it was released.
// A released unit must not be read again, by anyone: so a decoder takes
// from the arena only units that nothing else points to once they are
// emitted (not a container that its nested units name as Parent) and
// keeps no pointer to one after emitting it (it keeps the bytes instead).
//
// [Arena.Unit], [Arena.Own], [Arena.Bytes] and [Slots.Of] belong to the
// goroutine that decodes; [Arena.Release] may be called from any
// goroutine once whatever read the units is done with them (a channel
// between them orders it). Up to arenaSlabs slabs are recycled; past
// them (units never released, or more in flight than that) units are
// allocated as without an arena, and the garbage collector takes them.
type Arena struct {
	// Poison, for tests, has the buffers released units owned (see Own)
	// overwritten when they are pooled: whatever still reads one then
	// reads garbage, not bytes that may happen to be the same. It also
	// marks each released unit, and Release panics at a unit released
	// again before it was handed out anew: harmless then (a released
	// unit is passed over), the same mistake made after its slab was
	// reused would release another's unit. Set it before the first unit.
	Poison bool

	// The decoding goroutine's.
	cur  *arenaSlab
	used int // units of cur handed out
	made int // slabs numbered
	size int // units a slab holds
	// reused counts the slabs opened again after their release,
	// bytesReused the pooled buffers Bytes gave out.
	reused, bytesReused int
	// slabs holds the numbered slabs by Unit.slab-1. An entry is written
	// before any unit of its slab is handed out, and never again.
	slabs [arenaSlabs]*arenaSlab

	mu   sync.Mutex
	free []*arenaSlab // released slabs, the last released last

	// owned holds the buffers units own alone (Own), pooled for Bytes
	// once their unit is released.
	owned Slots[[]byte]
	pool  *BufferPool

	slotsMu sync.Mutex
	slots   map[reflect.Type]any
	// clears holds every Slots, for Release: replaced, never changed,
	// when a Slots is made.
	clears atomic.Pointer[[]slotClearer]
}

const (
	// arenaSlabUnits is how many units a slab holds by default (64 KiB).
	arenaSlabUnits = 512
	// arenaSlabs is how many slabs an arena numbers and recycles: Unit
	// keeps its slab's number in a byte. `read` keeps some 40,000 units
	// in flight at most (80 default slabs).
	arenaSlabs = 255
	// arenaOpen is a slab's count while its units are being handed out:
	// releases take it down, the count handed out is added at the end.
	arenaOpen = 1 << 40
)

type arenaSlab struct {
	units []Unit
	// refs is arenaOpen minus the units released while the slab is the
	// current one; then the units handed out and not yet released. It
	// reaches zero once, when the slab is free.
	refs atomic.Int64
	num  uint8 // 1-based; 0 for a slab the arena does not recycle
}

// unitSize is the size of a Unit, the stride of a slab.
const unitSize = unsafe.Sizeof(Unit{})

// index returns u's index in s, or -1 when u does not lie in s (a copy
// of a unit of s carries its slab number but lies elsewhere).
func (s *arenaSlab) index(u *Unit) int {
	off := uintptr(unsafe.Pointer(u)) - uintptr(unsafe.Pointer(&s.units[0]))
	if off >= uintptr(len(s.units))*unitSize {
		return -1
	}
	return int(off / unitSize)
}

// NewArena returns an empty arena whose slabs hold slabUnits units
// each; 0 means 512 (64 KiB). Smaller slabs are reused sooner, larger
// ones cost fewer hand-overs.
func NewArena(slabUnits int) *Arena {
	if slabUnits <= 0 {
		slabUnits = arenaSlabUnits
	}
	a := &Arena{size: slabUnits, pool: NewBufferPool(poolBytes)}
	a.owned.a = a
	return a
}

// Bytes returns an empty buffer with room for n bytes: one a released
// unit owned (see Own) when one is pooled, a new one otherwise. A nil
// arena, or a small n, allocates.
func (a *Arena) Bytes(n int) []byte {
	if a == nil || n < poolMin {
		return MakeNoZero(n)
	}
	if b := a.pool.Get(n); b != nil {
		a.bytesReused++
		return b
	}
	return MakeNoZero(n)
}

// Own says that u alone reads b's array (its Raw, gathered in a buffer
// from Bytes or made for it): nothing else refers to it, and once u is
// released nobody does. The array is then pooled for Bytes. A unit the
// arena did not hand out, and a small b, are passed over. Call it on
// the goroutine that decodes, at most once for a unit.
func (a *Arena) Own(u *Unit, b []byte) {
	if a == nil || cap(b) < poolMin {
		return
	}
	if p := a.owned.Of(u); p != nil {
		*p = b[:0]
	}
}

// Unit returns a zero unit. A nil arena allocates one.
func (a *Arena) Unit() *Unit {
	if a == nil {
		return new(Unit)
	}
	if a.cur == nil || a.used == len(a.cur.units) {
		a.next()
	}
	// Zero: fresh, or cleared when released.
	u := &a.cur.units[a.used]
	a.used++
	u.slab = a.cur.num
	if a.Poison {
		u.Offset = 0 // the released mark
	}
	return u
}

// next closes the current slab and opens a released one, or a new one.
func (a *Arena) next() {
	if s := a.cur; s != nil && s.num != 0 {
		if s.refs.Add(int64(a.used)-arenaOpen) == 0 {
			a.put(s)
		}
	}
	a.mu.Lock()
	var s *arenaSlab
	if k := len(a.free); k > 0 {
		// The slab released last: its units are the likeliest to be
		// still in a cache.
		s = a.free[k-1]
		a.free[k-1] = nil
		a.free = a.free[:k-1]
		a.reused++
	}
	a.mu.Unlock()
	if s == nil {
		s = &arenaSlab{units: make([]Unit, a.size)}
		if a.made < arenaSlabs {
			a.made++
			s.num = uint8(a.made)
			a.slabs[s.num-1] = s
		}
	}
	s.refs.Store(arenaOpen)
	a.cur, a.used = s, 0
}

// ArenaStats says how much an arena recycled.
type ArenaStats struct {
	// Slabs is how many slabs of units it made to recycle (past
	// arenaSlabs, those it makes are not counted), Reused how many times
	// it opened one again after its release.
	Slabs, Reused int
	// BytesReused is how many buffers Bytes gave out again.
	BytesReused int
}

// Stats returns what a recycled so far; on the decoding goroutine, or
// once it is done.
func (a *Arena) Stats() ArenaStats {
	return ArenaStats{Slabs: a.made, Reused: a.reused, BytesReused: a.bytesReused}
}

func (a *Arena) put(s *arenaSlab) {
	a.mu.Lock()
	a.free = append(a.free, s)
	a.mu.Unlock()
}

// Release says that the units are no longer read by anyone: those the
// arena handed out are cleared, with their Slots, and reused. Units it
// did not hand out, and nil ones, are passed over. A unit must be
// released at most once.
//
// A unit is cleared at once, not when its slab is reused: what it
// points to (its bytes, its message: a megabyte body) is then garbage
// as it would be without an arena, where a slab that seldom fills (a
// few units with large bodies) would keep it for the whole run.
func (a *Arena) Release(units []*Unit) {
	if a == nil {
		return
	}
	var slots []slotClearer
	if c := a.clears.Load(); c != nil {
		slots = *c
	}
	// Units follow one another in their slab mostly as they were handed
	// out: the slots and buffers beside each run of them are seen to at
	// once, and each slab's count taken down once per run of its units.
	var s *arenaSlab // the run's slab
	i0, i1 := 0, 0   // the run: units i0 to i1-1 of s
	for _, u := range units {
		if u == nil || u.slab == 0 {
			if a.Poison && u != nil && u.Offset == releasedMark {
				panic("decode: Arena.Release: a unit released twice")
			}
			continue
		}
		t := a.slabs[u.slab-1]
		i := t.index(u)
		if i < 0 {
			continue
		}
		*u = Unit{}
		if a.Poison {
			u.Offset = releasedMark
		}
		if t == s && i == i1 {
			i1++
			continue
		}
		a.releaseRun(s, i0, i1, slots)
		s, i0, i1 = t, i, i+1
	}
	a.releaseRun(s, i0, i1, slots)
}

// releasedMark is the Offset of a released unit of a poisoned arena.
const releasedMark = -0x7e1ea5ed

// releaseRun ends the release of units i to j-1 of slab s: their slots
// cleared, the buffers they owned pooled, and the slab freed if they
// were its last.
func (a *Arena) releaseRun(s *arenaSlab, i, j int, slots []slotClearer) {
	if s == nil {
		return
	}
	n := s.num - 1
	for _, c := range slots {
		c.clearRange(n, i, j)
	}
	if by := a.owned.by[n].Load(); by != nil {
		for k := i; k < j; k++ {
			b := (*by)[k]
			if b == nil {
				continue
			}
			(*by)[k] = nil
			if a.Poison {
				b = b[:cap(b)]
				for x := range b {
					b[x] = 0xdb
				}
			}
			a.pool.Put(b)
		}
	}
	if s.refs.Add(-int64(j-i)) == 0 {
		a.put(s)
	}
}

// Slots keeps one T beside each unit an arena hands out, recycled with
// it: what a decoder attaches to the unit (an AMQP 0-9-1 decoder's
// assembled message) and that nothing but the unit refers to. Every
// decoder of an arena that asks for a type's Slots (SlotsOf) gets the
// same.
type Slots[T any] struct {
	a *Arena
	// by holds slab n's Ts, made when the first is asked for; Release
	// may look while a unit of the slab is still being decoded.
	by [arenaSlabs]atomic.Pointer[[]T]
}

// SlotsOf returns a's Slots of T; nil for a nil arena.
func SlotsOf[T any](a *Arena) *Slots[T] {
	if a == nil {
		return nil
	}
	a.slotsMu.Lock()
	defer a.slotsMu.Unlock()
	t := reflect.TypeFor[T]()
	if s, ok := a.slots[t].(*Slots[T]); ok {
		return s
	}
	if a.slots == nil {
		a.slots = make(map[reflect.Type]any)
	}
	s := &Slots[T]{a: a}
	a.slots[t] = s
	var clears []slotClearer
	if c := a.clears.Load(); c != nil {
		clears = append(clears, *c...)
	}
	clears = append(clears, s)
	a.clears.Store(&clears)
	return s
}

// slotClearer is a Slots, for Release.
type slotClearer interface {
	// clearRange zeroes the slots of units i to j-1 of the slab
	// numbered n+1, if it has any.
	clearRange(n uint8, i, j int)
}

func (s *Slots[T]) clearRange(n uint8, i, j int) {
	if by := s.by[n].Load(); by != nil {
		clear((*by)[i:j])
	}
}

// Of returns u's T, zero (fresh, or cleared when its last unit was
// released), or nil when u is not a unit the arena recycles (or s is
// nil): the caller then allocates its T as without an arena. Call it
// on the goroutine that decodes; the T is valid as long as u is.
func (s *Slots[T]) Of(u *Unit) *T {
	if s == nil || u.slab == 0 {
		return nil
	}
	n := u.slab - 1
	i := s.a.slabs[n].index(u)
	if i < 0 {
		return nil
	}
	by := s.by[n].Load()
	if by == nil {
		ts := make([]T, s.a.size)
		by = &ts
		s.by[n].Store(by)
	}
	return &(*by)[i]
}

const (
	// poolMin is the smallest buffer the arena pools: smaller ones cost
	// less to allocate than to keep.
	poolMin = 4 << 10
	// poolBytes bounds what the arena's pool keeps.
	poolBytes = 16 << 20
)

// BufferPool keeps byte buffers for reuse, the one put last given out
// first: the likeliest to be in a cache still (a queue would hand out
// the one put longest ago, which with twenty of 512 KiB is ten megabytes
// back). It keeps up to a number of bytes in all, and is safe for
// concurrent use. An arena keeps the buffers of released units in one;
// read keeps its output buffers in another.
type BufferPool struct {
	mu    sync.Mutex
	bufs  [][]byte
	bytes int
	max   int
}

// NewBufferPool returns an empty pool that keeps up to max bytes.
func NewBufferPool(max int) *BufferPool { return &BufferPool{max: max} }

// bufferProbes is how many of the latest buffers Get looks at.
const bufferProbes = 8

// Put keeps b's array for Get, unless the pool would then hold more than
// its bytes. b must not be used after.
func (p *BufferPool) Put(b []byte) {
	p.mu.Lock()
	if p.bytes+cap(b) <= p.max {
		p.bufs = append(p.bufs, b[:0])
		p.bytes += cap(b)
	}
	p.mu.Unlock()
}

// Get returns an empty buffer with room for n bytes, the latest put that
// has it (among the last few), or nil.
func (p *BufferPool) Get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.bufs) - 1; i >= 0 && i >= len(p.bufs)-bufferProbes; i-- {
		if b := p.bufs[i]; cap(b) >= n {
			last := len(p.bufs) - 1
			p.bufs[i] = p.bufs[last]
			p.bufs[last] = nil
			p.bufs = p.bufs[:last]
			p.bytes -= cap(b)
			return b
		}
	}
	return nil
}

// Take is Get, or a new buffer with room for n bytes when none pooled
// has it (its memory not cleared: see MakeNoZero).
func (p *BufferPool) Take(n int) []byte {
	if b := p.Get(n); b != nil {
		return b
	}
	return MakeNoZero(n)
}

// Bytes is how many bytes the pool keeps.
func (p *BufferPool) Bytes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytes
}
