package amqp10

import (
	"encoding/binary"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// Code is a constructor code: the first byte of an encoded value, naming its
// type and encoding (AMQP 1.0 §1.2, types.xml §1.6).
type Code uint8

// Constructor codes of types.xml §1.6. CodeDescribed (0x00) is not a type:
// it introduces a descriptor followed by the constructor of the value.
const (
	CodeDescribed  Code = 0x00
	CodeNull       Code = 0x40
	CodeTrue       Code = 0x41
	CodeFalse      Code = 0x42
	CodeUint0      Code = 0x43
	CodeUlong0     Code = 0x44
	CodeList0      Code = 0x45
	CodeBoolean    Code = 0x56
	CodeUbyte      Code = 0x50
	CodeByte       Code = 0x51
	CodeSmallUint  Code = 0x52
	CodeSmallUlong Code = 0x53
	CodeSmallInt   Code = 0x54
	CodeSmallLong  Code = 0x55
	CodeUshort     Code = 0x60
	CodeShort      Code = 0x61
	CodeUint       Code = 0x70
	CodeInt        Code = 0x71
	CodeFloat      Code = 0x72
	CodeChar       Code = 0x73
	CodeDecimal32  Code = 0x74
	CodeUlong      Code = 0x80
	CodeLong       Code = 0x81
	CodeDouble     Code = 0x82
	CodeTimestamp  Code = 0x83
	CodeDecimal64  Code = 0x84
	CodeDecimal128 Code = 0x94
	CodeUUID       Code = 0x98
	CodeVbin8      Code = 0xa0
	CodeStr8       Code = 0xa1
	CodeSym8       Code = 0xa3
	CodeVbin32     Code = 0xb0
	CodeStr32      Code = 0xb1
	CodeSym32      Code = 0xb3
	CodeList8      Code = 0xc0
	CodeMap8       Code = 0xc1
	CodeList32     Code = 0xd0
	CodeMap32      Code = 0xd1
	CodeArray8     Code = 0xe0
	CodeArray32    Code = 0xf0
)

type category uint8

const (
	categoryNone category = iota
	categoryFixed
	categoryVariable
	categoryCompound
	categoryArray
)

// encoding describes one constructor (generated from types.xml).
type encoding struct {
	name     string // "smallulong", "str8-utf8"
	typ      string // "ulong", "string"
	category category
	width    int // fixed: data bytes; variable/compound/array: size-field bytes
}

// Valid reports whether c is a constructor of the specification.
func (c Code) Valid() bool { return encodings[c].category != categoryNone }

// String returns the encoding's name from types.xml ("smallulong",
// "str8-utf8", "list0"), or "0xNN" for a code the specification does not
// define.
func (c Code) String() string {
	if c == CodeDescribed {
		return "described"
	}
	if e := &encodings[c]; e.category != categoryNone {
		return e.name
	}
	return hexByte(byte(c))
}

// Type returns the AMQP type the constructor encodes ("ulong", "string").
func (c Code) Type() string {
	if e := &encodings[c]; e.category != categoryNone {
		return e.typ
	}
	return "unknown"
}

// Encoding renders the constructor for the detail view: "smallulong 0x53".
func (c Code) Encoding() string { return codeEncodings[byte(c)] }

// codeEncodings holds Encoding's text for every constructor byte, built
// once: field trees ask for it for every value.
var codeEncodings = func() (t [256]string) {
	for i := range t {
		t[i] = Code(i).String() + " " + hexByte(byte(i))
	}
	return t
}()

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{'0', 'x', digits[b>>4], digits[b&15]})
}

// maxDepth bounds the nesting of descriptors and compound values the
// scanner and materialiser follow, so hostile input cannot exhaust the stack.
const maxDepth = 64

// Value locates one encoded value inside a buffer without materialising it.
// All offsets index the buffer the value was scanned from.
type Value struct {
	// Start is the offset of the value's first byte: the 0x00 of its
	// descriptor when described, else its constructor.
	Start int
	// End is the offset just past the value.
	End int
	// Code is the value's constructor (after any descriptor). Inside an
	// array, it is the array's element constructor.
	Code Code
	// DescStart and DescEnd bound the descriptor value; both are 0 when the
	// value is not described.
	DescStart, DescEnd int
	// Data is the offset of the value's data: after the constructor and
	// after the size and count fields of variable, compound and array
	// encodings. For an array it is the first element, after the element
	// constructor.
	Data int
	// Count is the number of items of a list, of keys plus values of a map,
	// and of elements of an array.
	Count int
	// Elem describes the element constructor of an array (its Code,
	// DescStart and DescEnd); only meaningful when Code is an array.
	Elem ElemConstructor
}

// ElemConstructor is the single constructor shared by all elements of an
// array (§1.4), possibly described.
type ElemConstructor struct {
	Code               Code
	DescStart, DescEnd int
	// Start is the offset of the element constructor (0x00 if described).
	Start int
}

// Described reports whether the value carries a descriptor.
func (v *Value) Described() bool { return v.DescEnd > v.DescStart }

// Len is the number of bytes the value occupies.
func (v *Value) Len() int { return v.End - v.Start }

func errAt(off int, msg string) error {
	return &decode.OffsetError{Proto: "amqp1.0", Offset: int64(off), Msg: msg}
}

func truncAt(off int, what string) error {
	return &decode.OffsetError{Proto: "amqp1.0", Offset: int64(off), Msg: "truncated " + what}
}

// IsTruncated reports whether err says the input ended inside a value.
func IsTruncated(err error) bool {
	oe, ok := err.(*decode.OffsetError)
	return ok && len(oe.Msg) >= 9 && oe.Msg[:9] == "truncated"
}

// Scan locates the value that starts at b[off]. It reads only the
// constructor, descriptor and size fields, so it costs the same for a
// 10-byte string and a 10 MB list, and allocates nothing.
func Scan(b []byte, off int) (Value, error) { return scan(b, off, 0) }

// scan locates a value (see scanTo).
func scan(b []byte, off, depth int) (Value, error) {
	var v Value
	err := scanTo(b, off, depth, &v)
	return v, err
}

// scanTo is scan writing into *v (which it overwrites, on error too):
// loops that keep the values in place spare a copy of each. The common
// values are measured here (see scanShort), and so are those described
// by a one-byte descriptor (0x53, smallulong: every performative and
// every message section as peers send them); the rest by scanValue, which
// finds the same for these (TestScanShortAgreesWithScanValue).
func scanTo(b []byte, off, depth int, v *Value) (err error) {
	if off >= 0 && off < len(b) {
		if scanShort(b, off, depth, v) {
			v.Start = off
			return nil
		}
		if Code(b[off]) == CodeDescribed && depth <= maxDepth && off+3 < len(b) &&
			Code(b[off+1]) == CodeSmallUlong && scanShort(b, off+3, depth, v) {
			v.Start, v.DescStart, v.DescEnd = off, off+1, off+3
			return nil
		}
	}
	*v, err = scanValue(b, off, depth)
	return err
}

// scanShort measures the value whose constructor is at off (within b),
// and reports true, when it is one that needs no more than a look at its
// size and count fields: not described, of fixed width, a string, symbol
// or binary, or a list or map (those with four-byte sizes, and lists and
// maps, at a depth scanValue accepts). It sets *v's End, Code, Data and
// Count as scanValue would, and zeroes the rest; for anything else (an
// array, a described value), or anything scanValue would refuse, it
// reports false.
func scanShort(b []byte, off, depth int, v *Value) bool {
	code := Code(b[off])
	e := &encodings[code]
	switch {
	case e.category == categoryFixed:
		if end := off + 1 + e.width; end <= len(b) {
			*v = Value{End: end, Code: code, Data: off + 1}
			return true
		}
	case e.category == categoryVariable && e.width == 1 && off+1 < len(b):
		if end := off + 2 + int(b[off+1]); end <= len(b) {
			*v = Value{End: end, Code: code, Data: off + 2}
			return true
		}
	case e.category == categoryCompound && e.width == 1 && off+2 < len(b) && depth <= maxDepth:
		// The size counts the count byte and the items.
		n := int(b[off+1])
		end, c, data := off+2+n, int(b[off+2]), off+3
		if n >= 1 && end <= len(b) && c <= end-data && (code != CodeMap8 || c%2 == 0) {
			*v = Value{End: end, Code: code, Data: data, Count: c}
			return true
		}
	case e.width == 4 && off+4 < len(b) && depth <= maxDepth:
		// Four-byte sizes (go-amqp writes every list and map so); one
		// past maxInt, which int cannot hold, is left to scanValue.
		n32 := binary.BigEndian.Uint32(b[off+1:])
		if uint64(n32) > uint64(maxInt-off-5) {
			return false
		}
		n := int(n32)
		end := off + 5 + n
		if end > len(b) {
			return false
		}
		switch {
		case e.category == categoryVariable:
			*v = Value{End: end, Code: code, Data: off + 5}
			return true
		case e.category == categoryCompound && n >= 4:
			c32, data := binary.BigEndian.Uint32(b[off+5:]), off+9
			if uint64(c32) <= uint64(end-data) && (code != CodeMap32 || c32%2 == 0) {
				*v = Value{End: end, Code: code, Data: data, Count: int(c32)}
				return true
			}
		}
	}
	return false
}

func scanValue(b []byte, off, depth int) (Value, error) {
	v := Value{Start: off}
	if off < 0 || off >= len(b) {
		return v, truncAt(off, "value: no constructor")
	}
	if depth > maxDepth {
		return v, errAt(off, "values nested too deeply")
	}
	pos := off
	if Code(b[pos]) == CodeDescribed {
		d, err := scan(b, pos+1, depth+1)
		if err != nil {
			return v, err
		}
		v.DescStart, v.DescEnd = d.Start, d.End
		pos = d.End
		if pos >= len(b) {
			return v, truncAt(pos, "described value: no constructor after descriptor")
		}
		if Code(b[pos]) == CodeDescribed {
			return v, errAt(pos, "described value: descriptor of a descriptor's value is not supported")
		}
	}
	v.Code = Code(b[pos])
	end, data, count, elem, err := scanData(b, pos+1, v.Code, depth)
	if err != nil {
		return v, err
	}
	v.End, v.Data, v.Count, v.Elem = end, data, count, elem
	return v, nil
}

// scanData measures the data of a value whose constructor code was already
// read; off is just past the constructor.
func scanData(b []byte, off int, code Code, depth int) (end, data, count int, elem ElemConstructor, err error) {
	e := &encodings[code]
	switch e.category {
	case categoryFixed:
		if len(b)-off < e.width {
			return 0, 0, 0, elem, truncAt(off, code.String())
		}
		return off + e.width, off, 0, elem, nil
	case categoryVariable:
		n, p, err := readSize(b, off, e.width, code)
		if err != nil {
			return 0, 0, 0, elem, err
		}
		if len(b)-p < n {
			return 0, 0, 0, elem, truncAt(p, code.String()+" data")
		}
		return p + n, p, 0, elem, nil
	case categoryCompound, categoryArray:
		n, p, err := readSize(b, off, e.width, code)
		if err != nil {
			return 0, 0, 0, elem, err
		}
		if n < e.width {
			return 0, 0, 0, elem, errAt(off, code.String()+" size smaller than its count field")
		}
		if len(b)-p < n {
			return 0, 0, 0, elem, truncAt(p, code.String()+" data")
		}
		end = p + n
		c, q, _ := readSize(b, p, e.width, code)
		if e.category == categoryCompound {
			if code == CodeMap8 || code == CodeMap32 {
				if c%2 != 0 {
					return 0, 0, 0, elem, errAt(p, code.String()+" has an odd count")
				}
			}
			// Each item takes at least one byte: a count larger than
			// the bytes left is a lie that would make iteration slow.
			if c > end-q {
				return 0, 0, 0, elem, errAt(p, code.String()+" count exceeds its size")
			}
			return end, q, c, elem, nil
		}
		// Array: the element constructor, possibly described, follows.
		elem.Start = q
		if q >= end {
			return 0, 0, 0, elem, errAt(q, code.String()+": no element constructor")
		}
		if Code(b[q]) == CodeDescribed {
			d, err := scan(b[:end], q+1, depth+1)
			if err != nil {
				return 0, 0, 0, elem, err
			}
			elem.DescStart, elem.DescEnd = d.Start, d.End
			q = d.End
			if q >= end {
				return 0, 0, 0, elem, truncAt(q, code.String()+" element constructor")
			}
		}
		elem.Code = Code(b[q])
		if !elem.Code.Valid() || elem.Code == CodeDescribed {
			return 0, 0, 0, elem, errAt(q, "invalid array element constructor "+hexByte(b[q]))
		}
		q++
		// Each element needs at least one byte, except zero-width ones
		// (null, true, uint0, list0...), whose count costs nothing to
		// claim: bound it so a 5-byte array cannot ask for 4 billion
		// iterations.
		if c > end-q && (encodings[elem.Code].width > 0 || c > maxZeroWidthElems) {
			return 0, 0, 0, elem, errAt(p, code.String()+" count exceeds its size")
		}
		return end, q, c, elem, nil
	}
	return 0, 0, 0, elem, errAt(off-1, "invalid constructor "+hexByte(byte(code)))
}

func readSize(b []byte, off, width int, code Code) (n, next int, err error) {
	if width == 1 {
		if off >= len(b) {
			return 0, off, truncAt(off, code.String()+" size")
		}
		return int(b[off]), off + 1, nil
	}
	if len(b)-off < 4 {
		return 0, off, truncAt(off, code.String()+" size")
	}
	u := binary.BigEndian.Uint32(b[off:])
	if uint64(u) > uint64(maxInt) {
		return 0, off, errAt(off, code.String()+" size too large")
	}
	return int(u), off + 4, nil
}

const maxInt = int(^uint(0) >> 1)

// maxZeroWidthElems bounds the count of an array of zero-width elements.
const maxZeroWidthElems = 1 << 12

// Items iterates over the items of a list or map value (for a map, keys and
// values alternate) or the elements of an array, without allocating.
type Items struct {
	b     []byte
	pos   int
	end   int
	left  int
	elem  Code // array element constructor; 0 for lists and maps
	isArr bool
	depth int
	// Value is the current item. Inside an array, Start is the element's
	// first data byte (the element has no constructor of its own) and Code
	// is the array's element constructor.
	Value Value
	err   error
}

// Items returns an iterator over v's items. v must have been scanned from b.
func (v *Value) Items(b []byte) Items {
	it := Items{b: b, pos: v.Data, end: v.End, left: v.Count}
	switch v.Code {
	case CodeList8, CodeList32, CodeMap8, CodeMap32:
	case CodeArray8, CodeArray32:
		it.isArr, it.elem = true, v.Elem.Code
	default:
		it.left = 0
	}
	return it
}

// Next advances to the next item; it returns false at the end or on error.
func (it *Items) Next() bool {
	if it.left <= 0 || it.err != nil {
		return false
	}
	if it.isArr {
		v := Value{Start: it.pos, Code: it.elem}
		var err error
		v.End, v.Data, v.Count, v.Elem, err = scanData(it.b[:it.end], it.pos, it.elem, it.depth)
		if err != nil {
			it.err = err
			return false
		}
		it.Value = v
	} else {
		// Scanned in place; Value is left as it was when the item is
		// not whole.
		var v Value
		if err := scanTo(it.b[:it.end], it.pos, it.depth, &v); err != nil {
			it.err = err
			return false
		}
		it.Value = v
	}
	it.pos = it.Value.End
	it.left--
	return true
}

// Err returns the error that stopped iteration, if any.
func (it *Items) Err() error { return it.err }

// Uint returns the value of any unsigned integer encoding (ubyte, ushort,
// uint, smalluint, uint0, ulong, smallulong, ulong0).
func (v *Value) Uint(b []byte) (uint64, bool) {
	d := b[v.Data:v.End]
	switch v.Code {
	case CodeUint0, CodeUlong0:
		return 0, true
	case CodeUbyte, CodeSmallUint, CodeSmallUlong:
		return uint64(d[0]), true
	case CodeUshort:
		return uint64(binary.BigEndian.Uint16(d)), true
	case CodeUint:
		return uint64(binary.BigEndian.Uint32(d)), true
	case CodeUlong:
		return binary.BigEndian.Uint64(d), true
	}
	return 0, false
}

// Int returns the value of any signed integer encoding.
func (v *Value) Int(b []byte) (int64, bool) {
	d := b[v.Data:v.End]
	switch v.Code {
	case CodeByte, CodeSmallInt, CodeSmallLong:
		return int64(int8(d[0])), true
	case CodeShort:
		return int64(int16(binary.BigEndian.Uint16(d))), true
	case CodeInt:
		return int64(int32(binary.BigEndian.Uint32(d))), true
	case CodeLong, CodeTimestamp:
		return int64(binary.BigEndian.Uint64(d)), true
	}
	return 0, false
}

// Bool returns the value of a boolean in any of its three encodings.
func (v *Value) Bool(b []byte) (val, ok bool) {
	switch v.Code {
	case CodeTrue:
		return true, true
	case CodeFalse:
		return false, true
	case CodeBoolean:
		return b[v.Data] != 0, true
	}
	return false, false
}

// Bytes returns the data of a binary, string or symbol value (a sub-slice
// of b, not a copy).
func (v *Value) Bytes(b []byte) ([]byte, bool) {
	switch v.Code {
	case CodeVbin8, CodeVbin32, CodeStr8, CodeStr32, CodeSym8, CodeSym32:
		return b[v.Data:v.End], true
	}
	return nil, false
}

// IsNull reports whether the value is null.
func (v *Value) IsNull() bool { return v.Code == CodeNull && !v.Described() }

// Descriptor returns the numeric code or the symbol of a described value's
// descriptor. Symbolic descriptors of the specification's own types are
// mapped to their codes too.
func (v *Value) Descriptor(b []byte) (code uint64, sym []byte, ok bool) {
	if !v.Described() {
		return 0, nil, false
	}
	if v.DescEnd-v.DescStart == 2 && Code(b[v.DescStart]) == CodeSmallUlong {
		return uint64(b[v.DescStart+1]), nil, true // every performative and section
	}
	d, err := Scan(b[:v.DescEnd], v.DescStart)
	if err != nil {
		return 0, nil, false
	}
	if u, ok := d.Uint(b); ok && (d.Code == CodeUlong || d.Code == CodeSmallUlong || d.Code == CodeUlong0) {
		return u, nil, true
	}
	if s, ok := d.Bytes(b); ok && (d.Code == CodeSym8 || d.Code == CodeSym32) {
		if c, ok := descriptorBySymbol[string(s)]; ok {
			return c, s, true
		}
		return 0, s, true
	}
	return 0, nil, false
}

var descriptorBySymbol = func() map[string]uint64 {
	m := make(map[string]uint64, len(described))
	for c, t := range described {
		m[t.symbol] = c
	}
	return m
}()

// Composite is a described list (a performative, a section, a delivery
// state) whose fields have been located in place. Fields beyond N are
// absent; a present field may still be null.
type Composite struct {
	// List is the whole described value, descriptor included.
	List Value
	// Descriptor is the descriptor code (0 with Symbol set for an unknown
	// symbolic descriptor).
	Descriptor uint64
	Symbol     []byte
	// N is the number of fields present (at most len(Fields)).
	N      int
	Fields [maxCompositeFields]Value
}

// maxCompositeFields is the most fields any composite of the specification
// has (properties: 13) with room for extensions; later fields are ignored.
const maxCompositeFields = 24

// ScanComposite locates the composite value at b[off] and its fields,
// without allocating.
func ScanComposite(b []byte, off int, c *Composite) error {
	// Scanned into place: a Value is some hundred bytes, and copying it
	// twice was a good part of a small frame's decoding.
	c.N = 0
	if err := scanTo(b, off, 0, &c.List); err != nil {
		return err
	}
	return c.setFields(b)
}

// Set locates the fields of the described list v.
func (c *Composite) Set(b []byte, v Value) error { return c.setTo(b, &v) }

// setTo is Set with v by reference: one copy of it rather than two.
func (c *Composite) setTo(b []byte, v *Value) error {
	c.List = *v
	return c.setFields(b)
}

// setFields locates the fields of the described list c.List.
func (c *Composite) setFields(b []byte) error {
	v := &c.List
	c.N = 0
	code, sym, ok := v.Descriptor(b)
	if !ok {
		return errAt(v.Start, "expected a described type, got "+v.Code.String())
	}
	c.Descriptor, c.Symbol = code, sym
	if v.Code == CodeList0 {
		return nil
	}
	if v.Code != CodeList8 && v.Code != CodeList32 {
		return errAt(v.Start, "described type 0x"+strconv.FormatUint(code, 16)+" is a "+v.Code.String()+", not a list")
	}
	// The fields are scanned into place (v.Items(b) would find the same,
	// one copy of each Value later).
	b = b[:v.End]
	pos := v.Data
	for left := v.Count; left > 0; left-- {
		if c.N < maxCompositeFields {
			f := &c.Fields[c.N]
			if err := scanTo(b, pos, 0, f); err != nil {
				return err
			}
			c.N++
			pos = f.End
			continue
		}
		f, err := scan(b, pos, 0)
		if err != nil {
			return err
		}
		pos = f.End
	}
	return nil
}

// Field returns field i if present and not null.
func (c *Composite) Field(i int) (*Value, bool) {
	if i < 0 || i >= c.N || c.Fields[i].IsNull() {
		return nil, false
	}
	return &c.Fields[i], true
}

// Uint returns field i as an unsigned integer.
func (c *Composite) Uint(b []byte, i int) (uint64, bool) {
	if f, ok := c.Field(i); ok {
		return f.Uint(b)
	}
	return 0, false
}

// Bool returns field i as a boolean.
func (c *Composite) Bool(b []byte, i int) (val, ok bool) {
	if f, ok := c.Field(i); ok {
		return f.Bool(b)
	}
	return false, false
}

// Bytes returns field i's binary, string or symbol data.
func (c *Composite) Bytes(b []byte, i int) ([]byte, bool) {
	if f, ok := c.Field(i); ok {
		return f.Bytes(b)
	}
	return nil, false
}

// describedCodes is described as an array for the specification's
// codes, all below 0x80: a frame's performative and a message's sections
// are looked up in it, where the map cost a twentieth of a small
// transfer's decoding.
var describedCodes = func() (a [0x80]*describedType) {
	for code, t := range described {
		if code < uint64(len(a)) {
			a[code] = t
		}
	}
	return a
}()

// describedOf is described[code].
func describedOf(code uint64) *describedType {
	if code < uint64(len(describedCodes)) {
		return describedCodes[code]
	}
	return described[code]
}
