package amqp091

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// This file builds field trees. Trees are built only when someone looks at
// a unit (the detail pane, JSON output), so they favour clarity over
// allocation; argWalk, which steps through arguments and properties, also
// serves the finder (find.go) on every unit a filter scans, and allocates
// nothing of its own.

// argField returns an argument's filterable dotted name.
func argField(prefix string, a *ArgInfo) string { return prefix + a.Wireshark }

// argWalk steps through encoded arguments (or content properties)
// described by infos, one argument per next call.
type argWalk struct {
	r      reader
	infos  []ArgInfo
	props  bool   // content properties: flags say which are on the wire
	flags  uint16 // property flags, the first entry in the top bit
	i      int
	bitPos int // position in the current bit octet; 8: none open
	bitOff int
	bits   byte
	// want, when set, is the Wireshark name of the only arguments whose
	// values next decodes; the others are stepped over (a lookup).
	want string
}

// newArgWalk walks method arguments.
func newArgWalk(b []byte, infos []ArgInfo) argWalk {
	return argWalk{r: reader{b: b}, infos: infos, bitPos: 8}
}

// newPropWalk walks content properties, flags saying which are present.
func newPropWalk(b []byte, flags uint16) argWalk {
	return argWalk{r: reader{b: b}, infos: propertyInfos[:], props: true, flags: flags, bitPos: 8}
}

// next decodes the next argument on the wire into f (Key, Encoding,
// Value, Offset and Length relative to base; not Name, not Kids) and
// returns its index in infos, with its table when it is one; -1 at the
// end, or with err when the arguments are cut short or run on. Bits are
// packed only for method arguments.
func (w *argWalk) next(base int, f *decode.Field) (i int, table Table, err error) {
	r := &w.r
	for ; w.i < len(w.infos); w.i++ {
		if !w.props || w.flags&(1<<(15-w.i)) != 0 {
			break
		}
	}
	if w.i == len(w.infos) {
		if r.off != len(r.b) {
			return -1, nil, trailing("arguments", r.off, len(r.b))
		}
		return -1, nil, nil
	}
	i = w.i
	w.i++
	a := &w.infos[i]
	if w.want != "" && a.Wireshark != w.want {
		return i, nil, w.skip(a)
	}
	*f = decode.Field{Key: a.Name, Encoding: a.Domain.String()}
	if a.Domain == DomainBit && !w.props {
		if w.bitPos == 8 {
			w.bitOff = r.off
			w.bits = r.octet()
			w.bitPos = 0
		}
		f.Value = w.bits&(1<<w.bitPos) != 0
		f.Offset, f.Length = base+w.bitOff, 1
		w.bitPos++
		if r.short {
			return -1, nil, truncatedAt("arguments", len(r.b))
		}
		return i, nil, nil
	}
	w.bitPos = 8
	start := r.off
	switch a.Domain {
	case DomainBit, DomainOctet:
		f.Value = uint64(r.octet())
	case DomainShort:
		f.Value = uint64(r.short16())
	case DomainLong:
		f.Value = uint64(r.long32())
	case DomainLonglong:
		f.Value = r.longlong()
	case DomainTimestamp:
		if v := r.longlong(); !r.short {
			f.Value = unixTime(v)
		}
	case DomainShortstr:
		if s := r.shortstr(); !r.short {
			f.Value = w.str(s)
		}
	case DomainLongstr:
		if s := r.longstr(); !r.short {
			if w.want != "" && !printable(s) {
				f.Value = s // a lookup's value may share the unit's bytes
			} else if w.want != "" {
				f.Value = w.str(s)
			} else {
				f.Value = textOrBytes(s)
			}
		}
	case DomainTable:
		if t := r.table(); !r.short {
			f.Kind = decode.KindMap
			table = t
		}
	}
	if r.short {
		return -1, nil, truncatedAt("arguments", len(r.b))
	}
	f.Offset, f.Length = base+start, r.off-start
	return i, table, nil
}

// str returns s as a string: a copy for a tree, which outlives the walk,
// and for a lookup (want set) the unit's own bytes, which are never
// modified once the unit is emitted and live as long as the unit.
func (w *argWalk) str(s []byte) string {
	if w.want != "" {
		return unsafe.String(unsafe.SliceData(s), len(s))
	}
	return string(s)
}

// skip steps over the value of argument a, as next would decode it.
func (w *argWalk) skip(a *ArgInfo) error {
	r := &w.r
	if a.Domain == DomainBit && !w.props {
		if w.bitPos == 8 {
			w.bitOff = r.off
			w.bits = r.octet()
			w.bitPos = 0
		}
		w.bitPos++
	} else {
		w.bitPos = 8
		switch a.Domain {
		case DomainBit, DomainOctet:
			r.octet()
		case DomainShort:
			r.short16()
		case DomainLong:
			r.long32()
		case DomainLonglong, DomainTimestamp:
			r.longlong()
		case DomainShortstr:
			r.shortstr()
		case DomainLongstr:
			r.longstr()
		case DomainTable:
			r.table()
		}
	}
	if r.short {
		return truncatedAt("arguments", len(r.b))
	}
	return nil
}

// dissectArgs returns one field per encoded argument (or property)
// described by infos, with its range; base is the offset of b in
// Unit.Raw.
func dissectArgs(w argWalk, base int, prefix string) ([]*decode.Field, error) {
	infos := w.infos
	var out []*decode.Field
	for {
		f := new(decode.Field)
		i, table, err := w.next(base, f)
		if i < 0 {
			return out, err
		}
		f.Name = argField(prefix, &infos[i])
		if table != nil {
			f.Kids = dissectTable(table, f.Offset+4, f.Name, 0)
		}
		out = append(out, f)
	}
}

// textOrBytes returns s as a string when it is printable UTF-8, else as
// bytes, so JSON shows text as text and binary as hex.
func textOrBytes(s []byte) any {
	if printable(s) {
		return string(s)
	}
	return append([]byte(nil), s...)
}

func printable(s []byte) bool {
	if !utf8.Valid(s) {
		return false
	}
	for _, c := range s {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
		if c == 0x7f {
			return false
		}
	}
	return true
}

// simpleKey reports whether a table key can extend a dotted field name.
func simpleKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// dissectTable returns one field per table entry (keyed) or array element;
// base is the offset of t in Unit.Raw.
func dissectTable(t []byte, base int, name string, depth int) []*decode.Field {
	it := TableIter{b: t, keyed: true}
	return dissectIter(&it, base, name, depth)
}

func dissectArray(a []byte, base int, name string, depth int) []*decode.Field {
	it := TableIter{b: a}
	return dissectIter(&it, base, name, depth)
}

func dissectIter(it *TableIter, base int, name string, depth int) []*decode.Field {
	var out []*decode.Field
	for it.Next() {
		v := it.Value()
		f := &decode.Field{Encoding: v.Type.String(), Offset: base + it.Offset(), Length: it.End() - it.Offset()}
		if it.keyed {
			f.Key = string(it.Key())
			if name != "" && simpleKey(it.Key()) {
				f.Name = name + "." + f.Key
			}
		} else {
			f.Key = strconv.Itoa(len(out))
		}
		// The value's own bytes start after the key and the type octet;
		// variable-width values have a 4-byte length first.
		valOff := f.Offset + f.Length - len(v.b)
		switch v.Type {
		case TypeTable:
			f.Kind = decode.KindMap
			if depth < maxNesting {
				f.Kids = dissectTable(v.b, valOff, f.Name, depth+1)
			}
		case TypeArray:
			f.Kind = decode.KindList
			if depth < maxNesting {
				f.Kids = dissectArray(v.b, valOff, "", depth+1)
			}
		case TypeLongstr:
			f.Value = textOrBytes(v.b)
		case TypeDecimal:
			d := v.Decimal()
			f.Value = d.String()
		default:
			f.Value = v.Any()
		}
		out = append(out, f)
	}
	if err := it.Err(); err != nil {
		out = append(out, &decode.Field{Key: "error", Value: err.Error()})
	}
	return out
}

// String renders the decimal in plain notation ("12.34").
func (d Decimal) String() string {
	neg := d.Value < 0
	v := int64(d.Value)
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v, 10)
	if d.Scale > 0 {
		sc := int(d.Scale)
		if len(s) <= sc {
			s = strings.Repeat("0", sc-len(s)+1) + s
		}
		s = s[:len(s)-sc] + "." + s[len(s)-sc:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

var frameTypeDisplay = [...]string{1: "Method (1)", 2: "Content header (2)", 3: "Content body (3)", 8: "Heartbeat (8)"}

// frameFields returns the frame header's fields: type, channel, length.
func frameFields(raw []byte) []*decode.Field {
	h, _ := PeekFrameHead(raw)
	typ := &decode.Field{Key: "type", Name: "amqp.type", Value: uint64(h.Type), Encoding: "octet", Offset: 0, Length: 1}
	if int(h.Type) < len(frameTypeDisplay) && frameTypeDisplay[h.Type] != "" {
		typ.Display = frameTypeDisplay[h.Type]
	}
	return []*decode.Field{
		typ,
		{Key: "channel", Name: "amqp.channel", Value: uint64(h.Channel), Encoding: "short", Offset: 1, Length: 2},
		{Key: "length", Name: "amqp.length", Value: uint64(h.Size), Encoding: "long", Offset: 3, Length: 4},
	}
}

// dissectFrame builds a frame unit's tree from its raw bytes.
func dissectFrame(u *decode.Unit) []*decode.Field {
	raw := u.Raw
	if len(raw) < FrameHeaderSize {
		return nil
	}
	fs := frameFields(raw)
	h, _ := PeekFrameHead(raw)
	end := FrameHeaderSize + int(h.Size)
	if end > len(raw) {
		end = len(raw)
	}
	payload := raw[FrameHeaderSize:end]
	switch h.Type {
	case FrameMethod:
		fs = append(fs, methodFields(payload, FrameHeaderSize, u.Secret)...)
	case FrameHeader:
		fs = append(fs, headerFields(payload, FrameHeaderSize)...)
	case FrameBody:
		fs = append(fs, &decode.Field{Key: "payload", Name: "amqp.payload", Value: append([]byte(nil), payload...),
			Encoding: "bytes", Offset: FrameHeaderSize, Length: len(payload)})
	}
	return fs
}

// methodFields returns class, method, name and arguments of a method
// payload at offset base of the unit.
func methodFields(p []byte, base int, secret bool) []*decode.Field {
	if len(p) < 4 {
		return []*decode.Field{{Key: "error", Value: "method payload of " + strconv.Itoa(len(p)) + " bytes"}}
	}
	class, id := binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])
	info := LookupMethod(class, id)
	cf, mf := methodField(p, base, info, 0), methodField(p, base, info, 1)
	if info == nil {
		return []*decode.Field{&cf, &mf, {Key: "error", Value: unknownMethod(class, id).Error()}}
	}
	nf, af := methodField(p, base, info, 2), methodField(p, base, info, 3)
	args, err := dissectArgs(newArgWalk(p[4:], info.Args), base+4, "amqp.method.arguments.")
	af.Kids = args
	if err != nil {
		af.Kids = append(af.Kids, &decode.Field{Key: "error", Value: err.Error()})
	}
	if secret {
		redactFields(info, af.Kids)
	}
	return []*decode.Field{&cf, &mf, &nf, &af}
}

// The fields of a method frame's payload, in tree order; the last is the
// arguments group (without its kids). Unknown methods have the first two.
var methodFieldNames = [...]string{"amqp.method.class", "amqp.method.method", "amqp.method", "amqp.method.arguments"}

// methodField returns field i of methodFieldNames of a method payload p
// (at least 4 bytes) at offset base of the unit; info is the method's, or
// nil when the spec has none.
func methodField(p []byte, base int, info *MethodInfo, i int) decode.Field {
	switch i {
	case 0:
		class := binary.BigEndian.Uint16(p)
		f := decode.Field{Key: "class", Name: methodFieldNames[i], Value: uint64(class), Encoding: "short", Offset: base, Length: 2}
		if n := className(class); n != "" {
			f.Display = n + " (" + strconv.Itoa(int(class)) + ")"
		}
		return f
	case 1:
		id := binary.BigEndian.Uint16(p[2:])
		f := decode.Field{Key: "method", Name: methodFieldNames[i], Value: uint64(id), Encoding: "short", Offset: base + 2, Length: 2}
		if info != nil {
			f.Display = info.Name[strings.IndexByte(info.Name, '.')+1:] + " (" + strconv.Itoa(int(id)) + ")"
		}
		return f
	case 2:
		return decode.Field{Key: "name", Name: methodFieldNames[i], Value: info.Name, Encoding: "class-id, method-id", Offset: base, Length: 4}
	}
	return decode.Field{Key: "arguments", Name: methodFieldNames[i], Kind: decode.KindMap, Offset: base + 4, Length: len(p) - 4}
}

// headerFields returns a content header payload's fields.
func headerFields(p []byte, base int) []*decode.Field {
	var h ContentHeader
	if err := h.DecodeFromBytes(p); err != nil && len(p) < 14 {
		return []*decode.Field{{Key: "error", Value: err.Error()}}
	}
	var fs []*decode.Field
	for i := range headerFieldCount {
		f := headerField(p, base, i)
		fs = append(fs, &f)
	}
	pf := fs[len(fs)-1]
	flags := binary.BigEndian.Uint16(p[12:])
	props, err := dissectArgs(newPropWalk(p[pf.Offset-base:], flags), pf.Offset, "amqp.method.properties.")
	pf.Kids = props
	if err != nil {
		pf.Kids = append(pf.Kids, &decode.Field{Key: "error", Value: err.Error()})
	}
	return fs
}

// The fields of a content header's fixed part, in tree order; the last is
// the properties group (without its kids).
var headerFieldNames = [...]string{"amqp.header.class", "amqp.header.weight", "amqp.header.body-size",
	"amqp.header.property-flags", "amqp.header.properties"}

const headerFieldCount = len(headerFieldNames)

// headerField returns field i of headerFieldNames of a content header
// payload p (at least 14 bytes) at offset base of the unit.
func headerField(p []byte, base, i int) decode.Field {
	switch i {
	case 0:
		class := binary.BigEndian.Uint16(p)
		f := decode.Field{Key: "class", Name: headerFieldNames[i], Value: uint64(class), Encoding: "short", Offset: base, Length: 2}
		if n := className(class); n != "" {
			f.Display = n + " (" + strconv.Itoa(int(class)) + ")"
		}
		return f
	case 1:
		return decode.Field{Key: "weight", Name: headerFieldNames[i], Value: uint64(binary.BigEndian.Uint16(p[2:])), Encoding: "short", Offset: base + 2, Length: 2}
	case 2:
		return decode.Field{Key: "body-size", Name: headerFieldNames[i], Value: binary.BigEndian.Uint64(p[4:]), Encoding: "longlong", Offset: base + 4, Length: 8}
	case 3:
		flags := binary.BigEndian.Uint16(p[12:])
		return decode.Field{Key: "property-flags", Name: headerFieldNames[i], Value: uint64(flags),
			Display: "0x" + hexByte(byte(flags>>8)) + hexByte(byte(flags)), Encoding: "short", Offset: base + 12, Length: 2}
	}
	off := propertiesOffset(p)
	return decode.Field{Key: "properties", Name: headerFieldNames[i], Kind: decode.KindMap, Offset: base + off, Length: len(p) - off}
}

// propertiesOffset returns where a content header payload's property
// values start: after the property flags, which continue into another
// 16-bit word while the lowest bit is set.
func propertiesOffset(p []byte) int {
	off := 14
	for f := binary.BigEndian.Uint16(p[12:]); f&1 != 0 && off+2 <= len(p); off += 2 {
		f = binary.BigEndian.Uint16(p[off:])
	}
	return off
}

// redactFields replaces secrets in a method's argument fields.
func redactFields(info *MethodInfo, args []*decode.Field) {
	for _, f := range args {
		if isSecretArg(info, f.Key) {
			f.Value, f.Display, f.Kind, f.Kids = decode.Redacted, "", decode.KindValue, nil
		}
	}
}

func isSecretArg(info *MethodInfo, arg string) bool {
	switch info.Name {
	case "connection.start-ok", "connection.secure-ok":
		return arg == "response"
	case "connection.update-secret":
		return arg == "new-secret"
	}
	return false
}
