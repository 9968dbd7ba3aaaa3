package amqp10

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

func init() { decode.RegisterFieldsJSON(dissectFrame, frameFieldsJSON) }

// jsonWriter renders located values as decode/output renders the trees
// the materializer builds from them, without building the trees. ok turns
// false on anything it leaves to the tree: a value nested deep, an unknown
// descriptor, a composite that is not a list or has more fields than are
// shown, a map key that is not a string or symbol or that repeats, an
// array, a decoding error. count is the number of fields the renderer
// would count against its limit.
type jsonWriter struct {
	b     []byte
	out   []byte
	count int
	ok    bool
}

// maxJSONDepth bounds the nesting the direct rendering follows; deeper
// values are left to the tree (which has its own limit, maxDepth).
const maxJSONDepth = 16

func (w *jsonWriter) fail() { w.ok = false }

func (w *jsonWriter) str(s []byte) {
	w.out = decode.AppendJSONString(w.out, unsafe.String(unsafe.SliceData(s), len(s)))
}

// value appends v as the materializer's value(v, key, name, typ, depth)
// field renders.
func (w *jsonWriter) value(v Value, typ string, depth int) {
	if !w.ok {
		return
	}
	if depth > maxJSONDepth {
		w.fail()
		return
	}
	if v.Described() {
		w.described(v, typ, depth)
		return
	}
	w.primitive(v, depth)
}

func (w *jsonWriter) described(v Value, typ string, depth int) {
	loadTables()
	b := w.b
	code, _, ok := v.Descriptor(b)
	var t *describedType
	if ok {
		t = describedOf(code)
	}
	if t == nil {
		w.fail()
		return
	}
	if t.class == "composite" && t.source == "list" {
		var c Composite
		if err := c.Set(b, v); err != nil || c.N < v.Count {
			w.fail()
			return
		}
		if c.N == 0 {
			w.out = decode.AppendJSONString(w.out, t.name)
			return
		}
		ct := composites[code]
		if ct == nil || c.N > len(ct.keys) {
			w.fail()
			return
		}
		w.out = append(w.out, '{')
		sep := false
		if len(typ) > 0 && typ[0] == '*' {
			// Where several composites may appear, the tree says which.
			w.out = append(w.out, `"type":`...)
			w.out = decode.AppendJSONString(w.out, t.name)
			w.count++
			sep = true
		}
		// The composite's keys are its spec's field names, which do not
		// repeat (nor are they "type").
		for i := 0; i < c.N && w.ok; i++ {
			if sep {
				w.out = append(w.out, ',')
			}
			sep = true
			w.count++
			w.out = decode.AppendJSONString(w.out, ct.keys[i])
			w.out = append(w.out, ':')
			w.value(c.Fields[i], ct.typs[i], depth+1)
		}
		w.out = append(w.out, '}')
		return
	}
	// A restricted type with a descriptor (a section): its underlying
	// value, as the tree shows it.
	inner := v
	inner.Start, inner.DescStart, inner.DescEnd = v.DescEnd, 0, 0
	w.value(inner, "", depth+1)
}

func (w *jsonWriter) primitive(v Value, depth int) {
	b := w.b
	d := b[v.Data:v.End]
	switch v.Code {
	case CodeNull:
		w.out = append(w.out, "null"...)
	case CodeTrue, CodeFalse, CodeBoolean:
		x, _ := v.Bool(b)
		w.out = strconv.AppendBool(w.out, x)
	case CodeUbyte, CodeUshort, CodeUint, CodeSmallUint, CodeUint0, CodeUlong, CodeSmallUlong, CodeUlong0:
		x, _ := v.Uint(b)
		w.out = strconv.AppendUint(w.out, x, 10)
	case CodeByte, CodeShort, CodeInt, CodeSmallInt, CodeLong, CodeSmallLong:
		x, _ := v.Int(b)
		w.out = strconv.AppendInt(w.out, x, 10)
	case CodeFloat, CodeDouble:
		var x float64
		if v.Code == CodeFloat {
			x = float64(math.Float32frombits(binary.BigEndian.Uint32(d)))
		} else {
			x = math.Float64frombits(binary.BigEndian.Uint64(d))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			w.fail()
			return
		}
		w.out = strconv.AppendFloat(w.out, x, 'g', -1, 64)
	case CodeTimestamp:
		ms, _ := v.Int(b)
		w.out = append(w.out, '"')
		w.out = time.UnixMilli(ms).UTC().AppendFormat(w.out, time.RFC3339Nano)
		w.out = append(w.out, '"')
	case CodeVbin8, CodeVbin32:
		w.out = decode.AppendJSONHex(w.out, d)
	case CodeStr8, CodeStr32, CodeSym8, CodeSym32:
		w.str(d)
	case CodeList0, CodeList8, CodeList32:
		it := v.Items(b)
		it.depth = depth + 1
		w.out = append(w.out, '[')
		for i := 0; it.Next() && w.ok; i++ {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.count++
			w.value(it.Value, "", depth+1)
		}
		if it.Err() != nil {
			w.fail()
		}
		w.out = append(w.out, ']')
	case CodeMap8, CodeMap32:
		w.mapValue(v, depth)
	default:
		// UUIDs, decimals, chars, arrays, invalid constructors: the tree.
		w.fail()
	}
}

// mapValue appends a map whose keys are all strings or symbols, none
// repeated (the tree numbers repeated keys; that is left to it).
func (w *jsonWriter) mapValue(v Value, depth int) {
	b := w.b
	it := v.Items(b)
	it.depth = depth + 1
	// Keys seen so far at this level, as offsets into b: a map of a few
	// entries is checked by comparison, a larger one left to the tree.
	var keys [16][2]int
	n := 0
	w.out = append(w.out, '{')
	for w.ok && it.Next() {
		k := it.Value
		if !it.Next() {
			// An odd item count: the tree drops the lone key.
			break
		}
		if k.Described() || (k.Code != CodeSym8 && k.Code != CodeSym32 && k.Code != CodeStr8 && k.Code != CodeStr32) || n == len(keys) {
			w.fail()
			return
		}
		ks := b[k.Data:k.End]
		if !utf8.Valid(ks) {
			// The tree's key is the raw string, which output writes with
			// U+FFFD; two such keys could then collide: left to it.
			w.fail()
			return
		}
		for _, p := range keys[:n] {
			if string(b[p[0]:p[1]]) == string(ks) {
				w.fail()
				return
			}
		}
		keys[n] = [2]int{k.Data, k.End}
		if n > 0 {
			w.out = append(w.out, ',')
		}
		n++
		w.count++
		w.str(ks)
		w.out = append(w.out, ':')
		w.value(it.Value, "", depth+1)
	}
	if it.Err() != nil {
		w.fail()
	}
	w.out = append(w.out, '}')
}

// frameFieldsJSON renders what dissectFrame's tree renders.
func frameFieldsJSON(out []byte, u *decode.Unit, maxFields int) ([]byte, bool) {
	var f Frame
	if n, err := ParseFrame(u.Raw, &f); n == 0 || err != nil {
		return out, false
	}
	mark := len(out)
	w := jsonWriter{b: u.Raw, out: out, ok: true}
	w.out = append(w.out, `{"frame":{"size":`...)
	w.out = strconv.AppendUint(w.out, uint64(f.Size), 10)
	w.out = append(w.out, `,"doff":`...)
	w.out = strconv.AppendUint(w.out, uint64(f.DOff), 10)
	w.out = append(w.out, `,"type":`...)
	w.out = strconv.AppendUint(w.out, uint64(f.Type), 10)
	if f.Type == FrameTypeAMQP {
		w.out = append(w.out, `,"channel":`...)
		w.out = strconv.AppendUint(w.out, uint64(f.Channel), 10)
	} else {
		w.out = append(w.out, `,"type-specific":`...)
		w.out = strconv.AppendUint(w.out, uint64(binary.BigEndian.Uint16(u.Raw[6:])), 10)
	}
	w.count += 5
	if len(f.Ext) > 0 {
		w.out = append(w.out, `,"extended-header":`...)
		w.out = decode.AppendJSONHex(w.out, f.Ext)
		w.count++
	}
	w.out = append(w.out, '}')
	if len(f.Body) > 0 && (f.Type == FrameTypeAMQP || f.Type == FrameTypeSASL) {
		body := f.BodyOffset()
		v, err := Scan(u.Raw, body)
		if err != nil {
			return out[:mark], false
		}
		w.out = append(w.out, `,"performative":`...)
		w.out = decode.AppendJSONString(w.out, u.Type)
		w.out = append(w.out, `,"arguments":`...)
		w.count += 2
		w.value(v, "", 0)
		if v.End < len(u.Raw) {
			w.out = append(w.out, `,"payload":`...)
			w.out = strconv.AppendUint(w.out, uint64(len(u.Raw)-v.End), 10)
			w.count++
		}
		if cm := MessageOf(u).WithSections(); cm != nil && w.ok {
			w.message(u, cm)
		}
	}
	if !w.ok || maxFields >= 0 && w.count > maxFields {
		return out[:mark], false
	}
	return append(w.out, '}'), true
}

// message appends the "message" subtree messageFields builds.
func (w *jsonWriter) message(u *decode.Unit, cm *CompletedMessage) {
	for i, a := range cm.Annotations {
		// Fields built elsewhere (the immutability verdict): those with a
		// text value render as that value; anything else is the tree's.
		if _, ok := a.Value.(string); !ok || a.Kind != decode.KindValue {
			w.fail()
			return
		}
		switch a.Key {
		case "message-id", "checksum", "bare-message", "frames", "sections":
			w.fail()
			return
		}
		for _, b := range cm.Annotations[:i] {
			if b.Key == a.Key {
				w.fail()
				return
			}
		}
		if cm.identical.paired && a.Key == verdictKey {
			w.fail()
			return
		}
	}
	w.out = append(w.out, `,"message":{`...)
	w.count++
	sep := false
	if id := u.MessageID(); id != "" {
		w.out = append(w.out, `"message-id":`...)
		w.out = decode.AppendJSONString(w.out, id)
		w.count++
		sep = true
	}
	if ck := u.Checksum(); ck != nil {
		// A value with explanatory children: JSON shows the value.
		if sep {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, `"checksum":`...)
		w.out = decode.AppendJSONString(w.out, ck.Status.String())
		w.count++
		sep = true
	}
	if sep {
		w.out = append(w.out, ',')
	}
	w.out = append(w.out, `"bare-message":`...)
	w.out = strconv.AppendUint(w.out, uint64(cm.Message.BareEnd-cm.Message.BareStart), 10)
	w.count++
	if cm.Frames > 1 {
		w.out = append(w.out, `,"frames":`...)
		w.out = strconv.AppendUint(w.out, uint64(cm.Frames), 10)
		w.count++
	}
	w.out = append(w.out, `,"sections":{`...)
	w.count++
	secs := cm.Message.Sections
	mw := jsonWriter{b: cm.Bytes, out: w.out, ok: true}
	for i := range secs {
		name := secs[i].Name()
		for j := range i {
			if secs[j].Name() == name {
				// Repeated sections (several data sections) are numbered
				// by the tree.
				w.fail()
				return
			}
		}
		if i > 0 {
			mw.out = append(mw.out, ',')
		}
		mw.count++
		mw.out = decode.AppendJSONString(mw.out, name)
		mw.out = append(mw.out, ':')
		mw.value(secs[i].Value, "", 0)
	}
	w.out = append(mw.out, '}')
	w.count += mw.count
	w.ok = w.ok && mw.ok
	for _, a := range cm.Annotations {
		w.out = append(w.out, ',')
		w.out = decode.AppendJSONString(w.out, a.Key)
		w.out = append(w.out, ':')
		w.out = decode.AppendJSONString(w.out, a.Value.(string))
		w.count++
	}
	if cm.identical.paired {
		w.out = append(w.out, `,"`+verdictKey+`":"identical"`...)
		w.count++
	}
	w.out = append(w.out, '}')
}
