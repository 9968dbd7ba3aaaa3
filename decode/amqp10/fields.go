package amqp10

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/decode"
)

// materializer turns located values into field trees. It is the cold path:
// it runs when someone looks at a unit.
type materializer struct {
	b []byte
	// base is added to every offset into b, so offsets end up relative to
	// Unit.Raw; valid says which offsets into b map onto Unit.Raw at all
	// (offsets below it get no range).
	base  int
	valid int
}

func (m *materializer) span(f *decode.Field, start, end int) {
	if start < m.valid || end < start {
		return
	}
	f.Offset, f.Length = m.base+start, end-start
}

// Materialize decodes the value at b[off] into a field tree with the given
// key. Offsets in the tree are relative to b.
func Materialize(b []byte, off int, key string) *decode.Field {
	m := &materializer{b: b}
	v, err := Scan(b, off)
	if err != nil {
		return &decode.Field{Key: key, Display: "error: " + err.Error()}
	}
	return m.value(v, key, "", "", 0)
}

// errTooDeep stands for a value nested past maxDepth.
const errTooDeep = "error: not decoded: nested more than 64 levels deep (the depth limit)"

// value materialises v. typ is the spec type the context expects ("role",
// "*delivery-state", ""), used to name restricted choices.
func (m *materializer) value(v Value, key, name, typ string, depth int) *decode.Field {
	f := &decode.Field{Key: key, Name: name}
	m.span(f, v.Start, v.End)
	if depth > maxDepth {
		// A value, not only a Display: JSON renders Value, and showed null.
		f.Value = errTooDeep
		f.Display = errTooDeep
		return f
	}
	if v.Described() {
		m.describedValue(f, v, typ, depth)
		return f
	}
	m.primitive(f, v, depth)
	if typ != "" {
		if cs, ok := choices[typ]; ok {
			if n, ok := cs[f.Text()]; ok {
				f.Display = n + " (" + f.Text() + ")"
			} else if s, ok := f.Value.(string); ok {
				if n, ok := cs[s]; ok {
					f.Display = n + " (" + s + ")"
				}
			}
		}
	}
	return f
}

// describedValue materialises a described value. typ is what the context
// expects; "*delivery-state" and the like (type="*" in the spec) mean any
// of several composites may appear, so the tree names which one did.
func (m *materializer) describedValue(f *decode.Field, v Value, typ string, depth int) {
	loadTables()
	b := m.b
	code, sym, ok := v.Descriptor(b)
	var t *describedType
	if ok {
		t = describedOf(code)
	}
	desc := "described"
	f.Encoding = ""
	if d, err := Scan(b[:v.DescEnd], v.DescStart); err == nil {
		// A known type under its numeric descriptor, as a list (every
		// performative): the encoding text the finder precomputed, rather
		// than three concatenations per value.
		if enc, ok := emptyEncoding[emptyKey{descKey{d.Code, code}, v.Code}]; ok && t != nil && sym == nil {
			f.Encoding = enc
		} else {
			desc = "described " + d.Code.Encoding() + " " + descriptorText(code, sym)
		}
	}
	if f.Encoding == "" {
		f.Encoding = desc + ", " + v.Code.Encoding()
	}
	if t == nil {
		f.Display = descriptorText(code, sym)
		inner := v
		inner.Start, inner.DescStart, inner.DescEnd = v.DescEnd, 0, 0
		f.Add(m.value(inner, "value", "", "", depth+1))
		return
	}
	f.Display = t.name
	if t.class == "composite" && t.source == "list" {
		var c Composite
		if err := c.Set(b, v); err != nil {
			f.Display = t.name + " (error: " + err.Error() + ")"
			return
		}
		if c.N == 0 {
			// accepted, released, ...: the type is the whole value.
			f.Value = t.name
			return
		}
		f.Kind = decode.KindMap
		if len(typ) > 0 && typ[0] == '*' {
			f.Add(&decode.Field{Key: "type", Value: t.name})
		}
		ct := composites[code]
		for i := 0; i < c.N; i++ {
			var key, name, typ string
			if ct != nil && i < len(ct.keys) {
				// Names computed once per type (find.go), not per value.
				key, name, typ = ct.keys[i], ct.names[i], ct.typs[i]
			} else {
				key = "field-" + strconv.Itoa(i)
				if i < len(t.fields) {
					key, typ = t.fields[i].name, t.fields[i].typ
				}
				name = fieldName(t.name, key)
			}
			f.Add(m.value(c.Fields[i], key, name, typ, depth+1))
		}
		if c.N < v.Count {
			f.Add(&decode.Field{Key: "ignored", Display: strconv.Itoa(v.Count-c.N) + " more fields not shown"})
		}
		return
	}
	// Restricted types with a descriptor (sections): show the underlying
	// value's children directly.
	inner := v
	inner.Start, inner.DescStart, inner.DescEnd = v.DescEnd, 0, 0
	g := m.value(inner, t.name, "", "", depth+1)
	f.Value, f.Kind, f.Kids = g.Value, g.Kind, g.Kids
	if g.Value != nil || len(g.Kids) == 0 {
		f.Display = g.Text()
	}
	if f.Kind == decode.KindMap && openSection(f.Name) {
		// Entries of a map section are named by their keys, so that a
		// filter can test amqp.applicationProperties.tenant.
		for _, k := range f.Kids {
			if entryKey(k.Key) {
				k.Name = f.Name + "." + k.Key
			}
		}
	}
}

// openSection reports whether name is a map section whose entries are
// named by their keys (and registered as an open table).
func openSection(name string) bool {
	switch name {
	case "amqp.deliveryAnnotations", "amqp.messageAnnotations", "amqp.applicationProperties", "amqp.footer":
		return true
	}
	return false
}

// entryKey reports whether a map key can extend a dotted field name.
func entryKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func descriptorText(code uint64, sym []byte) string {
	if sym != nil {
		return string(sym)
	}
	if t := describedOf(code); t != nil {
		return t.symbol
	}
	return "0x" + strconv.FormatUint(code>>32, 16) + ":" + strconv.FormatUint(code&0xffffffff, 16)
}

// fixedScalar returns the value (and display text) of a null, boolean,
// number, timestamp or UUID as trees hold it; ok is false for the other
// encodings. Both the materializer and the finder use it.
func fixedScalar(b []byte, v Value) (val any, disp string, ok bool) {
	d := b[v.Data:v.End]
	switch v.Code {
	case CodeNull:
		return nil, "null", true
	case CodeTrue, CodeFalse, CodeBoolean:
		x, _ := v.Bool(b)
		return x, "", true
	case CodeUbyte, CodeUshort, CodeUint, CodeSmallUint, CodeUint0, CodeUlong, CodeSmallUlong, CodeUlong0:
		x, _ := v.Uint(b)
		return x, "", true
	case CodeByte, CodeShort, CodeInt, CodeSmallInt, CodeLong, CodeSmallLong:
		x, _ := v.Int(b)
		return x, "", true
	case CodeFloat:
		return float64(math.Float32frombits(binary.BigEndian.Uint32(d))), "", true
	case CodeDouble:
		return math.Float64frombits(binary.BigEndian.Uint64(d)), "", true
	case CodeTimestamp:
		ms, _ := v.Int(b)
		return time.UnixMilli(ms).UTC(), "", true
	case CodeUUID:
		id := formatUUID(d)
		return id, id, true
	}
	return nil, "", false
}

func (m *materializer) primitive(f *decode.Field, v Value, depth int) {
	b := m.b
	f.Encoding = v.Code.Encoding()
	d := b[v.Data:v.End]
	if val, disp, ok := fixedScalar(b, v); ok {
		f.Value = val
		if disp != "" {
			f.Display = disp
		}
		return
	}
	switch v.Code {
	case CodeDecimal32, CodeDecimal64, CodeDecimal128:
		f.Value = append([]byte(nil), d...)
		f.Display = v.Code.String() + " 0x" + hex.EncodeToString(d)
	case CodeChar:
		r := rune(binary.BigEndian.Uint32(d))
		if !utf8.ValidRune(r) {
			f.Value = uint64(uint32(r))
			f.Display = "invalid char U+" + strconv.FormatUint(uint64(uint32(r)), 16)
		} else {
			f.Value = string(r)
		}
	case CodeVbin8, CodeVbin32:
		f.Value = append([]byte(nil), d...)
	case CodeStr8, CodeStr32:
		f.Value = string(d)
		if !utf8.Valid(d) {
			f.Display = "invalid UTF-8 " + strconv.Quote(string(d))
		}
	case CodeSym8, CodeSym32:
		f.Value = string(d)
	case CodeList0, CodeList8, CodeList32:
		f.Kind = decode.KindList
		it := v.Items(b)
		it.depth = depth + 1
		for i := 0; it.Next(); i++ {
			f.Add(m.value(it.Value, strconv.Itoa(i), "", "", depth+1))
		}
		m.iterError(f, &it)
	case CodeMap8, CodeMap32:
		f.Kind = decode.KindMap
		it := v.Items(b)
		it.depth = depth + 1
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			key := m.value(k, "key", "", "", depth+1)
			ks := key.Text()
			if s, ok := key.Value.(string); ok {
				ks = s
			}
			val := m.value(it.Value, ks, "", "", depth+1)
			m.span(val, k.Start, it.Value.End)
			if _, isText := key.Value.(string); !isText || (k.Code != CodeSym8 && k.Code != CodeSym32 && k.Code != CodeStr8 && k.Code != CodeStr32) {
				// Keys are mostly symbols or strings; a key of another
				// type (annotations allow ulongs) keeps its encoding
				// visible as the value's first child.
				val.Kids = append([]*decode.Field{key}, val.Kids...)
			}
			f.Add(val)
		}
		m.iterError(f, &it)
	case CodeArray8, CodeArray32:
		f.Kind = decode.KindList
		f.Encoding += " of " + v.Elem.Code.Encoding()
		it := v.Items(b)
		it.depth = depth + 1
		for i := 0; it.Next(); i++ {
			e := it.Value
			if v.Elem.DescEnd > v.Elem.DescStart {
				e.DescStart, e.DescEnd = v.Elem.DescStart, v.Elem.DescEnd
			}
			k := m.value(e, strconv.Itoa(i), "", "", depth+1)
			m.span(k, it.Value.Start, it.Value.End)
			f.Add(k)
		}
		m.iterError(f, &it)
	default:
		f.Display = "invalid constructor " + hexByte(byte(v.Code))
	}
}

func (m *materializer) iterError(f *decode.Field, it *Items) {
	if err := it.Err(); err != nil {
		msg := err.Error()
		f.Add(&decode.Field{Key: "error", Value: msg, Display: msg})
	}
}

func formatUUID(d []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], d[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], d[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], d[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], d[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], d[10:16])
	return string(s[:])
}

// fieldName returns the Wireshark display-filter name of field key of the
// described type typ, following packet-amqp.c's names where they exist.
func fieldName(typ, key string) string {
	if n, ok := wiresharkNames[typ+"."+key]; ok {
		return n
	}
	switch typ {
	case "open", "begin", "attach", "flow", "transfer", "disposition", "detach", "end", "close":
		return "amqp.performative.arguments." + camel(key)
	case "header", "properties":
		return "amqp.message." + camel(key)
	case "source", "target":
		return "amqp.properties." + camel(key)
	case "error":
		return "amqp.error." + camel(key)
	case "received", "modified", "rejected":
		return "amqp." + typ + "." + camel(key)
	case "sasl-mechanisms", "sasl-init", "sasl-challenge", "sasl-response", "sasl-outcome":
		return "amqp.sasl." + camel(key)
	}
	return ""
}

// wiresharkNames holds the names packet-amqp.c spells differently from the
// camel-cased spec name.
var wiresharkNames = map[string]string{
	"open.idle-time-out":                     "amqp.performative.arguments.idleTimeout",
	"open.offered-capabilities":              "amqp.arguments.offeredCapabilities",
	"attach.initial-delivery-count":          "amqp.performative.arguments.initDeliveryCount",
	"source.address":                         "amqp.performative.arguments.address",
	"target.address":                         "amqp.performative.arguments.address",
	"source.durable":                         "amqp.performative.arguments.terminusDurable",
	"target.durable":                         "amqp.performative.arguments.terminusDurable",
	"properties.absolute-expiry-time":        "amqp.message.expiryTime",
	"sasl-mechanisms.sasl-server-mechanisms": "amqp.sasl.mechanisms",
	"sasl-init.initial-response":             "amqp.sasl.initResponse",
	"sasl-outcome.code":                      "amqp.sasl.saslCode",
	"sasl-outcome.additional-data":           "amqp.sasl.addData",
	"rejected.error":                         "amqp.performative.arguments.error",
}

func camel(s string) string {
	out := make([]byte, 0, len(s))
	up := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
