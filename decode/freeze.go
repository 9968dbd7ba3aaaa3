package decode

import (
	"encoding/binary"
	"errors"
	"reflect"
	"unsafe"
)

// Freezing. A store holding millions of units (the TUI's) keeps most of
// them as compact records on disk and rebuilds a Unit when one is looked
// at, as Wireshark dissects a frame again when it is selected. The plain
// fields (N, Conn, time, Offset, Len, Raw, Type, Summary, Parent,
// Channel, Dir, Proto, HasChannel, Secret) are the store's to keep;
// [Unit.AppendFrozen] writes out the rest (which dissect function, the
// notes) and [Unit.Thaw] puts it back.
//
// A dissect function is frozen by its registration number, so only
// functions registered with [RegisterDissect] freeze: top-level
// functions, never closures or method values, whose state would be lost.
// An Ext freezes when it implements [FrozenExt] and its kind was
// registered with [RegisterExt]. A unit with anything else does not
// freeze, and its store keeps it whole.

var (
	dissectIDs = map[uintptr]uint32{}
	dissects   []frozenDissect // registration number n is dissects[n-1]
	extThaws   []func(u *Unit, b []byte) (any, error)
)

// frozenDissect is how units with one dissect function, or one kind of
// method value or closure, are frozen and thawed.
type frozenDissect struct {
	fn     func(*Unit) []*Field // a top-level function: thaw is fn itself
	freeze func(u *Unit, b []byte) ([]byte, bool)
	thaw   func(u *Unit, b []byte) (func(*Unit) []*Field, error)
}

// RegisterDissect registers top-level dissect functions so that units
// using them can be frozen. It is for package initialisation (init or a
// package-level var): registration is not safe to run concurrently with
// freezing. A closure or method value must not be registered here: every
// value of one literal shares its code, and its captured state would be
// lost (see [RegisterDissectState]).
func RegisterDissect(fns ...func(*Unit) []*Field) {
	for _, fn := range fns {
		register(fn, frozenDissect{fn: fn})
	}
}

// RegisterDissectState registers a kind of dissect function that carries
// state (a method value, such as every m.dissect of one type): sample is
// any value of it (they share their code); freeze appends the state of
// u.Dissect to b, or reports false when this one cannot be written out,
// and thaw rebuilds a dissect function from what freeze wrote, for u,
// whose plain fields (Raw among them) are already restored. For package
// initialisation, like RegisterDissect.
func RegisterDissectState(sample func(*Unit) []*Field, freeze func(u *Unit, b []byte) ([]byte, bool), thaw func(u *Unit, b []byte) (func(*Unit) []*Field, error)) {
	register(sample, frozenDissect{freeze: freeze, thaw: thaw})
}

func register(fn func(*Unit) []*Field, d frozenDissect) {
	p := reflect.ValueOf(fn).Pointer()
	if _, ok := dissectIDs[p]; ok {
		return
	}
	dissects = append(dissects, d)
	dissectIDs[p] = uint32(len(dissects))
}

// RegisterExt registers the function rebuilding an Ext of one kind from
// the bytes its [FrozenExt.AppendExt] wrote, and returns the kind's
// number, which the type's ExtKind must return. thaw is given the unit
// with its plain fields (Raw among them) already restored, so that an Ext
// may alias the unit's bytes again. For package initialisation, like
// RegisterDissect.
func RegisterExt(thaw func(u *Unit, b []byte) (any, error)) int {
	extThaws = append(extThaws, thaw)
	return len(extThaws)
}

// FrozenExt is implemented by an Ext that can be written out.
type FrozenExt interface {
	// ExtKind is the number RegisterExt gave the type's thaw function, or
	// 0 when this value cannot be frozen after all.
	ExtKind() int
	// AppendExt appends the value's encoding to b, for u, the unit that
	// carries it (so that bytes aliasing u.Raw need not be written twice).
	AppendExt(u *Unit, b []byte) []byte
}

// Flags of the frozen form.
const (
	frozenErr = 1 << iota
	frozenWarnings
	frozenMessageID
	frozenChecksum
	frozenExt
)

// Frozen reports whether u can be frozen (see [Unit.AppendFrozen])
// without writing anything.
func (u *Unit) Frozen() bool {
	if u.Dissect != nil && dissectIDs[reflect.ValueOf(u.Dissect).Pointer()] == 0 {
		return false
	}
	_, ok := u.frozenExt()
	return ok
}

// frozenExt returns the unit's Ext as a FrozenExt (nil without one), and
// whether it freezes.
func (u *Unit) frozenExt() (FrozenExt, bool) {
	if u.notes == nil || u.notes.ext == nil {
		return nil, true
	}
	x, ok := u.notes.ext.(FrozenExt)
	if !ok || x.ExtKind() <= 0 || x.ExtKind() > len(extThaws) {
		return nil, false
	}
	return x, true
}

// AppendFrozen appends to b what [Unit.Thaw] needs to restore u's dissect
// function and notes. It returns b unchanged and false when u cannot be
// frozen (see [Unit.Frozen]).
func (u *Unit) AppendFrozen(b []byte) ([]byte, bool) {
	mark := len(b)
	b, ok := AppendDissect(b, u, u.Dissect)
	if !ok {
		return b[:mark], false
	}
	n := u.notes
	x, ok := u.frozenExt()
	if !ok {
		return b[:mark], false
	}
	if n == nil {
		return append(b, 0), true
	}
	var flags byte
	if n.err != "" {
		flags |= frozenErr
	}
	if len(n.warnings) > 0 {
		flags |= frozenWarnings
	}
	if n.messageID != "" {
		flags |= frozenMessageID
	}
	if n.checksum != nil {
		flags |= frozenChecksum
	}
	if x != nil {
		flags |= frozenExt
	}
	b = append(b, flags)
	if n.err != "" {
		b = appendString(b, n.err)
	}
	if len(n.warnings) > 0 {
		b = binary.AppendUvarint(b, uint64(len(n.warnings)))
		for _, w := range n.warnings {
			b = appendString(b, w)
		}
	}
	if n.messageID != "" {
		b = appendString(b, n.messageID)
	}
	if c := n.checksum; c != nil {
		b = appendString(b, c.Algorithm)
		b = append(b, byte(c.Status))
		b = binary.BigEndian.AppendUint32(b, c.Expected)
		b = binary.BigEndian.AppendUint32(b, c.Actual)
	}
	if x != nil {
		b = binary.AppendUvarint(b, uint64(x.ExtKind()))
		b = appendSized(b, func(b []byte) []byte { return x.AppendExt(u, b) })
	}
	return b, true
}

// AppendDissect appends to b the frozen form of dissect function fn of
// unit u (nil included), for a stateful dissect function that wraps
// another and freezes it with its own state. It reports false when fn
// cannot be frozen.
func AppendDissect(b []byte, u *Unit, fn func(*Unit) []*Field) ([]byte, bool) {
	var id uint32
	if fn != nil {
		if id = dissectIDs[reflect.ValueOf(fn).Pointer()]; id == 0 {
			return b, false
		}
	}
	b = binary.AppendUvarint(b, uint64(id))
	if id > 0 && dissects[id-1].freeze != nil {
		ok := true
		b = appendSized(b, func(b []byte) []byte {
			b, ok = dissects[id-1].freeze(u, b)
			return b
		})
		return b, ok
	}
	return b, true
}

// ThawDissect reads what AppendDissect wrote at the start of b and returns
// the dissect function and the rest of b.
func ThawDissect(u *Unit, b []byte) (func(*Unit) []*Field, []byte, error) {
	id, k := binary.Uvarint(b)
	if k <= 0 || id > uint64(len(dissects)) {
		return nil, b, errFrozen
	}
	b = b[k:]
	if id == 0 {
		return nil, b, nil
	}
	d := dissects[id-1]
	if d.thaw == nil {
		return d.fn, b, nil
	}
	state, rest, ok := readSized(b)
	if !ok {
		return nil, b, errFrozen
	}
	fn, err := d.thaw(u, state)
	return fn, rest, err
}

// Receiver returns the receiver of f, a method value of *T: the gc
// toolchain represents one as a pointer to {code pointer, receiver}.
// Check the layout with [ReceiverLayout] before relying on it.
func Receiver[T any](f func(*Unit) []*Field) *T {
	type closure struct {
		code uintptr
		recv *T
	}
	return (*(**closure)(unsafe.Pointer(&f))).recv
}

// ReceiverLayout reports whether Receiver reads method values of *T
// right: method(p) must be p's method value for any p.
func ReceiverLayout[T any](method func(p *T) func(*Unit) []*Field) bool {
	a, b := new(T), new(T)
	return Receiver[T](method(a)) == a && Receiver[T](method(b)) == b
}

// A Binder makes method values of one method of *T without allocating
// each: the caller keeps the {code pointer, receiver} pair that a method
// value points to (the gc toolchain's representation, as [Receiver]
// reads it) in memory it already has, a slab of the receivers, say. A
// decoder that hands a method value to every unit completing a message
// saves an allocation per message this way.
type Binder[T any] struct {
	method func(p *T) func(*Unit) []*Field
	code   uintptr // zero when the layout is not the expected one
}

// Bound is the memory a method value made by a [Binder] points to; it
// must stay where it is while the method value is in use (a field of the
// receiver does).
type Bound[T any] struct {
	code uintptr
	recv *T
}

// NewBinder returns a Binder for method (method(p) is p's method value).
// Where the toolchain lays method values out otherwise, its Bind makes
// them with method, allocating as usual.
func NewBinder[T any](method func(p *T) func(*Unit) []*Field) Binder[T] {
	b := Binder[T]{method: method}
	if !ReceiverLayout(method) {
		return b
	}
	f := method(new(T))
	if code := (*(**Bound[T])(unsafe.Pointer(&f))).code; code == reflect.ValueOf(f).Pointer() {
		b.code = code
	}
	return b
}

// Bind returns recv's method value, pointing to at, which it fills in.
func (b Binder[T]) Bind(at *Bound[T], recv *T) func(*Unit) []*Field {
	if b.code == 0 {
		return b.method(recv)
	}
	at.code, at.recv = b.code, recv
	p := unsafe.Pointer(at)
	return *(*func(*Unit) []*Field)(unsafe.Pointer(&p))
}

// appendSized appends what fn appends, preceded by its length in four
// bytes.
func appendSized(b []byte, fn func([]byte) []byte) []byte {
	mark := len(b)
	b = fn(append(b, 0, 0, 0, 0))
	binary.BigEndian.PutUint32(b[mark:], uint32(len(b)-mark-4))
	return b
}

// readSized reads what appendSized wrote.
func readSized(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	l := binary.BigEndian.Uint32(b)
	if uint64(l) > uint64(len(b)-4) {
		return nil, b, false
	}
	return b[4 : 4+l], b[4+l:], true
}

// errFrozen is what Thaw returns for bytes AppendFrozen did not write.
var errFrozen = errors.New("decode: frozen unit: malformed")

// Thaw restores into u, whose plain fields are already set, the dissect
// function and notes that AppendFrozen wrote into b.
func (u *Unit) Thaw(b []byte) error {
	fn, b, err := ThawDissect(u, b)
	if err != nil {
		return err
	}
	u.Dissect = fn
	if len(b) == 0 {
		return errFrozen
	}
	flags := b[0]
	b = b[1:]
	if flags == 0 {
		u.notes = nil
		return nil
	}
	n := new(unitNotes)
	var ok bool
	if flags&frozenErr != 0 {
		if n.err, b, ok = readString(b); !ok {
			return errFrozen
		}
	}
	if flags&frozenWarnings != 0 {
		c, k := binary.Uvarint(b)
		if k <= 0 || c > uint64(len(b)) {
			return errFrozen
		}
		b = b[k:]
		n.warnings = make([]string, c)
		for i := range n.warnings {
			if n.warnings[i], b, ok = readString(b); !ok {
				return errFrozen
			}
		}
	}
	if flags&frozenMessageID != 0 {
		if n.messageID, b, ok = readString(b); !ok {
			return errFrozen
		}
	}
	if flags&frozenChecksum != 0 {
		c := new(Checksum)
		if c.Algorithm, b, ok = readString(b); !ok || len(b) < 9 {
			return errFrozen
		}
		c.Status = ChecksumStatus(b[0])
		c.Expected = binary.BigEndian.Uint32(b[1:])
		c.Actual = binary.BigEndian.Uint32(b[5:])
		b = b[9:]
		n.checksum = c
	}
	u.notes = n
	if flags&frozenExt != 0 {
		kind, k := binary.Uvarint(b)
		if k <= 0 || kind == 0 || kind > uint64(len(extThaws)) {
			return errFrozen
		}
		v, _, ok := readSized(b[k:])
		if !ok {
			return errFrozen
		}
		x, err := extThaws[kind-1](u, v)
		if err != nil {
			return err
		}
		n.ext = x
	}
	return nil
}

// SetUnixNano sets the unit's capture time from nanoseconds since the Unix
// epoch; [NoTime] means unknown. It is the inverse of [Unit.UnixNano].
func (u *Unit) SetUnixNano(ns int64) {
	if ns == NoTime {
		u.ns, u.hasTime = 0, false
		return
	}
	u.ns, u.hasTime = ns, true
}

// AppendBytes appends v to b preceded by its length (a uvarint): the
// field of a frozen form that ReadBytes reads back.
func AppendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// ReadBytes reads what AppendBytes wrote at the start of b: v (a slice of
// b, nil when empty) and the rest.
func ReadBytes(b []byte) (v, rest []byte, ok bool) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return nil, b, false
	}
	if l == 0 {
		return nil, b[k:], true
	}
	end := k + int(l)
	return b[k:end:end], b[end:], true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(b []byte) (string, []byte, bool) {
	v, rest, ok := ReadBytes(b)
	return string(v), rest, ok
}

// AppendFields appends an encoding of the field trees fs that
// [ReadFields] reads back, for Ext values whose state includes fields (an
// AMQP 1.0 message's immutability verdict). It reports false when a value
// is of a type it does not encode ([]byte and time.Time among them).
func AppendFields(b []byte, fs []*Field) ([]byte, bool) {
	b = binary.AppendUvarint(b, uint64(len(fs)))
	for _, f := range fs {
		b = appendString(b, f.Key)
		b = appendString(b, f.Name)
		b = appendString(b, f.Display)
		b = appendString(b, f.Encoding)
		b = binary.AppendVarint(b, int64(f.Offset))
		b = binary.AppendVarint(b, int64(f.Length))
		b = append(b, byte(f.Kind))
		switch v := f.Value.(type) {
		case nil:
			b = append(b, 0)
		case string:
			b = appendString(append(b, 1), v)
		case uint64:
			b = binary.AppendUvarint(append(b, 2), v)
		case int64:
			b = binary.AppendVarint(append(b, 3), v)
		case bool:
			if v {
				b = append(b, 5)
			} else {
				b = append(b, 4)
			}
		default:
			return b, false
		}
		var ok bool
		if b, ok = AppendFields(b, f.Kids); !ok {
			return b, false
		}
	}
	return b, true
}

// ReadFields reads what AppendFields wrote, returning the rest of b.
func ReadFields(b []byte) ([]*Field, []byte, error) { return readFields(b, 0) }

func readFields(b []byte, depth int) ([]*Field, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) || depth > 64 {
		return nil, b, errFrozen
	}
	b = b[k:]
	if n == 0 {
		return nil, b, nil
	}
	fs := make([]*Field, n)
	for i := range fs {
		f := new(Field)
		var ok bool
		for _, s := range []*string{&f.Key, &f.Name, &f.Display, &f.Encoding} {
			if *s, b, ok = readString(b); !ok {
				return nil, b, errFrozen
			}
		}
		off, k1 := binary.Varint(b)
		if k1 <= 0 {
			return nil, b, errFrozen
		}
		length, k2 := binary.Varint(b[k1:])
		if k2 <= 0 || len(b) < k1+k2+2 {
			return nil, b, errFrozen
		}
		f.Offset, f.Length = int(off), int(length)
		b = b[k1+k2:]
		f.Kind = Kind(b[0])
		tag := b[1]
		b = b[2:]
		switch tag {
		case 0:
		case 1:
			var s string
			if s, b, ok = readString(b); !ok {
				return nil, b, errFrozen
			}
			f.Value = s
		case 2:
			v, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, b, errFrozen
			}
			f.Value, b = v, b[k:]
		case 3:
			v, k := binary.Varint(b)
			if k <= 0 {
				return nil, b, errFrozen
			}
			f.Value, b = v, b[k:]
		case 4, 5:
			f.Value = tag == 5
		default:
			return nil, b, errFrozen
		}
		var err error
		if f.Kids, b, err = readFields(b, depth+1); err != nil {
			return nil, b, err
		}
		fs[i] = f
	}
	return fs, b, nil
}

// CanAppendFields reports whether AppendFields encodes every value of fs.
func CanAppendFields(fs []*Field) bool {
	ok := true
	Walk(fs, func(f *Field) bool {
		switch f.Value.(type) {
		case nil, string, uint64, int64, bool:
		default:
			ok = false
		}
		return ok
	})
	return ok
}
