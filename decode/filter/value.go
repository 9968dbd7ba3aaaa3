package filter

import (
	"bytes"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/decode"
)

type vkind uint8

const (
	kNone vkind = iota // a container, or a value of a type the filter cannot read
	kInt
	kUint
	kFloat
	kBool // i is 0 or 1
	kString
	kBytes
	kTime
	kAddr
)

// value is one occurrence of a field, unboxed so that reading virtual
// fields allocates nothing.
type value struct {
	kind vkind
	i    int64
	u    uint64
	f    float64
	s    string
	b    []byte
	t    time.Time
	a    netip.Addr
	// disp is the field's Display text, compared instead of a number when
	// the literal is not a number ("persistent" for delivery-mode 2).
	disp string
}

func (v *value) setInt(n int64)     { v.kind, v.i = kInt, n }
func (v *value) setString(s string) { v.kind, v.s = kString, s }

func (v *value) setNonEmpty(s string) bool {
	v.kind, v.s = kString, s
	return s != ""
}

// setField unboxes a tree field's typed value.
func (v *value) setField(f *decode.Field) {
	*v = value{disp: f.Display}
	switch x := f.Value.(type) {
	case nil:
		if f.Display != "" {
			v.setString(f.Display)
		}
	case bool:
		v.kind = kBool
		if x {
			v.i = 1
		}
	case int64:
		v.setInt(x)
	case int:
		v.setInt(int64(x))
	case int32:
		v.setInt(int64(x))
	case int16:
		v.setInt(int64(x))
	case int8:
		v.setInt(int64(x))
	case uint64:
		v.kind, v.u = kUint, x
	case uint:
		v.kind, v.u = kUint, uint64(x)
	case uint32:
		v.kind, v.u = kUint, uint64(x)
	case uint16:
		v.kind, v.u = kUint, uint64(x)
	case uint8:
		v.kind, v.u = kUint, uint64(x)
	case float64:
		v.kind, v.f = kFloat, x
	case float32:
		v.kind, v.f = kFloat, float64(x)
	case string:
		v.setString(x)
	case []byte:
		v.kind, v.b = kBytes, x
	case time.Time:
		v.kind, v.t = kTime, x
	case netip.Addr:
		v.kind, v.a = kAddr, x.Unmap()
	case interface{ String() string }:
		v.setString(x.String())
	}
}

func (v *value) numeric() bool { return v.kind >= kInt && v.kind <= kBool }

// text renders the value as the string it compares as when the literal
// is not of the value's own kind. Only mixed-kind comparisons get here.
func (v *value) text() string {
	switch v.kind {
	case kInt, kUint, kFloat, kBool:
		if v.disp != "" {
			return v.disp
		}
		switch v.kind {
		case kInt:
			return strconv.FormatInt(v.i, 10)
		case kUint:
			return strconv.FormatUint(v.u, 10)
		case kFloat:
			return strconv.FormatFloat(v.f, 'g', -1, 64)
		}
		if v.i != 0 {
			return "true"
		}
		return "false"
	case kString:
		return v.s
	case kBytes:
		return string(v.b)
	case kTime:
		return v.t.UTC().Format(time.RFC3339Nano)
	case kAddr:
		return v.a.String()
	}
	return v.disp
}

type nkind uint8

const (
	nNone nkind = iota
	nInt
	nUint
	nFloat
)

// literal is a constant from the expression with every interpretation it
// admits worked out at Compile time, so Match only picks one.
type literal struct {
	pos, end int
	text     string // the string it compares as
	quoted   bool
	tb       []byte // text as bytes, for byte fields

	num nkind
	i   int64
	u   uint64
	f   float64

	bytes []byte // aa:bb:cc (also aa-bb-cc, aa.bb.cc): a byte string

	hasTime bool
	t       time.Time

	addr      netip.Addr
	prefix    netip.Prefix // 10.0.0.0/8; == tests membership
	hasPrefix bool
}

// timeLayouts are the forms a literal may take to compare with a time
// field: RFC 3339 with or without the T, with or without fraction and
// zone; without a zone the time is UTC.
var timeLayouts = [...]string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// newLiteral interprets a token's text. Numbers are only read from bare
// words and character constants; a quoted "42" is a string.
func newLiteral(t token) *literal {
	l := &literal{pos: t.pos, end: t.end}
	switch t.kind {
	case tString:
		l.text, l.quoted = t.val, true
	case tChar:
		l.text = t.val
		r, n := utf8.DecodeRuneInString(t.val)
		if r == utf8.RuneError && n == 1 { // an escape made a byte that is not UTF-8
			r = rune(t.val[0])
		}
		l.num, l.i = nInt, int64(r)
	default:
		l.text = t.text
		l.parseNumber()
		l.bytes = parseBytes(t.text)
	}
	l.tb = []byte(l.text)
	if len(l.text) >= 10 && l.text[4] == '-' {
		for _, layout := range timeLayouts {
			if tm, err := time.ParseInLocation(layout, l.text, time.UTC); err == nil {
				l.hasTime, l.t = true, tm
				break
			}
		}
	}
	if a, err := netip.ParseAddr(l.text); err == nil {
		l.addr = a.Unmap()
	} else if p, err := netip.ParsePrefix(l.text); err == nil {
		l.prefix, l.hasPrefix = p.Masked(), true
		if p.Addr().Is4In6() {
			l.prefix = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked()
		}
	}
	return l
}

func (l *literal) parseNumber() {
	s := l.text
	switch strings.ToLower(s) {
	case "true":
		l.num, l.i = nInt, 1
		return
	case "false":
		l.num, l.i = nInt, 0
		return
	}
	c := s[0]
	if c == '-' || c == '+' {
		if len(s) == 1 {
			return
		}
		c = s[1]
	}
	if (c < '0' || c > '9') && c != '.' {
		return // keep words like "inf" and "nan" strings
	}
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		l.num, l.i = nInt, n
	} else if n, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 0, 64); err == nil {
		l.num, l.u = nUint, n
	} else if f, err := strconv.ParseFloat(s, 64); err == nil {
		l.num, l.f = nFloat, f
	}
}

// parseBytes reads Wireshark's byte-string form: two hex digits per byte,
// at least two bytes, separated by one of ':', '-', '.'.
func parseBytes(s string) []byte {
	if len(s) < 5 || (len(s)+1)%3 != 0 {
		return nil
	}
	sep := s[2]
	if sep != ':' && sep != '-' && sep != '.' {
		return nil
	}
	b := make([]byte, 0, (len(s)+1)/3)
	for i := 0; i < len(s); i += 3 {
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 || i+2 < len(s) && s[i+2] != sep {
			return nil
		}
		b = append(b, byte(hi<<4|lo))
	}
	return b
}

// compare orders v against l. ok is false when they cannot be ordered
// (NaN, an address against a prefix, a container).
func compare(v *value, l *literal) (c int, ok bool) {
	switch v.kind {
	case kNone:
		return 0, false
	case kInt, kUint, kFloat, kBool:
		if l.num != nNone {
			return compareNum(v, l)
		}
	case kString:
		return strings.Compare(v.s, l.text), true
	case kBytes:
		if l.bytes != nil {
			return bytes.Compare(v.b, l.bytes), true
		}
		return bytes.Compare(v.b, l.tb), true
	case kTime:
		if l.hasTime {
			return v.t.Compare(l.t), true
		}
		if l.num != nNone {
			return cmpFloat(float64(v.t.UnixNano())/1e9, l.float())
		}
	case kAddr:
		if l.addr.IsValid() {
			return v.a.Compare(l.addr), true
		}
		if l.hasPrefix {
			return 0, false
		}
	}
	return strings.Compare(v.text(), l.text), true
}

// equal is compare(...) == 0, except that an address equals a prefix that
// contains it.
func equal(v *value, l *literal) bool {
	switch {
	case v.kind == kString:
		return v.s == l.text
	case v.kind == kInt && l.num == nInt:
		return v.i == l.i
	case v.kind == kAddr && l.hasPrefix:
		return l.prefix.Contains(v.a)
	}
	c, ok := compare(v, l)
	return ok && c == 0
}

func (l *literal) float() float64 {
	switch l.num {
	case nInt:
		return float64(l.i)
	case nUint:
		return float64(l.u)
	}
	return l.f
}

func compareNum(v *value, l *literal) (int, bool) {
	switch {
	case (v.kind == kInt || v.kind == kBool) && l.num == nInt:
		return cmpInt(v.i, l.i), true
	case (v.kind == kInt || v.kind == kBool) && l.num == nUint:
		if v.i < 0 {
			return -1, true
		}
		return cmpUint(uint64(v.i), l.u), true
	case v.kind == kUint && l.num == nInt:
		if l.i < 0 {
			return 1, true
		}
		return cmpUint(v.u, uint64(l.i)), true
	case v.kind == kUint && l.num == nUint:
		return cmpUint(v.u, l.u), true
	}
	var f float64
	switch v.kind {
	case kInt, kBool:
		f = float64(v.i)
	case kUint:
		f = float64(v.u)
	default:
		f = v.f
	}
	return cmpFloat(f, l.float())
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) (int, bool) {
	if math.IsNaN(a) || math.IsNaN(b) {
		return 0, false
	}
	switch {
	case a < b:
		return -1, true
	case a > b:
		return 1, true
	}
	return 0, true
}

// contains reports whether v holds l as a substring (or byte sequence).
func contains(v *value, l *literal) bool {
	switch v.kind {
	case kNone:
		return false
	case kString:
		return strings.Contains(v.s, l.text)
	case kBytes:
		if l.bytes != nil && bytes.Contains(v.b, l.bytes) {
			return true
		}
		return bytes.Contains(v.b, l.tb)
	}
	return strings.Contains(v.text(), l.text)
}
