package broker

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// Conversion between AMQP 1.0 and 0-9-1 messages, as RabbitMQ 4 converts
// them (its mc_amqpl module), for a message published over one protocol
// and consumed over the other. Only the crossing pays for it: a message
// consumed over the protocol it was published with is sent as stored.
//
//	AMQP 1.0                          AMQP 0-9-1
//	header.durable                    delivery-mode 2 (true) / 1 (false)
//	header.priority                   priority
//	header.ttl                        expiration (decimal milliseconds)
//	properties.message-id             message-id (string up to 255 bytes;
//	                                  a uuid as urn:uuid:..., a ulong in
//	                                  decimal; a longer string or binary
//	                                  goes to header x-message-id)
//	properties.correlation-id         correlation-id (as message-id, else
//	                                  header x-correlation-id)
//	properties.user-id                user-id (up to 255 bytes)
//	properties.reply-to               reply-to (up to 255 bytes)
//	properties.content-type           content-type
//	properties.content-encoding       content-encoding
//	properties.creation-time          timestamp (milliseconds / 1000)
//	properties.group-id               app-id
//	application-properties (string    headers (scalar values; 1.0 lists,
//	keys up to 255 bytes)             maps and arrays are not converted)
//	message-annotations x-*           headers (except the broker's own
//	                                  x-basic-*, x-exchange, x-routing-key)
//	message-annotations x-basic-type  type
//	body: data sections               body: their data, concatenated
//	body: amqp-value / amqp-sequence  body: the encoded sections and footer,
//	                                  type "amqp-1.0"
//
// and back: 0-9-1 headers named x-* become message-annotations, the others
// application-properties (scalar values only; field tables and arrays are
// not converted); type becomes the x-basic-type annotation; a body typed
// "amqp-1.0" is taken as the encoded sections it holds, any other is one
// data section. The header section is written only when durable, priority
// or ttl says something, properties and the annotations only when not
// empty.

// to091 returns the content header payload and body a 0-9-1 consumer gets
// for an AMQP 1.0 message m.
func to091(m *queue.Message) (header, body []byte) {
	b := make([]byte, 0, len(m.Header)+len(m.Body))
	b = append(append(b, m.Header...), m.Body...)
	var pm amqp10.Message
	h := amqp091.ContentHeader{ClassID: amqp091.ClassBasic}
	p := &h.Properties
	if err := amqp10.ParseMessage(b, &pm); err != nil {
		// Stored messages were parsed on arrival; this cannot happen,
		// but a consumer then still gets the bytes, typed.
		p.Flags, p.Type = amqp091.FlagType, []byte("amqp-1.0")
		h.BodySize = uint64(len(m.Body))
		return h.AppendTo(nil), m.Body
	}
	var xHeaders, appHeaders amqp091.Table
	var ann struct{ deliveryMode, priority, expiration, typ *amqp10.Value }
	allData, firstBody := true, -1
	var comp amqp10.Composite
	for i := range pm.Sections {
		sec := &pm.Sections[i]
		switch sec.Descriptor {
		case amqp10.DescriptorHeader:
			if comp.Set(b, sec.Value) != nil {
				continue
			}
			if d, ok := comp.Bool(b, headerDurable); ok {
				p.Flags |= amqp091.FlagDeliveryMode
				p.DeliveryMode = 1
				if d {
					p.DeliveryMode = 2
				}
			}
			if v, ok := comp.Uint(b, headerPriority); ok {
				p.Flags |= amqp091.FlagPriority
				p.Priority = uint8(min(v, 255))
			}
			if v, ok := comp.Uint(b, headerTTL); ok {
				p.Flags |= amqp091.FlagExpiration
				p.Expiration = strconv.AppendUint(nil, v, 10)
			}
		case amqp10.DescriptorMessageAnnotations:
			it := mapItems(b, sec.Value)
			for it.Next() {
				k := it.Value
				if !it.Next() {
					break
				}
				v := it.Value
				key, ok := k.Bytes(b)
				if !ok || (k.Code != amqp10.CodeSym8 && k.Code != amqp10.CodeSym32) || !strings.HasPrefix(string(key), "x-") || len(key) > 255 {
					continue
				}
				switch string(key) {
				case "x-basic-delivery-mode":
					ann.deliveryMode = &v
				case "x-basic-priority":
					ann.priority = &v
				case "x-basic-expiration":
					ann.expiration = &v
				case "x-basic-type":
					ann.typ = &v
				case "x-exchange", "x-routing-key", "x-basic-content-type":
				default:
					if hv, ok := value091(b, v); ok {
						xHeaders = xHeaders.Append(string(key), hv)
					}
				}
			}
		case amqp10.DescriptorProperties:
			if comp.Set(b, sec.Value) != nil {
				continue
			}
			if id, hdr, ok := messageID091(b, &comp, 0); ok {
				p.Flags |= amqp091.FlagMessageID
				p.MessageID = id
			} else if hdr.Type != 0 {
				appHeaders = appHeaders.Append("x-message-id", hdr)
			}
			if id, hdr, ok := messageID091(b, &comp, 5); ok {
				p.Flags |= amqp091.FlagCorrelationID
				p.CorrelationID = id
			} else if hdr.Type != 0 {
				appHeaders = appHeaders.Append("x-correlation-id", hdr)
			}
			set := func(i int, flag uint16, dst *[]byte) {
				if v, ok := comp.Bytes(b, i); ok && len(v) <= 255 {
					p.Flags |= flag
					*dst = v
				}
			}
			set(1, amqp091.FlagUserID, &p.UserID)
			set(4, amqp091.FlagReplyTo, &p.ReplyTo)
			set(6, amqp091.FlagContentType, &p.ContentType)
			set(7, amqp091.FlagContentEncoding, &p.ContentEncoding)
			set(10, amqp091.FlagAppID, &p.AppID)
			if f, ok := comp.Field(9); ok {
				if ms, ok := f.Int(b); ok && f.Code == amqp10.CodeTimestamp {
					p.Flags |= amqp091.FlagTimestamp
					p.Timestamp = time.Unix(ms/1000, 0).UTC()
				}
			}
		case amqp10.DescriptorApplicationProperties:
			it := mapItems(b, sec.Value)
			for it.Next() {
				k := it.Value
				if !it.Next() {
					break
				}
				key, ok := k.Bytes(b)
				if !ok || (k.Code != amqp10.CodeStr8 && k.Code != amqp10.CodeStr32) || len(key) > 255 {
					continue
				}
				if hv, ok := value091(b, it.Value); ok {
					appHeaders = appHeaders.Append(string(key), hv)
				}
			}
		case amqp10.DescriptorData, amqp10.DescriptorAMQPValue, amqp10.DescriptorAMQPSequence:
			if firstBody < 0 {
				firstBody = sec.Value.Start
			}
			if sec.Descriptor != amqp10.DescriptorData {
				allData = false
			}
		}
	}
	if allData {
		for i := range pm.Sections {
			if sec := &pm.Sections[i]; sec.Descriptor == amqp10.DescriptorData {
				body = append(body, b[sec.Value.Data:sec.Value.End]...)
			}
		}
		if ann.typ != nil {
			if t, ok := ann.typ.Bytes(b); ok && len(t) <= 255 {
				p.Flags |= amqp091.FlagType
				p.Type = t
			}
		}
	} else {
		body = b[firstBody:]
		p.Flags |= amqp091.FlagType
		p.Type = []byte("amqp-1.0")
	}
	if p.Flags&amqp091.FlagDeliveryMode == 0 && ann.deliveryMode != nil {
		if v, ok := ann.deliveryMode.Uint(b); ok {
			p.Flags |= amqp091.FlagDeliveryMode
			p.DeliveryMode = uint8(v)
		}
	}
	if p.Flags&amqp091.FlagPriority == 0 && ann.priority != nil {
		if v, ok := ann.priority.Uint(b); ok {
			p.Flags |= amqp091.FlagPriority
			p.Priority = uint8(min(v, 255))
		}
	}
	if p.Flags&amqp091.FlagExpiration == 0 && ann.expiration != nil {
		if v, ok := ann.expiration.Bytes(b); ok && len(v) <= 255 {
			p.Flags |= amqp091.FlagExpiration
			p.Expiration = v
		}
	}
	if hs := append(xHeaders, appHeaders...); len(hs) > 0 {
		p.Flags |= amqp091.FlagHeaders
		p.Headers = hs
	}
	h.BodySize = uint64(len(body))
	return h.AppendTo(nil), body
}

// mapItems iterates over the map of a described map section.
func mapItems(b []byte, sec amqp10.Value) amqp10.Items {
	inner := sec
	inner.Start, inner.DescStart, inner.DescEnd = sec.DescEnd, 0, 0
	if inner.Code != amqp10.CodeMap8 && inner.Code != amqp10.CodeMap32 {
		inner.Code = amqp10.CodeNull // no items
	}
	return inner.Items(b)
}

// messageID091 converts a message-id or correlation-id (field i of the
// properties): a string up to 255 bytes, a uuid as urn:uuid:..., a ulong
// in decimal; a longer string or a binary is returned as the header value
// to carry it instead.
func messageID091(b []byte, props *amqp10.Composite, i int) (id []byte, header amqp091.Value, ok bool) {
	f, present := props.Field(i)
	if !present {
		return nil, header, false
	}
	switch f.Code {
	case amqp10.CodeStr8, amqp10.CodeStr32:
		s, _ := f.Bytes(b)
		if len(s) <= 255 {
			return s, header, true
		}
		return nil, amqp091.LongstrValue(s), false
	case amqp10.CodeVbin8, amqp10.CodeVbin32:
		s, _ := f.Bytes(b)
		return nil, amqp091.BytesValue(s), false
	case amqp10.CodeUUID:
		return []byte("urn:uuid:" + uuidText(b[f.Data:f.End])), header, true
	}
	if u, ok := f.Uint(b); ok {
		return strconv.AppendUint(nil, u, 10), header, true
	}
	return nil, header, false
}

func uuidText(u []byte) string {
	h := hex.EncodeToString(u)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// value091 converts a scalar AMQP 1.0 value to a field table value as
// RabbitMQ's to_091 does; lists, maps and arrays are not converted.
func value091(b []byte, v amqp10.Value) (amqp091.Value, bool) {
	d := b[v.Data:v.End]
	switch v.Code {
	case amqp10.CodeStr8, amqp10.CodeStr32, amqp10.CodeSym8, amqp10.CodeSym32:
		return amqp091.LongstrValue(d), true
	case amqp10.CodeVbin8, amqp10.CodeVbin32:
		return amqp091.BytesValue(d), true
	case amqp10.CodeTrue, amqp10.CodeFalse, amqp10.CodeBoolean:
		t, _ := v.Bool(b)
		return amqp091.BoolValue(t), true
	case amqp10.CodeLong, amqp10.CodeSmallLong:
		n, _ := v.Int(b)
		return amqp091.Int64Value(n), true
	case amqp10.CodeUlong, amqp10.CodeSmallUlong, amqp10.CodeUlong0:
		n, _ := v.Uint(b)
		return amqp091.Int64Value(int64(n)), true
	case amqp10.CodeByte:
		return amqp091.Int8Value(int8(d[0])), true
	case amqp10.CodeUbyte:
		return amqp091.Uint8Value(d[0]), true
	case amqp10.CodeShort:
		return amqp091.Int16Value(int16(binary.BigEndian.Uint16(d))), true
	case amqp10.CodeUshort:
		return amqp091.Uint16Value(binary.BigEndian.Uint16(d)), true
	case amqp10.CodeUint, amqp10.CodeSmallUint, amqp10.CodeUint0:
		n, _ := v.Uint(b)
		return amqp091.Uint32Value(uint32(n)), true
	case amqp10.CodeInt, amqp10.CodeSmallInt:
		n, _ := v.Int(b)
		return amqp091.Int32Value(int32(n)), true
	case amqp10.CodeDouble:
		return amqp091.DoubleValue(math.Float64frombits(binary.BigEndian.Uint64(d))), true
	case amqp10.CodeFloat:
		return amqp091.FloatValue(math.Float32frombits(binary.BigEndian.Uint32(d))), true
	case amqp10.CodeTimestamp:
		ms, _ := v.Int(b)
		return amqp091.TimestampValue(time.Unix(ms/1000, 0)), true
	}
	return amqp091.Value{}, false
}

// from091 returns the AMQP 1.0 message a 1.0 consumer gets for a 0-9-1
// message m.
func from091(m *queue.Message) []byte {
	var h amqp091.ContentHeader
	if h.DecodeFromBytes(m.Header) != nil {
		return amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, m.Body))
	}
	p := &h.Properties
	var out []byte
	null := amqp10.AppendNull(nil)
	// header
	durable := p.Flags&amqp091.FlagDeliveryMode != 0 && p.DeliveryMode == 2
	hasPrio := p.Flags&amqp091.FlagPriority != 0
	ttl, hasTTL := uint64(0), false
	if p.Flags&amqp091.FlagExpiration != 0 {
		if v, err := strconv.ParseUint(string(p.Expiration), 10, 32); err == nil {
			ttl, hasTTL = v, true
		}
	}
	if durable || hasPrio || hasTTL {
		f := [][]byte{amqp10.AppendBool(nil, durable), null, null}
		if hasPrio {
			f[1] = amqp10.AppendUbyte(nil, p.Priority)
		}
		if hasTTL {
			f[2] = amqp10.AppendUint(nil, uint32(ttl))
		}
		out = amqp10.AppendComposite(out, amqp10.DescriptorHeader, f...)
	}
	// message-annotations: x- headers and the type; application-
	// properties: the other headers.
	var ma, ap [][]byte
	it := p.Headers.Iter()
	for it.Next() {
		key := string(it.Key())
		v, ok := value10(it.Value())
		if !ok {
			continue
		}
		if strings.HasPrefix(key, "x-") {
			ma = append(ma, amqp10.AppendSymbol(nil, key), v)
		} else {
			ap = append(ap, amqp10.AppendString(nil, key), v)
		}
	}
	amqp10Body := p.Flags&amqp091.FlagType != 0 && string(p.Type) == "amqp-1.0"
	if p.Flags&amqp091.FlagType != 0 && !amqp10Body {
		ma = append(ma, amqp10.AppendSymbol(nil, "x-basic-type"), amqp10.AppendString(nil, string(p.Type)))
	}
	if len(ma) > 0 {
		out = amqp10.AppendDescribed(out, amqp10.DescriptorMessageAnnotations, amqp10.AppendMap(nil, ma...))
	}
	// properties
	props := make([][]byte, 11)
	for i := range props {
		props[i] = null
	}
	has := false
	str := func(i int, flag uint16, v []byte, enc func([]byte, string) []byte) {
		if p.Flags&flag != 0 {
			props[i], has = enc(nil, string(v)), true
		}
	}
	if p.Flags&amqp091.FlagMessageID != 0 {
		props[0], has = id10(p.MessageID), true
	}
	if p.Flags&amqp091.FlagUserID != 0 {
		props[1], has = amqp10.AppendBinary(nil, p.UserID), true
	}
	str(4, amqp091.FlagReplyTo, p.ReplyTo, amqp10.AppendString)
	if p.Flags&amqp091.FlagCorrelationID != 0 {
		props[5], has = id10(p.CorrelationID), true
	}
	str(6, amqp091.FlagContentType, p.ContentType, amqp10.AppendSymbol)
	str(7, amqp091.FlagContentEncoding, p.ContentEncoding, amqp10.AppendSymbol)
	if p.Flags&amqp091.FlagTimestamp != 0 {
		props[9], has = amqp10.AppendTimestamp(nil, p.Timestamp.Unix()*1000), true
	}
	str(10, amqp091.FlagAppID, p.AppID, amqp10.AppendString)
	if has {
		n := len(props)
		for n > 0 && len(props[n-1]) == 1 && props[n-1][0] == byte(amqp10.CodeNull) {
			n-- // trailing nulls are left out (§1.4)
		}
		out = amqp10.AppendComposite(out, amqp10.DescriptorProperties, props[:n]...)
	}
	if len(ap) > 0 {
		out = amqp10.AppendDescribed(out, amqp10.DescriptorApplicationProperties, amqp10.AppendMap(nil, ap...))
	}
	if amqp10Body {
		var pm amqp10.Message
		if amqp10.ParseMessage(m.Body, &pm) == nil {
			return append(out, m.Body...)
		}
	}
	return amqp10.AppendDescribed(out, amqp10.DescriptorData, amqp10.AppendBinary(nil, m.Body))
}

// id10 encodes a 0-9-1 message-id or correlation-id: urn:uuid:... as a
// uuid, anything else as a string.
func id10(s []byte) []byte {
	if rest, ok := strings.CutPrefix(string(s), "urn:uuid:"); ok && len(rest) == 36 {
		if u, err := hex.DecodeString(strings.ReplaceAll(rest, "-", "")); err == nil && len(u) == 16 {
			return amqp10.AppendUUID(nil, [16]byte(u))
		}
	}
	return amqp10.AppendString(nil, string(s))
}

// value10 encodes a scalar field table value as RabbitMQ's from_091 does;
// tables, arrays and decimals are not converted.
func value10(v amqp091.Value) ([]byte, bool) {
	switch v.Type {
	case amqp091.TypeLongstr:
		if s := v.Bytes(); len(s) <= 255 && utf8.Valid(s) {
			return amqp10.AppendString(nil, string(s)), true
		}
		return amqp10.AppendBinary(nil, v.Bytes()), true
	case amqp091.TypeBytes:
		return amqp10.AppendBinary(nil, v.Bytes()), true
	case amqp091.TypeBool:
		return amqp10.AppendBool(nil, v.Bool()), true
	case amqp091.TypeInt8:
		return amqp10.AppendByte(nil, int8(v.Int())), true
	case amqp091.TypeUint8:
		return amqp10.AppendUbyte(nil, uint8(v.Uint())), true
	case amqp091.TypeInt16, amqp091.TypeInt16U:
		return amqp10.AppendShort(nil, int16(v.Int())), true
	case amqp091.TypeUint16:
		return amqp10.AppendUshort(nil, uint16(v.Uint())), true
	case amqp091.TypeInt32:
		return amqp10.AppendInt(nil, int32(v.Int())), true
	case amqp091.TypeUint32:
		return amqp10.AppendUint(nil, uint32(v.Uint())), true
	case amqp091.TypeInt64:
		return amqp10.AppendLong(nil, v.Int()), true
	case amqp091.TypeUint64:
		return amqp10.AppendUlong(nil, v.Uint()), true
	case amqp091.TypeFloat:
		return amqp10.AppendFloat(nil, float32(v.Float())), true
	case amqp091.TypeDouble:
		return amqp10.AppendDouble(nil, v.Float()), true
	case amqp091.TypeTimestamp:
		return amqp10.AppendTimestamp(nil, v.Time().Unix()*1000), true
	case amqp091.TypeVoid:
		return amqp10.AppendNull(nil), true
	}
	return nil, false
}
