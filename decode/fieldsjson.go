package decode

import (
	"encoding/binary"
	"reflect"
	"unicode/utf8"
)

// FieldsJSON appends the JSON object of u's field tree directly from u's
// bytes, byte for byte what decode/output renders from [Unit.Fields], for
// the unit shapes that dominate real traffic (a DataRow, a content frame);
// it returns false, having appended nothing that counts, for anything
// else, and the caller renders the tree. maxFields is the renderer's limit
// on rendered fields (negative: none); a unit that would reach it is left
// to the tree, which says what it elided.
type FieldsJSON func(b []byte, u *Unit, maxFields int) ([]byte, bool)

type fieldsJSONEntry struct {
	code uintptr
	fn   FieldsJSON
}

// fieldsJSONs is written only by init functions (RegisterFieldsJSON), so
// it is read without locking.
var fieldsJSONs []fieldsJSONEntry

// RegisterFieldsJSON declares fn the direct JSON rendering of the units
// whose Dissect is dissect. Units are told apart by their Dissect's code:
// a unit whose Dissect was replaced or wrapped (the broker's route
// annotations) is rendered from its tree. Call it from an init function.
func RegisterFieldsJSON(dissect func(*Unit) []*Field, fn FieldsJSON) {
	fieldsJSONs = append(fieldsJSONs, fieldsJSONEntry{code: reflect.ValueOf(dissect).Pointer(), fn: fn})
}

// AppendFieldsJSON appends u's field tree as a JSON object through its
// protocol's direct renderer (see [FieldsJSON]); false when there is none
// for this unit, with b unchanged.
func (u *Unit) AppendFieldsJSON(b []byte, maxFields int) ([]byte, bool) {
	if u.Dissect == nil || len(fieldsJSONs) == 0 {
		return b, false
	}
	code := reflect.ValueOf(u.Dissect).Pointer()
	for i := range fieldsJSONs {
		if fieldsJSONs[i].code == code {
			nb, ok := fieldsJSONs[i].fn(b, u, maxFields)
			if !ok {
				return b, false
			}
			return nb, true
		}
	}
	return b, false
}

// JSONSafe8 reports whether none of the eight bytes in x (little-endian)
// needs escaping in a JSON string: each is at least 0x20, below 0x80, and
// neither '"' nor '\\'. It may say false for bytes that are safe (the
// caller then looks at them one by one), never true for one that is not.
func JSONSafe8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	t := (x - lo*0x20) | ((x ^ lo*'"') - lo) | ((x ^ lo*'\\') - lo) | x
	return t&hi == 0
}

// AppendJSONPlain appends v as a JSON string when none of its bytes needs
// escaping (printable ASCII but '"' and '\\'), looking at each byte once,
// and reports whether it did; otherwise b is returned as it was. Short
// values of plain text (a DataRow's columns) are the common case: the
// caller then has no need to scan them again.
func AppendJSONPlain(b, v []byte) ([]byte, bool) {
	i := 0
	for ; i+8 <= len(v); i += 8 {
		if !JSONSafe8(binary.LittleEndian.Uint64(v[i:])) {
			return b, false
		}
	}
	for _, c := range v[i:] {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, v...)
	return append(b, '"'), true
}

// AppendJSONString appends s as a JSON string, escaping what RFC 8259
// requires and replacing invalid UTF-8 with U+FFFD (decode/output's
// AppendString).
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if JSONSafe8(x) {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < 0x80 {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// AppendJSONHex appends p as a JSON string of lowercase hex.
func AppendJSONHex(b, p []byte) []byte {
	b = GrowJSON(b, 2*len(p)+2)
	b = append(b, '"')
	b = AppendHex(b, p)
	return append(b, '"')
}

// hexPairs holds each byte's two lowercase hex digits, the first in the
// low byte.
var hexPairs = func() (t [256]uint16) {
	for i := range t {
		t[i] = uint16(hexDigits[i>>4]) | uint16(hexDigits[i&15])<<8
	}
	return t
}()

// AppendHex appends p in lowercase hex, as hex.AppendEncode does, about
// twice as fast: a table of digit pairs, four bytes at a time (the hex
// of frames and bodies is most of what JSON output costs). Like
// AppendJSONHex it grows b as GrowJSON does.
func AppendHex(b, p []byte) []byte {
	n := len(b)
	b = GrowJSON(b, 2*len(p))[:n+2*len(p)]
	dst := b[n:]
	i := 0
	for ; i+4 <= len(p); i += 4 {
		s := p[i : i+4 : i+4]
		binary.LittleEndian.PutUint64(dst[2*i:], uint64(hexPairs[s[0]])|uint64(hexPairs[s[1]])<<16|
			uint64(hexPairs[s[2]])<<32|uint64(hexPairs[s[3]])<<48)
	}
	for ; i < len(p); i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], hexPairs[p[i]])
	}
	return b
}

// GrowJSON returns b with room for n more bytes. When b must grow, its
// capacity at least doubles: a renderer about to write a large value of
// known size (the hex of a frame or a body) reserves it, so that a buffer
// gathering many such values grows as append grows a slice appended to
// byte by byte, not by a copy of the whole buffer for each value (append
// grows a large slice by a quarter, or to the exact size asked). The new
// slice is made, not grown by append: a large allocation of fresh pages
// is not cleared, and its pages are touched only as they are written
// (slices.Grow clears all it adds, which faulted in pages never used).
func GrowJSON(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(len(b)+n, 2*cap(b)))
	copy(nb, b)
	return nb
}
