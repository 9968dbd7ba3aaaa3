package output

import (
	"io"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// JSONOptions select optional keys.
type JSONOptions struct {
	// Raw adds each unit's exact bytes as lowercase hex.
	Raw bool
	// NoFields leaves out the field tree (cheaper; used by exports of
	// summaries only).
	NoFields bool
	// MaxFieldBytes elides the field tree of a unit longer than this many
	// bytes, with a note in "fields_elided" (0: DefaultMaxFieldBytes;
	// negative: no limit). Rendering costs time in proportion to the tree,
	// and a hostile 2 MB headers table is a tree of 200k fields.
	MaxFieldBytes int
	// MaxFields stops rendering a unit's tree after this many fields, with
	// a note in "fields_elided" (0: DefaultMaxFields; negative: no limit):
	// it bounds trees that are large for their unit's length, such as an
	// AMQP 1.0 message reassembled from many transfers.
	MaxFields int
	// TreeOnly renders every unit's fields from its field tree, never
	// through its protocol's direct renderer (decode.FieldsJSON): for the
	// tests that prove the two write the same bytes.
	TreeOnly bool
}

// Defaults of [JSONOptions] limits.
const (
	DefaultMaxFieldBytes = 1 << 20
	DefaultMaxFields     = 100000
)

func (o JSONOptions) limits() (maxBytes, maxFields int) {
	maxBytes, maxFields = o.MaxFieldBytes, o.MaxFields
	if maxBytes == 0 {
		maxBytes = DefaultMaxFieldBytes
	}
	if maxFields == 0 {
		maxFields = DefaultMaxFields
	}
	return maxBytes, maxFields
}

// JSON writes one object per line per unit, with the keys of INTERFACES.md.
type JSON struct {
	w   io.Writer
	enc JSONEncoder
	buf []byte
}

// NewJSON returns a JSON-lines writer on w. Call Flush at the end.
func NewJSON(w io.Writer, opt JSONOptions) *JSON {
	return &JSON{w: w, enc: JSONEncoder{opt: opt}, buf: make([]byte, 0, 64<<10)}
}

// Unit appends u's object.
func (j *JSON) Unit(u *decode.Unit) error {
	j.buf = j.enc.Append(j.buf, u)
	j.buf = append(j.buf, '\n')
	if len(j.buf) >= 60<<10 {
		return j.Flush()
	}
	return nil
}

// Flush writes what is buffered.
func (j *JSON) Flush() error {
	if len(j.buf) == 0 {
		return nil
	}
	_, err := j.w.Write(j.buf)
	j.buf = j.buf[:0]
	return err
}

// AppendJSON appends u as one JSON object (no newline). A [JSONEncoder]
// writes the same bytes faster for a sequence of units.
func AppendJSON(b []byte, u *decode.Unit, opt JSONOptions) []byte {
	e := JSONEncoder{opt: opt, direct: true}
	return e.Append(b, u)
}

// JSONEncoder renders units as [AppendJSON] does, remembering what
// consecutive units share: the time of the packet that completed them (a
// segment of small frames completes many) and their connection's keys.
// One per goroutine: it is not safe for concurrent use.
type JSONEncoder struct {
	opt JSONOptions
	// The connection whose keys are in connKeys, as they were then.
	conn           *decode.Conn
	connID         int
	client, server netip.AddrPort
	connKeys       []byte
	// The time whose rendering is in timeText.
	ns       int64
	timeText []byte
	// direct writes time and connection straight into the object
	// (AppendJSON: one unit, nothing to share, nothing to allocate).
	direct bool
}

// NewJSONEncoder returns an encoder with options opt.
func NewJSONEncoder(opt JSONOptions) *JSONEncoder { return &JSONEncoder{opt: opt} }

// Append appends u as one JSON object (no newline).
func (e *JSONEncoder) Append(b []byte, u *decode.Unit) []byte {
	opt := e.opt
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, int64(u.N), 10)
	b = append(b, `,"time":"`...)
	if ns := u.UnixNano(); ns == decode.NoTime {
		b = u.Time().UTC().AppendFormat(b, time.RFC3339Nano)
	} else if e.direct {
		b = appendRFC3339Nano(b, ns)
	} else {
		if ns != e.ns || len(e.timeText) == 0 {
			e.ns = ns
			e.timeText = appendRFC3339Nano(e.timeText[:0], ns)
		}
		b = append(b, e.timeText...)
	}
	b = append(b, '"')
	if c := u.Conn; c != nil && e.direct {
		b = appendConnKeys(b, c)
	} else if c != nil {
		if c != e.conn || c.ID != e.connID || c.Client != e.client || c.Server != e.server || len(e.connKeys) == 0 {
			e.conn, e.connID, e.client, e.server = c, c.ID, c.Client, c.Server
			e.connKeys = appendConnKeys(e.connKeys[:0], c)
		}
		b = append(b, e.connKeys...)
	}
	b = append(b, `,"dir":"`...)
	b = append(b, u.Dir.String()...)
	b = append(b, `","proto":"`...)
	b = append(b, u.Proto.String()...)
	b = append(b, '"')
	if u.HasChannel {
		b = append(b, `,"channel":`...)
		b = strconv.AppendUint(b, uint64(u.Channel), 10)
	}
	b = append(b, `,"type":`...)
	b = AppendString(b, u.Type)
	b = append(b, `,"len":`...)
	b = strconv.AppendInt(b, int64(u.Len), 10)
	b = append(b, `,"summary":`...)
	b = AppendString(b, u.Summary)
	if u.Parent != nil {
		b = append(b, `,"parent":`...)
		b = strconv.AppendInt(b, int64(u.Parent.N), 10)
	}
	if u.MessageID() != "" {
		b = append(b, `,"message_id":`...)
		b = AppendString(b, u.MessageID())
	}
	if c := u.Checksum(); c != nil {
		b = append(b, `,"checksum":{`...)
		if c.Algorithm != "" {
			b = append(b, `"algorithm":`...)
			b = AppendString(b, c.Algorithm)
			b = append(b, ',')
		}
		b = append(b, `"status":"`...)
		b = append(b, c.Status.String()...)
		b = append(b, '"')
		if c.Status != decode.ChecksumAbsent {
			b = append(b, `,"expected":`...)
			b = strconv.AppendUint(b, uint64(c.Expected), 10)
			b = append(b, `,"actual":`...)
			b = strconv.AppendUint(b, uint64(c.Actual), 10)
		}
		b = append(b, '}')
	}
	if !opt.NoFields {
		maxBytes, maxFields := opt.limits()
		if maxBytes >= 0 && u.Len > maxBytes {
			b = append(b, `,"fields_elided":"unit of `...)
			b = strconv.AppendInt(b, int64(u.Len), 10)
			b = append(b, ` bytes: fields are rendered for units of at most `...)
			b = strconv.AppendInt(b, int64(maxBytes), 10)
			b = append(b, ` bytes"`...)
		} else if fb, ok := e.fastFields(b, u, maxFields); ok {
			b = fb
		} else if fs := u.Fields(); len(fs) > 0 {
			r := fieldRender{left: maxFields}
			b = append(b, `,"fields":`...)
			b = r.appendMap(b, fs)
			if r.elided > 0 {
				b = append(b, `,"fields_elided":"`...)
				b = strconv.AppendInt(b, int64(r.elided), 10)
				b = append(b, ` fields not rendered: at most `...)
				b = strconv.AppendInt(b, int64(maxFields), 10)
				b = append(b, ` are rendered per unit"`...)
			}
		}
	}
	if len(u.Warnings()) > 0 {
		b = append(b, `,"warnings":[`...)
		for i, w := range u.Warnings() {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, w)
		}
		b = append(b, ']')
	}
	if u.Err() != "" {
		b = append(b, `,"error":`...)
		b = AppendString(b, u.Err())
	}
	if opt.Raw {
		b = decode.GrowJSON(b, 2*len(u.Raw)+10)
		b = append(b, `,"raw":"`...)
		b = decode.AppendHex(b, u.Raw)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendConnKeys appends the keys of u's connection: conn, client, server.
func appendConnKeys(b []byte, c *decode.Conn) []byte {
	b = append(b, `,"conn":`...)
	b = strconv.AppendInt(b, int64(c.ID), 10)
	if c.Client.IsValid() {
		b = append(b, `,"client":"`...)
		b = c.Client.AppendTo(b)
		b = append(b, `","server":"`...)
		b = c.Server.AppendTo(b)
		b = append(b, '"')
	}
	return b
}

// fastFields appends `,"fields":{...}` through the unit's protocol's direct
// renderer (decode.FieldsJSON), when it has one for this unit.
func (e *JSONEncoder) fastFields(b []byte, u *decode.Unit, maxFields int) ([]byte, bool) {
	if e.opt.TreeOnly {
		return b, false
	}
	n := len(b)
	fb, ok := u.AppendFieldsJSON(append(b, `,"fields":`...), maxFields)
	if !ok {
		return b[:n], false
	}
	return fb, true
}

// appendRFC3339Nano appends the UTC time ns nanoseconds after the Unix epoch
// as time.RFC3339Nano formats it, without building a time.Time: a JSON line
// spent a tenth of its time there.
func appendRFC3339Nano(b []byte, ns int64) []byte {
	secs, frac := ns/1e9, ns%1e9
	if frac < 0 {
		secs, frac = secs-1, frac+1e9
	}
	days, sod := secs/86400, secs%86400
	if sod < 0 {
		days, sod = days-1, sod+86400
	}
	// Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
	z := days + 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if mp >= 10 {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	if y < 0 || y > 9999 {
		return time.Unix(0, ns).UTC().AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-', byte('0'+d/10), byte('0'+d%10), 'T')
	h, mi, s := sod/3600, sod/60%60, sod%60
	b = append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10))
	if frac != 0 {
		var digits [9]byte
		for i := 8; i >= 0; i-- {
			digits[i] = byte('0' + frac%10)
			frac /= 10
		}
		n := 9
		for digits[n-1] == '0' {
			n--
		}
		b = append(b, '.')
		b = append(b, digits[:n]...)
	}
	return append(b, 'Z')
}

// fieldRender renders a field tree up to a number of fields.
type fieldRender struct {
	left   int // fields still to render; negative: no limit
	elided int // fields (at any depth) not rendered
	// compares counts key comparisons made to number repeated keys: the
	// tests' proof that numbering them stays linear.
	compares int
}

// take reports whether f is rendered, counting it and, if not, its
// descendants.
func (r *fieldRender) take(f *decode.Field) bool {
	if r.left < 0 {
		return true
	}
	if r.left > 0 {
		r.left--
		return true
	}
	r.elided += countFields(f)
	return false
}

func countFields(f *decode.Field) int {
	n := 1
	for _, k := range f.Kids {
		n += countFields(k)
	}
	return n
}

// appendMap renders fields as an object keyed by Key; a key used twice
// gets a "#2" suffix so the object stays valid for every JSON parser.
func (r *fieldRender) appendMap(b []byte, fs []*decode.Field) []byte {
	b = append(b, '{')
	// Small levels (nearly all) count earlier occurrences of a key by
	// scanning; past smallLevel keys that scan would be quadratic (a headers
	// table or a 1.0 map with 200k keys took minutes), so a map counts them.
	var seen map[string]int
	if len(fs) > smallLevel {
		seen = make(map[string]int, len(fs))
	}
	for i, f := range fs {
		if !r.take(f) {
			continue
		}
		if i > 0 {
			b = append(b, ',')
		}
		n := 1
		if seen != nil {
			n = seen[f.Key] + 1
			seen[f.Key] = n
		} else {
			r.compares += i
			for _, g := range fs[:i] {
				if g.Key == f.Key {
					n++
				}
			}
		}
		if n == 1 {
			b = AppendString(b, f.Key)
		} else {
			b = AppendString(b, f.Key+"#"+strconv.Itoa(n))
		}
		b = append(b, ':')
		b = r.appendValue(b, f)
	}
	return append(b, '}')
}

// smallLevel is the number of keys up to which appendMap finds
// repeated keys without a map.
const smallLevel = 32

func (r *fieldRender) appendValue(b []byte, f *decode.Field) []byte {
	switch {
	case f.Kind == decode.KindList:
		b = append(b, '[')
		for i, k := range f.Kids {
			if !r.take(k) {
				continue
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = r.appendValue(b, k)
		}
		return append(b, ']')
	case f.Kind == decode.KindMap, f.Value == nil && len(f.Kids) > 0:
		return r.appendMap(b, f.Kids)
	}
	return AppendValue(b, f.Value)
}

// AppendValue renders a typed field value as JSON.
func AppendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return AppendString(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return AppendString(b, strconv.FormatFloat(x, 'g', -1, 64))
		}
		return strconv.AppendFloat(b, x, 'g', -1, 64)
	case float32:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return AppendString(b, strconv.FormatFloat(f, 'g', -1, 32))
		}
		return strconv.AppendFloat(b, f, 'g', -1, 32)
	case []byte:
		return decode.AppendJSONHex(b, x)
	case time.Time:
		b = append(b, '"')
		b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	case interface{ String() string }:
		return AppendString(b, x.String())
	}
	return append(b, "null"...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaping what RFC 8259 requires
// and replacing invalid UTF-8 with U+FFFD.
func AppendString(b []byte, s string) []byte { return decode.AppendJSONString(b, s) }
