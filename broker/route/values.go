package route

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// maxNesting bounds the recursion into nested tables and arrays, as the
// codec does, so no input can exhaust the stack.
const maxNesting = 64

// typeAtom maps a field-value type to the Erlang atom RabbitMQ 3.10's
// parser gives it (rabbit_binary_parser): 'l' and 'L' are both "long"
// (and 'L' is read as signed), so they are one type; 'U' is this codec's
// other spelling of 's'. Values of two types are equal inside nested
// tables and arrays only when their atoms are.
func typeAtom(t amqp091.ValueType) amqp091.ValueType {
	switch t {
	case amqp091.TypeInt16U:
		return amqp091.TypeInt16
	case amqp091.TypeUint64:
		return amqp091.TypeInt64
	}
	return t
}

// number is a numeric field value as Erlang holds it: an integer (big
// for a timestamp above MaxInt64, whose bits are then in i) or a float.
type number struct {
	f     float64
	i     int64
	float bool
	big   bool
}

func numberOf(v amqp091.Value) (number, bool) {
	switch v.Type {
	case amqp091.TypeInt8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeInt32,
		amqp091.TypeInt64, amqp091.TypeUint64, // 'L' is signed in RabbitMQ
		amqp091.TypeUint8, amqp091.TypeUint16, amqp091.TypeUint32:
		return number{i: v.Int()}, true
	case amqp091.TypeTimestamp:
		u := v.Uint()
		return number{i: int64(u), big: u > math.MaxInt64}, true
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return number{f: v.Float(), float: true}, true
	}
	return number{}, false
}

// eq is Erlang's == on numbers: integers and floats compare by their
// exact value (1 == 1.0), whatever the width they were sent in.
func (a number) eq(b number) bool {
	switch {
	case !a.float && !b.float:
		return a.i == b.i && a.big == b.big
	case a.float && b.float:
		return a.f == b.f
	case a.float:
		return b.eqFloat(a.f)
	}
	return a.eqFloat(b.f)
}

func (a number) eqFloat(f float64) bool {
	if math.IsInf(f, 0) || f != math.Trunc(f) {
		return false
	}
	if a.big {
		return f >= 1<<63 && f < 1<<64 && uint64(f) == uint64(a.i)
	}
	return f >= -1<<63 && f < 1<<63 && int64(f) == a.i
}

// looseEqual is how RabbitMQ 3.10's headers exchange compares a binding's
// value with a message's at the top level: Erlang's == on the parsed
// values, the types themselves ignored. So numbers of any width and
// floats compare by value, a longstr equals a byte array holding the same
// bytes, but a bool is never a number and a decimal only another decimal.
// Nested tables and arrays compare with their types ([typedEqual]).
func looseEqual(a, b amqp091.Value) bool {
	an, aNum := numberOf(a)
	bn, bNum := numberOf(b)
	if aNum || bNum {
		return aNum && bNum && an.eq(bn)
	}
	switch a.Type {
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return (b.Type == amqp091.TypeLongstr || b.Type == amqp091.TypeBytes) && bytes.Equal(a.Bytes(), b.Bytes())
	case amqp091.TypeBool:
		return b.Type == amqp091.TypeBool && a.Bool() == b.Bool()
	case amqp091.TypeDecimal:
		return b.Type == amqp091.TypeDecimal && a.Uint() == b.Uint()
	case amqp091.TypeVoid:
		return b.Type == amqp091.TypeVoid
	case amqp091.TypeTable:
		return b.Type == amqp091.TypeTable && fieldsEqual(a.Bytes(), b.Bytes(), true, 0)
	case amqp091.TypeArray:
		return b.Type == amqp091.TypeArray && fieldsEqual(a.Bytes(), b.Bytes(), false, 0)
	}
	return false
}

// typedEqual compares values inside nested tables and arrays, where
// RabbitMQ compares {Type, Value} terms: the type atoms must be equal.
func typedEqual(a, b amqp091.Value, depth int) bool {
	if typeAtom(a.Type) != typeAtom(b.Type) {
		return false
	}
	switch a.Type {
	case amqp091.TypeTable:
		return fieldsEqual(a.Bytes(), b.Bytes(), true, depth+1)
	case amqp091.TypeArray:
		return fieldsEqual(a.Bytes(), b.Bytes(), false, depth+1)
	}
	return looseEqual(a, b)
}

// fieldsEqual compares two encoded tables (keyed) or arrays entry by
// entry, in wire order: RabbitMQ sorts only the top level.
func fieldsEqual(a, b []byte, keyed bool, depth int) bool {
	if depth > maxNesting {
		return false
	}
	var ia, ib amqp091.TableIter
	if keyed {
		ia, ib = amqp091.Table(a).Iter(), amqp091.Table(b).Iter()
	} else {
		ia, ib = amqp091.Array(a).Iter(), amqp091.Array(b).Iter()
	}
	for {
		na, nb := ia.Next(), ib.Next()
		if !na || !nb {
			return na == nb && ia.Err() == nil && ib.Err() == nil
		}
		if !bytes.Equal(ia.Key(), ib.Key()) || !typedEqual(ia.Value(), ib.Value(), depth) {
			return false
		}
	}
}

// appendAnchorValue appends a form of v that is the same exactly for
// values looseEqual finds equal, for the headers index's hash lookups and
// comparisons; it returns false for tables, arrays, void and NaN, which
// are compared by looseEqual itself and found by key alone.
func appendAnchorValue(dst []byte, v amqp091.Value) ([]byte, bool) {
	if n, ok := numberOf(v); ok {
		if n.float {
			f := n.f
			switch {
			case math.IsNaN(f):
				return dst, false // equal to nothing, not even itself
			case math.IsInf(f, 0) || f != math.Trunc(f):
				return binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f)), true
			case f >= -1<<63 && f < 1<<63:
				return binary.BigEndian.AppendUint64(append(dst, 'n'), uint64(int64(f))), true
			case f >= 1<<63 && f < 1<<64:
				return binary.BigEndian.AppendUint64(append(dst, 'N'), uint64(f)), true
			}
			return binary.BigEndian.AppendUint64(append(dst, 'f'), math.Float64bits(f)), true
		}
		if n.big {
			return binary.BigEndian.AppendUint64(append(dst, 'N'), uint64(n.i)), true
		}
		return binary.BigEndian.AppendUint64(append(dst, 'n'), uint64(n.i)), true
	}
	switch v.Type {
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return append(append(dst, 's'), v.Bytes()...), true
	case amqp091.TypeBool:
		if v.Bool() {
			return append(dst, 't', 1), true
		}
		return append(dst, 't', 0), true
	case amqp091.TypeDecimal:
		return binary.BigEndian.AppendUint64(append(dst, 'D'), v.Uint()), true
	}
	return dst, false
}

// field is one entry of a table: its key and value alias the table.
// The headers index adds the value's hashed form (appendAnchorValue), nil
// when it has none.
type field struct {
	key  []byte
	val  amqp091.Value
	norm []byte
}

// equal is looseEqual, by the hashed forms when both have one.
func (f *field) equal(g *field) bool {
	if f.norm != nil && g.norm != nil {
		return bytes.Equal(f.norm, g.norm)
	}
	return looseEqual(f.val, g.val)
}

func compareFields(a, b field) int { return bytes.Compare(a.key, b.key) }

// appendFields appends t's entries to dst, stably sorted by key as
// RabbitMQ's rabbit_misc:sort_field_table does (lists:keysort is stable,
// so entries with one key keep their wire order). It stops at the first
// malformed entry and reports whether the whole table was well formed.
func appendFields(dst []field, t amqp091.Table) ([]field, bool) {
	n := len(dst)
	it := t.Iter()
	sorted := true
	for it.Next() {
		f := field{key: it.Key(), val: it.Value()}
		if len(dst) > n && bytes.Compare(dst[len(dst)-1].key, f.key) > 0 {
			sorted = false
		}
		dst = append(dst, f)
	}
	if !sorted {
		slices.SortStableFunc(dst[n:], compareFields)
	}
	return dst, it.Err() == nil
}

// appendCanonical appends the identity form of a binding's arguments:
// the entries sorted by key and each value normalised to what RabbitMQ's
// term comparison sees ('L' as 'l', 'U' as 's', any true bool as 1, -0.0
// as 0.0), nested tables normalised but not sorted. For a malformed table
// it appends the raw bytes and returns false, so such a table is equal
// only to the same bytes. It also returns the sorted entries (the
// well-formed prefix of a malformed table), in scratch's storage.
func appendCanonical(dst []byte, t amqp091.Table, scratch []field) ([]byte, []field, bool) {
	fs, _ := appendFields(scratch[:0], t)
	if t.Validate() != nil {
		return append(dst, t...), fs, false
	}
	for _, f := range fs {
		dst = append(dst, byte(len(f.key)))
		dst = append(dst, f.key...)
		dst = appendCanonicalValue(dst, f.val, 0)
	}
	return dst, fs, true
}

func appendCanonicalValue(dst []byte, v amqp091.Value, depth int) []byte {
	t := typeAtom(v.Type)
	dst = append(dst, byte(t))
	switch v.Type {
	case amqp091.TypeBool:
		if v.Bool() {
			return append(dst, 1)
		}
		return append(dst, 0)
	case amqp091.TypeInt8, amqp091.TypeUint8:
		return append(dst, byte(v.Uint()))
	case amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeUint16:
		return binary.BigEndian.AppendUint16(dst, uint16(v.Uint()))
	case amqp091.TypeInt32, amqp091.TypeUint32:
		return binary.BigEndian.AppendUint32(dst, uint32(v.Uint()))
	case amqp091.TypeFloat:
		b := uint32(v.Uint())
		if b == 1<<31 {
			b = 0
		}
		return binary.BigEndian.AppendUint32(dst, b)
	case amqp091.TypeDouble:
		b := v.Uint()
		if b == 1<<63 {
			b = 0
		}
		return binary.BigEndian.AppendUint64(dst, b)
	case amqp091.TypeInt64, amqp091.TypeUint64, amqp091.TypeTimestamp:
		return binary.BigEndian.AppendUint64(dst, v.Uint())
	case amqp091.TypeDecimal:
		n := v.Uint()
		return binary.BigEndian.AppendUint32(append(dst, byte(n>>32)), uint32(n))
	case amqp091.TypeVoid:
		return dst
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v.Bytes())))
		return append(dst, v.Bytes()...)
	case amqp091.TypeTable, amqp091.TypeArray:
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		var it amqp091.TableIter
		keyed := v.Type == amqp091.TypeTable
		if keyed {
			it = v.Table().Iter()
		} else {
			it = v.Array().Iter()
		}
		if depth >= maxNesting {
			dst = append(dst, v.Bytes()...)
		} else {
			for it.Next() {
				if keyed {
					dst = append(dst, byte(len(it.Key())))
					dst = append(dst, it.Key()...)
				}
				dst = appendCanonicalValue(dst, it.Value(), depth+1)
			}
		}
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		return dst
	}
	return dst
}
