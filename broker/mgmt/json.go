package mgmt

import (
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// column is one node of a ?columns= tree: "message_stats.publish,name"
// is a root with kids message_stats (kid publish) and name. A node that a
// path ends at keeps everything under it, as RabbitMQ's descend_columns
// does.
type column struct {
	name string
	all  bool
	kids []*column
}

func (c *column) kid(name string) *column {
	for _, k := range c.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// parseColumns builds the tree of a columns parameter; nil means every
// column.
func parseColumns(s string) *column {
	root := &column{}
	for len(s) > 0 {
		var path string
		path, s = cut(s, ',')
		n := root
		for len(path) > 0 {
			var part string
			part, path = cut(path, '.')
			if part == "" {
				continue
			}
			k := n.kid(part)
			if k == nil {
				k = &column{name: part}
				n.kids = append(n.kids, k)
			}
			n = k
		}
		if n != root {
			n.all = true
		}
	}
	if len(root.kids) == 0 {
		return nil
	}
	return root
}

func cut(s string, sep byte) (before, after string) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// encoder appends JSON to buf. Objects are written key by key; key reports
// whether the columns filter wants that key, and the value written after a
// true key inherits the filter below it. Nothing here allocates once buf
// and the scratch slices have grown.
type encoder struct {
	buf []byte
	// cur is the filter of the object or array being written; next the
	// filter for the value after the last key.
	cur, next *column
	stack     []*column
	// mapKeys is scratch for sorting a table's keys, one slice per
	// nesting depth so nested tables do not clobber their parent's.
	mapKeys [][]string
	depth   int
}

func (e *encoder) reset(cols *column) {
	e.buf = e.buf[:0]
	e.cur, e.next = cols, cols
	e.stack = e.stack[:0]
	e.depth = 0
}

func (e *encoder) comma() {
	if n := len(e.buf); n > 0 {
		switch e.buf[n-1] {
		case '{', '[', ':':
		default:
			e.buf = append(e.buf, ',')
		}
	}
}

func (e *encoder) open(c byte) {
	e.comma()
	e.buf = append(e.buf, c)
	e.stack = append(e.stack, e.cur)
	e.cur = e.next
}

func (e *encoder) close(c byte) {
	e.buf = append(e.buf, c)
	if n := len(e.stack); n > 0 {
		e.cur = e.stack[n-1]
		e.stack = e.stack[:n-1]
	}
	e.next = e.cur
}

func (e *encoder) beginObject() { e.open('{') }
func (e *encoder) endObject()   { e.close('}') }
func (e *encoder) beginArray()  { e.open('[') }
func (e *encoder) endArray()    { e.close(']') }

// key writes "k": when the filter wants k and reports whether it did; the
// caller writes the value only then. k is one of the API's own names,
// which need no escaping; tables' keys go through tableKey.
func (e *encoder) key(k string) bool {
	if !e.want(k) {
		return false
	}
	e.comma()
	e.buf = append(e.buf, '"')
	e.buf = append(e.buf, k...)
	e.buf = append(e.buf, '"', ':')
	return true
}

// keyWhole is key for a value RabbitMQ keeps whole under ?columns=: its
// maps (tables, overview totals), which extract_column_items does not
// descend into, unlike its property lists.
func (e *encoder) keyWhole(k string) bool {
	if !e.key(k) {
		return false
	}
	e.next = nil
	return true
}

// tableKey is key for a key from a client's table, which is escaped.
func (e *encoder) tableKey(k string) bool {
	if !e.want(k) {
		return false
	}
	e.comma()
	e.appendString(k)
	e.buf = append(e.buf, ':')
	return true
}

// want applies the columns filter to k and sets the filter for its value.
func (e *encoder) want(k string) bool {
	next := (*column)(nil)
	if e.cur != nil {
		c := e.cur.kid(k)
		if c == nil {
			return false
		}
		if !c.all {
			next = c
		}
	}
	e.next = next
	return true
}

// elem prepares the next element of an array: elements of a filtered
// array are filtered alike (extract_column_items maps over lists).
func (e *encoder) elem() { e.next = e.cur }

func (e *encoder) str(s string) {
	e.comma()
	e.appendString(s)
}

func (e *encoder) strOrNull(s string) {
	if s == "" {
		e.null()
		return
	}
	e.str(s)
}

func (e *encoder) null() {
	e.comma()
	e.buf = append(e.buf, "null"...)
}

func (e *encoder) boolean(b bool) {
	e.comma()
	e.buf = strconv.AppendBool(e.buf, b)
}

func (e *encoder) int(v int64) {
	e.comma()
	e.buf = strconv.AppendInt(e.buf, v, 10)
}

func (e *encoder) uint(v uint64) {
	e.comma()
	e.buf = strconv.AppendUint(e.buf, v, 10)
}

// float writes f as Erlang's JSON does: always with a fraction or an
// exponent, so clients decode a float (0.0, not 0).
func (e *encoder) float(f float64) {
	e.comma()
	if math.IsNaN(f) || math.IsInf(f, 0) {
		e.buf = append(e.buf, "null"...)
		return
	}
	start := len(e.buf)
	e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
	for _, c := range e.buf[start:] {
		if c == '.' || c == 'e' || c == 'n' || c == 'I' {
			return
		}
	}
	e.buf = append(e.buf, '.', '0')
}

// rate writes {"rate":r} rounded to a tenth, as the management API
// reports rates.
func (e *encoder) rate(r float64) {
	e.beginObject()
	if e.key("rate") {
		e.float(math.Round(r*10) / 10)
	}
	e.endObject()
}

func (e *encoder) emptyObject() {
	e.beginObject()
	e.endObject()
}

func (e *encoder) emptyArray() {
	e.beginArray()
	e.endArray()
}

func (e *encoder) strings(ss []string) {
	e.beginArray()
	for _, s := range ss {
		e.elem()
		e.str(s)
	}
	e.endArray()
}

// appendString quotes s as decode/output does for wiretap's JSON lines;
// invalid UTF-8 becomes U+FFFD so the output stays valid JSON whatever the
// broker's names hold.
func (e *encoder) appendString(s string) { e.buf = output.AppendString(e.buf, s) }

// maxValueDepth bounds how deep a table is rendered: a broker never builds
// deeper ones, and a bound keeps a hostile client property from costing a
// deep recursion.
const maxValueDepth = 32

// value writes one field-table value as RabbitMQ's management API does
// (rabbit_misc:amqp_value): tables as objects with sorted keys, arrays as
// arrays, timestamps as seconds, byte strings as strings when they are
// UTF-8 and "Not UTF-8, base64 is: ..." otherwise, decimals as the float
// RabbitMQ makes of them.
func (e *encoder) value(v any) {
	switch v := v.(type) {
	case nil:
		e.null()
	case string:
		e.str(v)
	case []byte:
		e.bytes(v)
	case bool:
		e.boolean(v)
	case int:
		e.int(int64(v))
	case int8:
		e.int(int64(v))
	case int16:
		e.int(int64(v))
	case int32:
		e.int(int64(v))
	case int64:
		e.int(v)
	case uint:
		e.uint(uint64(v))
	case uint8:
		e.uint(uint64(v))
	case uint16:
		e.uint(uint64(v))
	case uint32:
		e.uint(uint64(v))
	case uint64:
		e.uint(v)
	case float32:
		e.float(float64(v))
	case float64:
		e.float(v)
	case time.Time:
		e.int(v.Unix())
	case amqp091.Decimal:
		e.decimal(v)
	case map[string]any:
		e.table(v)
	case []any:
		if e.depth >= maxValueDepth {
			e.null()
			return
		}
		e.depth++
		e.beginArray()
		for _, x := range v {
			e.elem()
			e.value(x)
		}
		e.endArray()
		e.depth--
	case []string:
		e.strings(v)
	default:
		// The broker's tables hold only the types above; anything else
		// is shown as nothing rather than guessed at.
		e.null()
	}
}

// table writes m with its keys sorted, as RabbitMQ's maps come out.
func (e *encoder) table(m map[string]any) {
	if e.depth >= maxValueDepth {
		e.null()
		return
	}
	for len(e.mapKeys) <= e.depth {
		e.mapKeys = append(e.mapKeys, nil)
	}
	keys := e.mapKeys[e.depth][:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.mapKeys[e.depth] = keys
	e.depth++
	e.beginObject()
	for _, k := range keys {
		if e.tableKey(k) {
			e.value(m[k])
		}
	}
	e.endObject()
	e.depth--
	clear(keys) // drop references to the caller's strings
}

// bytes writes a byte string as rabbit_misc:utf8_safe does.
func (e *encoder) bytes(b []byte) {
	if utf8.Valid(b) {
		e.comma()
		// appendString only reads s, so b need not be copied into one.
		e.appendString(unsafe.String(unsafe.SliceData(b), len(b)))
		return
	}
	e.comma()
	e.buf = append(e.buf, `"Not UTF-8, base64 is: `...)
	// MIME's 76-character lines, joined by "\n" as RabbitMQ splits them.
	n := base64.StdEncoding.EncodedLen(len(b))
	start := len(e.buf)
	e.buf = slices.Grow(e.buf, n)[:start+n]
	base64.StdEncoding.Encode(e.buf[start:], b)
	if n > 76 {
		lines := (n - 1) / 76
		e.buf = slices.Grow(e.buf, 2*lines)[:start+n+2*lines]
		// Spread from the end so nothing is overwritten before it moves.
		src, dst := start+n, start+n+2*lines
		for l := lines; l > 0; l-- {
			end := start + l*76
			chunk := src - end
			dst -= chunk
			copy(e.buf[dst:dst+chunk], e.buf[end:src])
			dst -= 2
			e.buf[dst], e.buf[dst+1] = '\\', 'n'
			src = end
		}
	}
	e.buf = append(e.buf, '"')
}

// decimal writes a decimal as RabbitMQ 3.10 does: the float it reads from
// "Scale.Value" (so scale 2, value 1234 is 2.1234). A negative value,
// which RabbitMQ cannot format, is written as the negated float of its
// magnitude, so the output stays a number.
func (e *encoder) decimal(d amqp091.Decimal) {
	e.comma()
	v := int64(d.Value)
	if v < 0 {
		e.buf = append(e.buf, '-')
		v = -v
	}
	e.buf = strconv.AppendUint(e.buf, uint64(d.Scale), 10)
	e.buf = append(e.buf, '.')
	frac := len(e.buf)
	e.buf = strconv.AppendInt(e.buf, v, 10)
	// The float of "2.10" prints as 2.1.
	for len(e.buf) > frac+1 && e.buf[len(e.buf)-1] == '0' {
		e.buf = e.buf[:len(e.buf)-1]
	}
}
