package filter

import (
	"sync"
	"sync/atomic"
)

// Memo remembers, per field name, what units hold for tree fields, so
// that filters compiled with it (CompileWith) do not look at those units'
// bytes again: which units lack the field, and for a few fields the value
// of units that hold it once as a plain number or string. Editing a
// filter's literal (delivery_tag > 10, then > 1) then costs about what a
// filter on a header field costs.
//
// A Memo is meant for one browsing session over one source: units are
// told apart by their number (decode.Unit.N, from 1), and what a unit's
// tree holds never changes once the unit is emitted. It is safe for
// concurrent use by the filters compiled with it. It keeps one bit per
// unit for up to maxMemoFields names, and values for the first
// maxValuedFields of them that have values to keep (a group such as
// amqp.method.arguments has none); further names are not remembered.
type Memo struct {
	mu     sync.Mutex
	fields map[string]*fieldMemo
	valued atomic.Int32 // fields granted values
}

// NewMemo returns an empty memo.
func NewMemo() *Memo { return &Memo{fields: map[string]*fieldMemo{}} }

const (
	maxMemoFields   = 64
	maxValuedFields = 6
	memoChunkUnits  = 1 << 16 // units per chunk
	memoChunks      = 1 << 11 // chunks per field: 134M units, 16 KiB of pointers
)

// fieldMemo is one field's memory, in chunks allocated as units are seen.
type fieldMemo struct {
	memo *Memo
	// valued says whether values are kept, not only absences: decided at
	// the first value offered (valuedUnknown until then).
	valued atomic.Int32
	chunks [memoChunks]atomic.Pointer[memoChunk]
}

const (
	valuedUnknown int32 = iota
	valuedYes
	valuedNo
)

// keepsValues reports whether f keeps values, asking for one of the
// memo's value slots the first time.
func (f *fieldMemo) keepsValues() bool {
	switch f.valued.Load() {
	case valuedYes:
		return true
	case valuedNo:
		return false
	}
	grant := valuedNo
	if f.memo.valued.Add(1) <= maxValuedFields {
		grant = valuedYes
	} else {
		f.memo.valued.Add(-1)
	}
	if !f.valued.CompareAndSwap(valuedUnknown, grant) && grant == valuedYes {
		f.memo.valued.Add(-1) // another goroutine decided first
	}
	return f.valued.Load() == valuedYes
}

// memoChunk holds memoChunkUnits units: a bit for "lacks the field", a bit
// for "its one occurrence is kept", and the kept values, whose arrays are
// allocated with the first value of their kind.
type memoChunk struct {
	absent, kept [memoChunkUnits / 64]atomic.Uint64
	// claimed says a goroutine has taken on writing a unit's value: two
	// runs over the same units (one being cancelled) never both write it.
	claimed [memoChunkUnits / 64]atomic.Uint64
	kinds   [memoChunkUnits]vkind
	nums    atomic.Pointer[[memoChunkUnits]uint64]
	strs    atomic.Pointer[[memoChunkUnits]string]
}

// field returns the memo of field name, nil when m is nil or full.
func (m *Memo) field(name string) *fieldMemo {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.fields[name]
	if f == nil && len(m.fields) < maxMemoFields {
		f = &fieldMemo{memo: m}
		m.fields[name] = f
	}
	return f
}

// chunk returns the chunk of unit n (nil if none yet and !alloc, or n is
// out of range) and n's index in it.
func (f *fieldMemo) chunk(n int, alloc bool) (*memoChunk, int) {
	if n <= 0 || n/memoChunkUnits >= memoChunks {
		return nil, 0
	}
	p := &f.chunks[n/memoChunkUnits]
	c := p.Load()
	if c == nil && alloc {
		c = new(memoChunk)
		if !p.CompareAndSwap(nil, c) {
			c = p.Load()
		}
	}
	return c, n % memoChunkUnits
}

// memoState is what a memo knows of a unit.
type memoState uint8

const (
	memoUnknown memoState = iota
	memoAbsent
	memoKept
)

// lookup says what is known of unit n; for memoKept it stores the value
// in v.
func (f *fieldMemo) lookup(n int, v *value) memoState {
	c, i := f.chunk(n, false)
	if c == nil {
		return memoUnknown
	}
	bit := uint64(1) << (i % 64)
	if c.absent[i/64].Load()&bit != 0 {
		return memoAbsent
	}
	if c.kept[i/64].Load()&bit == 0 {
		return memoUnknown
	}
	// The value was written before the kept bit was set (atomics are
	// sequentially consistent), so it is complete here.
	switch k := c.kinds[i]; k {
	case kString:
		v.setString(c.strs.Load()[i])
	default:
		*v = value{kind: k}
		x := c.nums.Load()[i]
		if k == kUint {
			v.u = x
		} else {
			v.i = int64(x)
		}
	}
	return memoKept
}

// markAbsent records that unit n lacks the field.
func (f *fieldMemo) markAbsent(n int) {
	if c, i := f.chunk(n, true); c != nil {
		c.absent[i/64].Or(1 << (i % 64))
	}
}

// keep records the one occurrence of the field in unit n when it is a
// plain number, boolean or string (no display text, which comparisons may
// use): v is what setField made of it.
func (f *fieldMemo) keep(n int, v *value) {
	if v.disp != "" {
		return
	}
	switch v.kind {
	case kInt, kUint, kBool, kString:
	default:
		return
	}
	if !f.keepsValues() {
		return
	}
	c, i := f.chunk(n, true)
	if c == nil {
		return
	}
	bit := uint64(1) << (i % 64)
	if c.claimed[i/64].Or(bit)&bit != 0 {
		return
	}
	if v.kind == kString {
		s := c.strs.Load()
		if s == nil {
			s = new([memoChunkUnits]string)
			if !c.strs.CompareAndSwap(nil, s) {
				s = c.strs.Load()
			}
		}
		s[i] = v.s
	} else {
		a := c.nums.Load()
		if a == nil {
			a = new([memoChunkUnits]uint64)
			if !c.nums.CompareAndSwap(nil, a) {
				a = c.nums.Load()
			}
		}
		if v.kind == kUint {
			a[i] = v.u
		} else {
			a[i] = uint64(v.i)
		}
	}
	c.kinds[i] = v.kind
	c.kept[i/64].Or(bit)
}
