package amqp091

import (
	"encoding/binary"
	"strconv"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// Direct JSON renderings (decode.FieldsJSON) of the frames that make up
// nearly all AMQP 0-9-1 traffic: methods, content headers and bodies, and
// the message a body (or header) completes. Each writes, byte for byte,
// what decode/output renders from the tree dissectFrame or message.dissect
// builds, and gives up (the tree is rendered instead) on anything those
// trees would show differently from the plain case: an error, a redacted
// secret, a table with entries, property flags continued into a second
// word. TestFastFieldsMatchTree (decode/output) compares the two on every
// unit of the shipped captures.

func init() {
	decode.RegisterFieldsJSON(dissectFrame, frameFieldsJSON)
	// A completed message's Dissect is the method value m.dissect; its
	// receiver is read back from the method value's closure. The layout is
	// checked here, on a message of our own: where it does not hold, such
	// units are rendered from their trees.
	if decode.ReceiverLayout(func(m *message) func(*decode.Unit) []*decode.Field { return m.dissect }) {
		decode.RegisterFieldsJSON((&message{}).dissect, messageFieldsJSON)
		decode.RegisterDissectState((&message{}).dissect, freezeMessage, thawMessage)
	}
	decode.RegisterDissect(dissectFrame, dissectMalformed, dissectProtocolHeader)
}

// messageOf returns the receiver of a method value m.dissect.
func messageOf(f func(*decode.Unit) []*decode.Field) *message { return decode.Receiver[message](f) }

func frameFieldsJSON(b []byte, u *decode.Unit, maxFields int) ([]byte, bool) {
	mark, count := len(b), 0
	b, ok := appendFrameJSON(b, u, &count)
	if !ok || maxFields >= 0 && count > maxFields {
		return b[:mark], false
	}
	return append(b, '}'), true
}

func messageFieldsJSON(b []byte, u *decode.Unit, maxFields int) ([]byte, bool) {
	m := messageOf(u.Dissect)
	mark, count := len(b), 0
	b, ok := appendFrameJSON(b, u, &count)
	if !ok {
		return b[:mark], false
	}
	method, header := m.method, m.header
	b = append(b, `,"message":{`...)
	count++
	sep := false
	if len(method) >= 4 {
		class, id := binary.BigEndian.Uint16(method), binary.BigEndian.Uint16(method[2:])
		if info := LookupMethod(class, id); info != nil {
			b = append(b, `"method":`...)
			b = decode.AppendJSONString(b, info.Name)
			b = append(b, `,"arguments":`...)
			count += 2
			w := newArgWalk(method[4:], info.Args)
			if b, ok = appendArgsJSON(b, &w, &count); !ok {
				return b[:mark], false
			}
			sep = true
		}
	}
	if len(header) >= 14 {
		if sep {
			b = append(b, ',')
		}
		b = append(b, `"properties":`...)
		count++
		if b, ok = appendPropsJSON(b, header, &count); !ok {
			return b[:mark], false
		}
		sep = true
	}
	if sep {
		b = append(b, ',')
	}
	b = append(b, `"body-size":`...)
	b = strconv.AppendUint(b, m.size, 10)
	b = append(b, `,"body":`...)
	if m.bodyInUnit {
		b = appendTextOrBytes(b, framePayload(u))
	} else {
		b = appendBodyJSON(b, m.body)
	}
	count += 2
	if maxFields >= 0 && count > maxFields {
		return b[:mark], false
	}
	return append(b, "}}"...), true
}

// appendFrameJSON appends the frame's fields as dissectFrame's tree
// renders them, the object left open for more keys.
func appendFrameJSON(b []byte, u *decode.Unit, count *int) ([]byte, bool) {
	raw := u.Raw
	if u.Secret || len(raw) < FrameOverhead {
		return b, false
	}
	h, _ := PeekFrameHead(raw)
	if FrameOverhead+int(h.Size) != len(raw) {
		return b, false
	}
	payload := raw[FrameHeaderSize : len(raw)-1]
	b = append(b, `{"type":`...)
	b = strconv.AppendUint(b, uint64(h.Type), 10)
	b = append(b, `,"channel":`...)
	b = strconv.AppendUint(b, uint64(h.Channel), 10)
	b = append(b, `,"length":`...)
	b = strconv.AppendUint(b, uint64(h.Size), 10)
	*count += 3
	ok := true
	switch h.Type {
	case FrameMethod:
		if len(payload) < 4 {
			return b, false
		}
		class, id := binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])
		info := LookupMethod(class, id)
		if info == nil {
			return b, false
		}
		b = append(b, `,"class":`...)
		b = strconv.AppendUint(b, uint64(class), 10)
		b = append(b, `,"method":`...)
		b = strconv.AppendUint(b, uint64(id), 10)
		b = append(b, `,"name":`...)
		b = decode.AppendJSONString(b, info.Name)
		b = append(b, `,"arguments":`...)
		*count += 4
		w := newArgWalk(payload[4:], info.Args)
		b, ok = appendArgsJSON(b, &w, count)
	case FrameHeader:
		var hd ContentHeader
		if hd.DecodeFromBytes(payload) != nil || len(payload) < 14 {
			return b, false
		}
		b = append(b, `,"class":`...)
		b = strconv.AppendUint(b, uint64(binary.BigEndian.Uint16(payload)), 10)
		b = append(b, `,"weight":`...)
		b = strconv.AppendUint(b, uint64(binary.BigEndian.Uint16(payload[2:])), 10)
		b = append(b, `,"body-size":`...)
		b = strconv.AppendUint(b, binary.BigEndian.Uint64(payload[4:]), 10)
		b = append(b, `,"property-flags":`...)
		b = strconv.AppendUint(b, uint64(binary.BigEndian.Uint16(payload[12:])), 10)
		b = append(b, `,"properties":`...)
		*count += 5
		b, ok = appendPropsJSON(b, payload, count)
	case FrameBody:
		b = append(b, `,"payload":`...)
		b = decode.AppendJSONHex(b, payload)
		*count++
	}
	return b, ok
}

// appendPropsJSON appends the properties of content header payload p (at
// least 14 bytes) as an object.
func appendPropsJSON(b []byte, p []byte, count *int) ([]byte, bool) {
	flags := binary.BigEndian.Uint16(p[12:])
	if flags&1 != 0 {
		return b, false // continued flags: left to the tree
	}
	w := newPropWalk(p[14:], flags)
	return appendArgsJSON(b, &w, count)
}

// appendArgsJSON renders the arguments (or properties) w walks as the
// object dissectArgs's fields render to, as argWalk.next decodes them;
// false on anything next would report as an error, and for a table with
// entries.
func appendArgsJSON(b []byte, w *argWalk, count *int) ([]byte, bool) {
	r := &w.r
	b = append(b, '{')
	for n := 0; ; n++ {
		for ; w.i < len(w.infos); w.i++ {
			if !w.props || w.flags&(1<<(15-w.i)) != 0 {
				break
			}
		}
		if w.i == len(w.infos) {
			if r.off != len(r.b) {
				return b, false
			}
			return append(b, '}'), true
		}
		a := &w.infos[w.i]
		w.i++
		if n > 0 {
			b = append(b, ',')
		}
		*count++
		b = decode.AppendJSONString(b, a.Name)
		b = append(b, ':')
		if a.Domain == DomainBit && !w.props {
			if w.bitPos == 8 {
				w.bitOff = r.off
				w.bits = r.octet()
				w.bitPos = 0
			}
			v := w.bits&(1<<w.bitPos) != 0
			w.bitPos++
			if r.short {
				return b, false
			}
			b = strconv.AppendBool(b, v)
			continue
		}
		w.bitPos = 8
		switch a.Domain {
		case DomainBit, DomainOctet:
			b = strconv.AppendUint(b, uint64(r.octet()), 10)
		case DomainShort:
			b = strconv.AppendUint(b, uint64(r.short16()), 10)
		case DomainLong:
			b = strconv.AppendUint(b, uint64(r.long32()), 10)
		case DomainLonglong:
			b = strconv.AppendUint(b, r.longlong(), 10)
		case DomainTimestamp:
			v := r.longlong()
			if r.short {
				return b, false
			}
			b = append(b, '"')
			b = unixTime(v).UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		case DomainShortstr:
			s := r.shortstr()
			if r.short {
				return b, false
			}
			b = decode.AppendJSONString(b, unsafe.String(unsafe.SliceData(s), len(s)))
		case DomainLongstr:
			s := r.longstr()
			if r.short {
				return b, false
			}
			b = appendTextOrBytes(b, s)
		case DomainTable:
			t := r.table()
			if r.short || len(t) != 0 {
				return b, false
			}
			b = append(b, "{}"...)
		default:
			return b, false
		}
		if r.short {
			return b, false
		}
	}
}

// appendTextOrBytes renders s as textOrBytes's value renders: a string
// when printable, hex otherwise.
func appendTextOrBytes(b, s []byte) []byte {
	if printable(s) {
		return decode.AppendJSONString(b, unsafe.String(unsafe.SliceData(s), len(s)))
	}
	return decode.AppendJSONHex(b, s)
}

// appendBodyJSON renders body as appendTextOrBytes renders it joined.
// Pieces are rendered one by one when the body is not text (hex is the
// hex of each piece in turn): a byte printable rejects in any piece
// settles that without joining. A body that may be text is joined, as
// its UTF-8 must be judged (and escaped) across the pieces' seams.
func appendBodyJSON(b []byte, body *decode.Pieces) []byte {
	ps := body.Slices()
	if len(ps) == 1 {
		return appendTextOrBytes(b, ps[0])
	}
	text := true
	for _, p := range ps {
		if !maybePrintable(p) {
			text = false
			break
		}
	}
	if text {
		p, _ := body.Join()
		return appendTextOrBytes(b, p)
	}
	b = decode.GrowJSON(b, 2*body.Len()+2)
	b = append(b, '"')
	for _, p := range ps {
		b = decode.AppendHex(b, p)
	}
	return append(b, '"')
}

// maybePrintable reports whether s has none of the bytes printable
// rejects whatever surrounds them: controls other than tab, newline and
// carriage return, and DEL.
func maybePrintable(s []byte) bool {
	for _, c := range s {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
