package amqp091

import (
	"encoding/binary"
	"math"
	"time"
	"unicode/utf8"
)

// ValueType is a field-value type octet (spec §4.2.5.5 as RabbitMQ and the
// common clients read it; see doc.go for where that departs from the
// 0-9-1 grammar).
type ValueType byte

// Field-value types.
const (
	TypeBool      ValueType = 't' // boolean, one octet
	TypeInt8      ValueType = 'b' // short-short-int
	TypeUint8     ValueType = 'B' // short-short-uint
	TypeInt16     ValueType = 's' // short-int (RabbitMQ, Qpid, most clients)
	TypeInt16U    ValueType = 'U' // short-int (0-9-1 grammar spelling)
	TypeUint16    ValueType = 'u' // short-uint
	TypeInt32     ValueType = 'I' // long-int
	TypeUint32    ValueType = 'i' // long-uint
	TypeInt64     ValueType = 'l' // long-long-int (RabbitMQ)
	TypeUint64    ValueType = 'L' // long-long-uint
	TypeFloat     ValueType = 'f' // IEEE-754 single
	TypeDouble    ValueType = 'd' // IEEE-754 double
	TypeDecimal   ValueType = 'D' // scale octet + long-int
	TypeLongstr   ValueType = 'S' // long string
	TypeArray     ValueType = 'A' // field array
	TypeTimestamp ValueType = 'T' // seconds since the epoch, 64 bits
	TypeTable     ValueType = 'F' // nested field table
	TypeVoid      ValueType = 'V' // no value
	TypeBytes     ValueType = 'x' // byte array (RabbitMQ)
)

// String names the type as the detail view shows it ("S longstr").
func (t ValueType) String() string {
	switch t {
	case TypeBool:
		return "t bool"
	case TypeInt8:
		return "b int8"
	case TypeUint8:
		return "B uint8"
	case TypeInt16, TypeInt16U:
		return string(rune(t)) + " int16"
	case TypeUint16:
		return "u uint16"
	case TypeInt32:
		return "I int32"
	case TypeUint32:
		return "i uint32"
	case TypeInt64:
		return "l int64"
	case TypeUint64:
		return "L uint64"
	case TypeFloat:
		return "f float"
	case TypeDouble:
		return "d double"
	case TypeDecimal:
		return "D decimal"
	case TypeLongstr:
		return "S longstr"
	case TypeArray:
		return "A array"
	case TypeTimestamp:
		return "T timestamp"
	case TypeTable:
		return "F table"
	case TypeVoid:
		return "V void"
	case TypeBytes:
		return "x bytes"
	}
	return "unknown type 0x" + hexByte(byte(t))
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// fixedSize returns the encoded size of a fixed-width value, or -1 for
// variable-width types, -2 for unknown ones.
func fixedSize(t ValueType) int {
	switch t {
	case TypeBool, TypeInt8, TypeUint8:
		return 1
	case TypeInt16, TypeInt16U, TypeUint16:
		return 2
	case TypeInt32, TypeUint32, TypeFloat:
		return 4
	case TypeInt64, TypeUint64, TypeDouble, TypeTimestamp:
		return 8
	case TypeDecimal:
		return 5
	case TypeVoid:
		return 0
	case TypeLongstr, TypeArray, TypeTable, TypeBytes:
		return -1
	}
	return -2
}

// maxNesting bounds nested tables and arrays, so hostile input cannot
// exhaust the stack.
const maxNesting = 64

// Table is an encoded field table (spec §4.2.5.5) without its 4-byte length
// prefix. Decoding keeps tables as bytes; iterate them with [Table.Iter] or
// look up one key with [Table.Get], neither of which allocates. Build one
// with [Table.Append].
type Table []byte

// Array is an encoded field array without its 4-byte length prefix.
type Array []byte

// Value is one decoded field value. Slices it returns alias the table it
// came from.
type Value struct {
	Type ValueType
	num  uint64
	b    []byte
}

// Decimal is a field-table decimal: Value × 10^-Scale.
type Decimal struct {
	Scale uint8
	Value int32
}

// Bool returns a 't' value.
func (v Value) Bool() bool { return v.num != 0 }

// Int returns any integer type as int64 (uint64 values above MaxInt64 wrap).
func (v Value) Int() int64 {
	switch v.Type {
	case TypeInt8:
		return int64(int8(v.num))
	case TypeInt16, TypeInt16U:
		return int64(int16(v.num))
	case TypeInt32:
		return int64(int32(v.num))
	}
	return int64(v.num)
}

// Uint returns the raw unsigned bits of an integer, bool or timestamp value.
func (v Value) Uint() uint64 { return v.num }

// Float returns 'f' and 'd' values.
func (v Value) Float() float64 {
	if v.Type == TypeFloat {
		return float64(math.Float32frombits(uint32(v.num)))
	}
	return math.Float64frombits(v.num)
}

// Decimal returns a 'D' value.
func (v Value) Decimal() Decimal {
	return Decimal{Scale: uint8(v.num >> 32), Value: int32(uint32(v.num))}
}

// Time returns a 'T' value.
func (v Value) Time() time.Time { return time.Unix(int64(v.num), 0).UTC() }

// Bytes returns the content of 'S' and 'x' values.
func (v Value) Bytes() []byte { return v.b }

// Table returns an 'F' value.
func (v Value) Table() Table { return Table(v.b) }

// Array returns an 'A' value.
func (v Value) Array() Array { return Array(v.b) }

// Any returns the value as a Go value: bool, int64, uint64 (for 'B', 'u',
// 'i', 'L'), float64, Decimal, string ('S' holding UTF-8), []byte ('x', and
// 'S' that is not UTF-8), time.Time, map[string]any, []any, or nil. It
// allocates; it is meant for display and tests.
func (v Value) Any() any {
	switch v.Type {
	case TypeBool:
		return v.Bool()
	case TypeInt8, TypeInt16, TypeInt16U, TypeInt32, TypeInt64:
		return v.Int()
	case TypeUint8, TypeUint16, TypeUint32, TypeUint64:
		return v.num
	case TypeFloat, TypeDouble:
		return v.Float()
	case TypeDecimal:
		return v.Decimal()
	case TypeTimestamp:
		return v.Time()
	case TypeLongstr:
		if utf8.Valid(v.b) {
			return string(v.b)
		}
		return append([]byte(nil), v.b...)
	case TypeBytes:
		return append([]byte(nil), v.b...)
	case TypeTable:
		m, _ := v.Table().Map()
		return m
	case TypeArray:
		a, _ := v.Array().Slice()
		return a
	}
	return nil
}

// readValue decodes the value of type t at b[off:]; it returns the value and
// the offset after it, or a problem.
func readValue(t ValueType, b []byte, off int) (Value, int, *FormatError) {
	v := Value{Type: t}
	n := fixedSize(t)
	switch {
	case n == -2:
		return v, off, &FormatError{Op: "table", Offset: off - 1, Msg: "unknown field type " + t.String()}
	case n >= 0:
		if n > len(b)-off {
			return v, off, &FormatError{Op: "table", Offset: len(b), Msg: msgTruncated}
		}
		p := b[off : off+n]
		switch n {
		case 1:
			v.num = uint64(p[0])
		case 2:
			v.num = uint64(binary.BigEndian.Uint16(p))
		case 4:
			v.num = uint64(binary.BigEndian.Uint32(p))
		case 5:
			v.num = uint64(p[0])<<32 | uint64(binary.BigEndian.Uint32(p[1:]))
		case 8:
			v.num = binary.BigEndian.Uint64(p)
		}
		return v, off + n, nil
	}
	if 4 > len(b)-off {
		return v, off, &FormatError{Op: "table", Offset: len(b), Msg: msgTruncated}
	}
	l := binary.BigEndian.Uint32(b[off:])
	if uint64(l) > uint64(len(b)-off-4) {
		return v, off, &FormatError{Op: "table", Offset: off, Msg: "length " + uitoa(uint64(l)) + " overruns the table"}
	}
	end := off + 4 + int(l)
	v.b = b[off+4 : end : end]
	return v, end, nil
}

// validateFields walks an encoded table (keyed) or array once, recursively.
func validateFields(b []byte, keyed bool, depth int) *FormatError {
	if depth > maxNesting {
		return &FormatError{Op: "table", Offset: 0, Msg: "nesting deeper than " + uitoa(maxNesting)}
	}
	off := 0
	for off < len(b) {
		if keyed {
			k := int(b[off])
			if k+1 > len(b)-off {
				return &FormatError{Op: "table", Offset: len(b), Msg: msgTruncated}
			}
			off += 1 + k
			if off >= len(b) {
				return &FormatError{Op: "table", Offset: len(b), Msg: msgTruncated}
			}
		}
		t := ValueType(b[off])
		v, next, err := readValue(t, b, off+1)
		if err != nil {
			return err
		}
		if t == TypeTable || t == TypeArray {
			if err := validateFields(v.b, t == TypeTable, depth+1); err != nil {
				err.Offset += off + 5
				return err
			}
		}
		off = next
	}
	return nil
}

// Validate checks the whole table, nested tables and arrays included.
func (t Table) Validate() error {
	if err := validateFields(t, true, 0); err != nil {
		return err
	}
	return nil
}

// TableIter iterates over a table's fields or an array's elements without
// allocating.
type TableIter struct {
	b     []byte
	keyed bool
	off   int
	start int
	key   []byte
	val   Value
	err   *FormatError
}

// Iter returns an iterator over the table's fields, in wire order.
func (t Table) Iter() TableIter { return TableIter{b: t, keyed: true} }

// Iter returns an iterator over the array's elements; Key is always nil.
func (a Array) Iter() TableIter { return TableIter{b: a} }

// Next advances to the next field; it returns false at the end or on
// malformed input (see Err).
func (it *TableIter) Next() bool {
	if it.err != nil || it.off >= len(it.b) {
		return false
	}
	it.start = it.off
	off := it.off
	if it.keyed {
		k := int(it.b[off])
		if k+1 >= len(it.b)-off {
			it.err = &FormatError{Op: "table", Offset: len(it.b), Msg: msgTruncated}
			return false
		}
		it.key = it.b[off+1 : off+1+k : off+1+k]
		off += 1 + k
	}
	t := ValueType(it.b[off])
	v, next, err := readValue(t, it.b, off+1)
	if err != nil {
		it.err = err
		return false
	}
	it.val, it.off = v, next
	return true
}

// Key returns the current field's name.
func (it *TableIter) Key() []byte { return it.key }

// Value returns the current field's value.
func (it *TableIter) Value() Value { return it.val }

// Offset returns where the current field (its key, for tables) starts in the
// table or array bytes.
func (it *TableIter) Offset() int { return it.start }

// End returns where the current field ends.
func (it *TableIter) End() int { return it.off }

// Err returns the problem that stopped iteration, if any.
func (it *TableIter) Err() error {
	if it.err != nil {
		return it.err
	}
	return nil
}

// Get returns the value of the first field named key.
func (t Table) Get(key string) (Value, bool) {
	it := t.Iter()
	for it.Next() {
		if string(it.key) == key {
			return it.val, true
		}
	}
	return Value{}, false
}

// Map materialises the table (see [Value.Any] for the value types).
func (t Table) Map() (map[string]any, error) {
	m := make(map[string]any)
	it := t.Iter()
	for it.Next() {
		m[string(it.key)] = it.val.Any()
	}
	return m, it.Err()
}

// Slice materialises the array.
func (a Array) Slice() ([]any, error) {
	var s []any
	it := a.Iter()
	for it.Next() {
		s = append(s, it.val.Any())
	}
	return s, it.Err()
}

// Append returns t with the field key = v added. Keys longer than 255 bytes
// are cut.
func (t Table) Append(key string, v Value) Table {
	if len(key) > math.MaxUint8 {
		key = key[:math.MaxUint8]
	}
	t = append(t, byte(len(key)))
	t = append(t, key...)
	return Table(appendValue([]byte(t), v))
}

// Append returns a with v added.
func (a Array) Append(v Value) Array { return Array(appendValue([]byte(a), v)) }

func appendValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Type))
	switch fixedSize(v.Type) {
	case 0:
	case 1:
		dst = append(dst, byte(v.num))
	case 2:
		dst = binary.BigEndian.AppendUint16(dst, uint16(v.num))
	case 4:
		dst = binary.BigEndian.AppendUint32(dst, uint32(v.num))
	case 5:
		dst = append(dst, byte(v.num>>32))
		dst = binary.BigEndian.AppendUint32(dst, uint32(v.num))
	case 8:
		dst = binary.BigEndian.AppendUint64(dst, v.num)
	default:
		dst = appendLongstr(dst, v.b)
	}
	return dst
}

// BoolValue returns a 't' value.
func BoolValue(b bool) Value {
	v := Value{Type: TypeBool}
	if b {
		v.num = 1
	}
	return v
}

// Int8Value returns a 'b' value.
func Int8Value(i int8) Value { return Value{Type: TypeInt8, num: uint64(uint8(i))} }

// Uint8Value returns a 'B' value.
func Uint8Value(i uint8) Value { return Value{Type: TypeUint8, num: uint64(i)} }

// Int16Value returns an 's' value.
func Int16Value(i int16) Value { return Value{Type: TypeInt16, num: uint64(uint16(i))} }

// Uint16Value returns a 'u' value.
func Uint16Value(i uint16) Value { return Value{Type: TypeUint16, num: uint64(i)} }

// Int32Value returns an 'I' value.
func Int32Value(i int32) Value { return Value{Type: TypeInt32, num: uint64(uint32(i))} }

// Uint32Value returns an 'i' value.
func Uint32Value(i uint32) Value { return Value{Type: TypeUint32, num: uint64(i)} }

// Int64Value returns an 'l' value.
func Int64Value(i int64) Value { return Value{Type: TypeInt64, num: uint64(i)} }

// Uint64Value returns an 'L' value (RabbitMQ itself never sends one).
func Uint64Value(i uint64) Value { return Value{Type: TypeUint64, num: i} }

// FloatValue returns an 'f' value.
func FloatValue(f float32) Value { return Value{Type: TypeFloat, num: uint64(math.Float32bits(f))} }

// DoubleValue returns a 'd' value.
func DoubleValue(f float64) Value { return Value{Type: TypeDouble, num: math.Float64bits(f)} }

// DecimalValue returns a 'D' value.
func DecimalValue(d Decimal) Value {
	return Value{Type: TypeDecimal, num: uint64(d.Scale)<<32 | uint64(uint32(d.Value))}
}

// LongstrValue returns an 'S' value holding s (not copied).
func LongstrValue(s []byte) Value { return Value{Type: TypeLongstr, b: s} }

// StringValue returns an 'S' value holding s.
func StringValue(s string) Value { return Value{Type: TypeLongstr, b: []byte(s)} }

// BytesValue returns an 'x' value holding b (not copied).
func BytesValue(b []byte) Value { return Value{Type: TypeBytes, b: b} }

// TimestampValue returns a 'T' value (whole seconds).
func TimestampValue(t time.Time) Value { return Value{Type: TypeTimestamp, num: uint64(t.Unix())} }

// TableValue returns an 'F' value.
func TableValue(t Table) Value { return Value{Type: TypeTable, b: t} }

// ArrayValue returns an 'A' value.
func ArrayValue(a Array) Value { return Value{Type: TypeArray, b: a} }

// VoidValue returns a 'V' value.
func VoidValue() Value { return Value{Type: TypeVoid} }

func uitoa(v uint64) string {
	var buf [20]byte
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	return string(buf[i:])
}

// RabbitName names the type as RabbitMQ's table parser does (the atom its
// error texts print: "longstr", "signedint", "binary"). RabbitMQ reads 'L'
// as a signed long and 'U' as a short, so those print "long" and "short".
func (t ValueType) RabbitName() string {
	switch t {
	case TypeBool:
		return "bool"
	case TypeInt8:
		return "byte"
	case TypeUint8:
		return "unsignedbyte"
	case TypeInt16, TypeInt16U:
		return "short"
	case TypeUint16:
		return "unsignedshort"
	case TypeInt32:
		return "signedint"
	case TypeUint32:
		return "unsignedint"
	case TypeInt64, TypeUint64:
		return "long"
	case TypeFloat:
		return "float"
	case TypeDouble:
		return "double"
	case TypeDecimal:
		return "decimal"
	case TypeLongstr:
		return "longstr"
	case TypeArray:
		return "array"
	case TypeTimestamp:
		return "timestamp"
	case TypeTable:
		return "table"
	case TypeVoid:
		return "void"
	case TypeBytes:
		return "binary"
	}
	return "unknown"
}
