package broker

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// Conversion between AMQP 1.0 and 0-9-1 messages, as RabbitMQ 4 converts
// them (its mc_amqpl and mc_amqp modules), for a message published over
// one protocol and consumed over the other. Only the crossing pays for it:
// a message consumed over the protocol it was published with is sent as
// stored. The README's AMQP 1.0 section has the same table.
//
// AMQP 1.0 to 0-9-1:
//
//	header.durable                    delivery-mode 2 (true) / 1 (false)
//	header.priority, header.ttl       priority, expiration (decimal ms)
//	no header field: annotations      x-basic-delivery-mode, -priority,
//	                                  -expiration say them instead
//	properties.message-id             message-id (string up to 255 bytes;
//	(correlation-id alike)            a uuid as urn:uuid:..., a ulong in
//	                                  decimal); a longer string becomes
//	                                  header x-message-id (longstr), a
//	                                  binary x-message-id (byte array)
//	properties.user-id                user-id (UTF-8 without NUL, up to
//	                                  255 bytes; else left out)
//	properties.reply-to               reply-to (up to 255 bytes);
//	                                  /queues/NAME gives NAME, URL-decoded
//	properties.content-type/-encoding content-type / content-encoding
//	properties.creation-time          timestamp (ms / 1000)
//	properties.group-id               app-id
//	application-properties, string    headers
//	keys up to 255 bytes
//	message-annotations x-* (symbol   headers, but x-basic-*, x-exchange,
//	keys up to 255 bytes)             x-routing-key and x-death
//	message-annotation x-cc           header CC (the list as an array)
//	x-opt-rabbitmq-received-time      header timestamp_in_ms (long, ms)
//	x-opt-deaths (array of maps)      header x-death (array of tables:
//	                                  count, reason, queue, time,
//	                                  exchange, routing-keys, and
//	                                  original-expiration from ttl)
//	message-annotation x-basic-type   type (only for a data body)
//	body: data sections               body: their data, concatenated (the
//	                                  footer is dropped)
//	body: amqp-value / amqp-sequence  body: the encoded body sections and
//	                                  footer as they arrived; type
//	                                  "amqp-1.0"
//
// Values, in headers and nested: string, symbol and binary become longstr;
// boolean t; ubyte B, byte b, ushort u, short s, uint i, int I; long and
// ulong l (a ulong past 2^63 wraps, as RabbitMQ's encoder wraps it);
// float f and double d (NaN and infinities are left out); timestamp T in
// seconds (ms / 1000); null V; list and array A (elements converted in
// order); map F (string and symbol keys; entries with other keys are left
// out). Left out, where RabbitMQ 4 has no rule for them: uuid, char,
// decimals, described values, arrays of described or zero-width
// elements. The headers a 0-9-1 consumer gets are sorted by key, the first
// of equal keys kept (annotations before application-properties), as
// RabbitMQ 4 sorts them when it delivers.
//
// AMQP 0-9-1 to 1.0:
//
//	delivery-mode, priority,          header: durable (delivery-mode 2),
//	expiration                        priority, ttl, first-acquirer (false
//	                                  once redelivered), delivery-count
//	message-id, correlation-id        urn:uuid:... as a uuid, else a string
//	user-id                           binary
//	reply-to                          /queues/NAME, NAME percent-encoded
//	                                  but for A-Z a-z 0-9 - . _ ~
//	content-type, content-encoding    symbols
//	timestamp                         creation-time (s * 1000)
//	app-id                            group-id
//	type                              message-annotation x-basic-type
//	headers x-* (any value)           message-annotations, symbol keys
//	header CC (an array)              message-annotation x-cc
//	other headers (not arrays or      application-properties, string keys
//	tables)
//	(the route)                       message-annotations x-routing-key
//	                                  and x-exchange, first
//	headers x-amqp-1.0-properties,    the section they hold (an encoded
//	-app-properties,                  section, longstr or byte array)
//	-message-annotations, -footer     replaces the one built from the rest
//	body typed "amqp-1.0"             the encoded sections it holds, as
//	                                  they are (RabbitMQ 4 decodes and
//	                                  re-encodes them)
//	any other body                    one data section
//
// Values: longstr becomes a string when it is UTF-8 without NUL and at
// most 4096 bytes, else binary; byte array binary; t boolean (0x56);
// b byte, B ubyte, s short, u ushort, I int, i uint, l and L long, f
// float, d double; T timestamp (s * 1000); V null; A list; F map with
// symbol keys. Decimals are left out (RabbitMQ 4 has no rule). Integers
// take the smallest encoding RabbitMQ's encoder takes (smallint,
// smalllong, smalluint, uint0), lists and maps their 8-bit forms below 255
// items and 256 bytes. Properties and header lose their trailing nulls;
// empty properties and application-properties are left out.

// convMaxDepth bounds the nesting a converted value is followed to.
const convMaxDepth = 64

// utf8ScanLimit is the longest longstr RabbitMQ 4 looks at to tell a
// string from binary.
const utf8ScanLimit = 4096

// header091 is one 0-9-1 header being built.
type header091 struct {
	key string
	v   amqp091.Value
}

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
	// RabbitMQ's order before its sort: annotations, then the ids, then
	// application-properties.
	var xHeaders, idHeaders, appHeaders []header091
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
				if !ok || (k.Code != amqp10.CodeSym8 && k.Code != amqp10.CodeSym32) {
					continue
				}
				first := func(dst **amqp10.Value) {
					if *dst == nil {
						*dst = &v
					}
				}
				switch string(key) {
				case "x-basic-delivery-mode":
					first(&ann.deliveryMode)
					continue
				case "x-basic-priority":
					first(&ann.priority)
					continue
				case "x-basic-expiration":
					first(&ann.expiration)
					continue
				case "x-basic-type":
					first(&ann.typ)
					continue
				case "x-cc":
					if hv, ok := value091(b, v, 0); ok {
						xHeaders = append(xHeaders, header091{"CC", hv})
					}
					continue
				case "x-opt-rabbitmq-received-time":
					if v.Code == amqp10.CodeTimestamp && !v.Described() {
						ms, _ := v.Int(b)
						xHeaders = append(xHeaders, header091{"timestamp_in_ms", amqp091.Int64Value(ms)})
						continue
					}
				case "x-opt-deaths":
					if hv, ok := deaths091(b, v); ok {
						xHeaders = append(xHeaders, header091{"x-death", hv})
					}
					continue
				}
				if !strings.HasPrefix(string(key), "x-") || len(key) > 255 || internalHeader(string(key)) {
					continue
				}
				if hv, ok := value091(b, v, 0); ok {
					xHeaders = append(xHeaders, header091{string(key), hv})
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
				idHeaders = append(idHeaders, header091{"x-message-id", hdr})
			}
			if id, hdr, ok := messageID091(b, &comp, 5); ok {
				p.Flags |= amqp091.FlagCorrelationID
				p.CorrelationID = id
			} else if hdr.Type != 0 {
				idHeaders = append([]header091{{"x-correlation-id", hdr}}, idHeaders...)
			}
			if v, ok := comp.Bytes(b, 1); ok && len(v) <= 255 && utf8.Valid(v) && bytes.IndexByte(v, 0) < 0 {
				p.Flags |= amqp091.FlagUserID
				p.UserID = v
			}
			if v, ok := shortString(b, &comp, 4); ok {
				if q, isQueue := strings.CutPrefix(string(v), "/queues/"); isQueue {
					d, err := url.PathUnescape(q)
					if err == nil && len(d) <= 255 {
						p.Flags |= amqp091.FlagReplyTo
						p.ReplyTo = []byte(d)
					}
				} else {
					p.Flags |= amqp091.FlagReplyTo
					p.ReplyTo = v
				}
			}
			set := func(i int, flag uint16, dst *[]byte) {
				if v, ok := comp.Bytes(b, i); ok && len(v) <= 255 {
					p.Flags |= flag
					*dst = v
				}
			}
			set(6, amqp091.FlagContentType, &p.ContentType)
			set(7, amqp091.FlagContentEncoding, &p.ContentEncoding)
			if v, ok := shortString(b, &comp, 10); ok {
				p.Flags |= amqp091.FlagAppID
				p.AppID = v
			}
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
				if hv, ok := value091(b, it.Value, 0); ok {
					appHeaders = append(appHeaders, header091{string(key), hv})
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
	hs := append(append(xHeaders, idHeaders...), appHeaders...)
	if len(hs) > 0 {
		// Sorted by key, the first of equal keys kept.
		slices.SortStableFunc(hs, func(a, b header091) int { return strings.Compare(a.key, b.key) })
		var t amqp091.Table
		for i, hd := range hs {
			if i > 0 && hs[i-1].key == hd.key {
				continue
			}
			t = t.Append(hd.key, hd.v)
		}
		p.Flags |= amqp091.FlagHeaders
		p.Headers = t
	}
	h.BodySize = uint64(len(body))
	return h.AppendTo(nil), body
}

// internalHeader reports the annotations RabbitMQ 4 keeps out of the
// headers: its own (x-basic-*), the route, and x-death.
func internalHeader(k string) bool {
	return strings.HasPrefix(k, "x-basic-") || k == "x-routing-key" || k == "x-exchange" || k == "x-death"
}

// shortString returns field i of c when it is a string (not a symbol or
// binary) of at most 255 bytes, as RabbitMQ's unwrap_shortstr takes it.
func shortString(b []byte, c *amqp10.Composite, i int) ([]byte, bool) {
	f, ok := c.Field(i)
	if !ok || (f.Code != amqp10.CodeStr8 && f.Code != amqp10.CodeStr32) || f.Described() {
		return nil, false
	}
	s, _ := f.Bytes(b)
	return s, len(s) <= 255
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

// value091 converts an AMQP 1.0 value to a field table value as RabbitMQ
// 4's to_091 does, lists, arrays and maps included (depth counts the
// nesting); ok is false for what it has no rule for.
func value091(b []byte, v amqp10.Value, depth int) (amqp091.Value, bool) {
	if v.Described() || depth > convMaxDepth {
		return amqp091.Value{}, false
	}
	d := b[v.Data:v.End]
	switch v.Code {
	case amqp10.CodeStr8, amqp10.CodeStr32, amqp10.CodeSym8, amqp10.CodeSym32, amqp10.CodeVbin8, amqp10.CodeVbin32:
		return amqp091.LongstrValue(d), true
	case amqp10.CodeTrue, amqp10.CodeFalse, amqp10.CodeBoolean:
		t, _ := v.Bool(b)
		return amqp091.BoolValue(t), true
	case amqp10.CodeNull:
		return amqp091.VoidValue(), true
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
		f := math.Float64frombits(binary.BigEndian.Uint64(d))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return amqp091.Value{}, false // RabbitMQ keeps these as_is
		}
		return amqp091.DoubleValue(f), true
	case amqp10.CodeFloat:
		f := math.Float32frombits(binary.BigEndian.Uint32(d))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return amqp091.Value{}, false
		}
		return amqp091.FloatValue(f), true
	case amqp10.CodeTimestamp:
		ms, _ := v.Int(b)
		return amqp091.TimestampValue(time.Unix(ms/1000, 0)), true
	case amqp10.CodeList0, amqp10.CodeList8, amqp10.CodeList32:
		return array091(b, v, depth)
	case amqp10.CodeArray8, amqp10.CodeArray32:
		if v.Elem.DescEnd > v.Elem.DescStart || (v.Elem.Code >= amqp10.CodeNull && v.Elem.Code <= amqp10.CodeList0) {
			return amqp091.Value{}, false // described or zero-width elements
		}
		return array091(b, v, depth)
	case amqp10.CodeMap8, amqp10.CodeMap32:
		var t amqp091.Table
		it := v.Items(b)
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			key, ok := k.Bytes(b)
			if !ok || k.Code == amqp10.CodeVbin8 || k.Code == amqp10.CodeVbin32 || k.Described() || len(key) > 255 {
				continue
			}
			if hv, ok := value091(b, it.Value, depth+1); ok {
				t = t.Append(string(key), hv)
			}
		}
		if it.Err() != nil {
			return amqp091.Value{}, false
		}
		return amqp091.TableValue(t), true
	}
	return amqp091.Value{}, false
}

// array091 converts a list or an array to a field array.
func array091(b []byte, v amqp10.Value, depth int) (amqp091.Value, bool) {
	var a amqp091.Array
	it := v.Items(b)
	for it.Next() {
		if hv, ok := value091(b, it.Value, depth+1); ok {
			a = a.Append(hv)
		}
	}
	if it.Err() != nil {
		return amqp091.Value{}, false
	}
	return amqp091.ArrayValue(a), true
}

// deaths091 converts the x-opt-deaths annotation (an array of maps, one
// per queue and reason) to the x-death header as RabbitMQ 4 does: a table
// per death with count, reason, queue, time (first-time in seconds),
// exchange and routing-keys, and original-expiration first when the map
// has a ttl. A map without one of those keys makes the whole annotation
// unconvertible (RabbitMQ 4 fails on it).
func deaths091(b []byte, v amqp10.Value) (amqp091.Value, bool) {
	if (v.Code != amqp10.CodeArray8 && v.Code != amqp10.CodeArray32) || v.Described() ||
		(v.Elem.Code != amqp10.CodeMap8 && v.Elem.Code != amqp10.CodeMap32) || v.Elem.DescEnd > v.Elem.DescStart {
		return amqp091.Value{}, false
	}
	var a amqp091.Array
	it := v.Items(b)
	for it.Next() {
		d, err := readDeath10(b, it.Value)
		if d.valid != deathAllFields || err != nil {
			return amqp091.Value{}, false
		}
		var rks amqp091.Array
		ki := d.keys.Items(b)
		for ki.Next() {
			if s, ok := ki.Value.Bytes(b); ok {
				rks = rks.Append(amqp091.LongstrValue(s))
			}
		}
		var t amqp091.Table
		if d.ttl != nil {
			t = t.Append("original-expiration", amqp091.StringValue(strconv.FormatUint(*d.ttl, 10)))
		}
		t = t.Append("count", amqp091.Int64Value(int64(d.count)))
		t = t.Append("reason", amqp091.LongstrValue(d.reason))
		t = t.Append("queue", amqp091.LongstrValue(d.queue))
		t = t.Append("time", amqp091.TimestampValue(time.Unix(d.first/1000, 0)))
		t = t.Append("exchange", amqp091.LongstrValue(d.exchange))
		t = t.Append("routing-keys", amqp091.ArrayValue(rks))
		a = a.Append(amqp091.TableValue(t))
	}
	if it.Err() != nil {
		return amqp091.Value{}, false
	}
	return amqp091.ArrayValue(a), true
}

// death10 is one map of an x-opt-deaths annotation, as far as it was
// read: valid has a bit for each of the seven keys RabbitMQ 4 requires
// that was present with the right type; ttl is set when the map has one.
type death10 struct {
	queue, reason, exchange []byte
	count                   uint64
	first                   int64
	keys                    amqp10.Value
	ttl                     *uint64
	valid                   uint8
}

const deathAllFields = 1<<7 - 1

// readDeath10 reads a death map of x-opt-deaths (el, in b).
func readDeath10(b []byte, el amqp10.Value) (death10, error) {
	var d death10
	fields := el.Items(b)
	for fields.Next() {
		k := fields.Value
		if !fields.Next() {
			break
		}
		f := fields.Value
		name, _ := k.Bytes(b)
		var bit uint8
		ok := false
		switch string(name) {
		case "queue":
			d.queue, ok = f.Bytes(b)
			bit = 1 << 0
		case "reason":
			d.reason, ok = f.Bytes(b)
			bit = 1 << 1
		case "count":
			d.count, ok = f.Uint(b)
			bit = 1 << 2
		case "first-time":
			d.first, ok = f.Int(b)
			ok, bit = ok && f.Code == amqp10.CodeTimestamp, 1<<3
		case "last-time":
			ok, bit = f.Code == amqp10.CodeTimestamp, 1<<4
		case "exchange":
			d.exchange, ok = f.Bytes(b)
			bit = 1 << 5
		case "routing-keys":
			d.keys, ok, bit = f, f.Code == amqp10.CodeArray8 || f.Code == amqp10.CodeArray32, 1<<6
		case "ttl":
			if t, isUint := f.Uint(b); isUint {
				d.ttl = &t
			}
		}
		if ok {
			d.valid |= bit
		}
	}
	return d, fields.Err()
}

// The headers a 0-9-1 publisher may set to carry whole AMQP 1.0 sections
// (RabbitMQ 4's names): each holds one encoded section that replaces the
// one the conversion would build.
const (
	headerAMQP10Properties    = "x-amqp-1.0-properties"
	headerAMQP10AppProperties = "x-amqp-1.0-app-properties"
	headerAMQP10Annotations   = "x-amqp-1.0-message-annotations"
	headerAMQP10Footer        = "x-amqp-1.0-footer"
)

// from091 returns the AMQP 1.0 message a 1.0 consumer gets for a 0-9-1
// message m: header, message-annotations, properties,
// application-properties, body and footer as RabbitMQ 4 builds them
// (first-acquirer false once redelivered; delivery-count the failed
// deliveries).
func from091(m *queue.Message, redelivered bool, failures uint32) []byte {
	var h amqp091.ContentHeader
	if h.DecodeFromBytes(m.Header) != nil {
		return amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, m.Body))
	}
	p := &h.Properties
	out := make([]byte, 0, 128+len(m.Body)+len(m.Header))
	null := amqp10.AppendNull(nil)
	// header: durable, priority, ttl, first-acquirer, delivery-count
	durable := p.Flags&amqp091.FlagDeliveryMode != 0 && p.DeliveryMode == 2
	hf := [][]byte{amqp10.AppendBool(nil, durable), null, null,
		amqp10.AppendBool(nil, !redelivered && failures == 0), amqp10.AppendUint(nil, failures)}
	if p.Flags&amqp091.FlagPriority != 0 {
		hf[1] = amqp10.AppendUbyte(nil, p.Priority)
	}
	if p.Flags&amqp091.FlagExpiration != 0 {
		if v, err := strconv.ParseUint(string(p.Expiration), 10, 32); err == nil {
			hf[2] = amqp10.AppendUint(nil, uint32(v))
		}
	}
	out = amqp10.AppendComposite(out, amqp10.DescriptorHeader, hf...)

	sections := map[string][]byte{}
	var ma, ap [][]byte
	it := p.Headers.Iter()
	for it.Next() {
		key := string(it.Key())
		hv := it.Value()
		switch key {
		case headerAMQP10Properties, headerAMQP10AppProperties, headerAMQP10Annotations, headerAMQP10Footer:
			if _, dup := sections[key]; !dup && (hv.Type == amqp091.TypeLongstr || hv.Type == amqp091.TypeBytes) {
				sections[key] = hv.Bytes()
			}
		}
		if strings.HasPrefix(key, "x-") {
			if v, ok := appendValue10(nil, hv, 0); ok {
				ma = append(ma, amqp10.AppendSymbol(nil, key), v)
			}
			continue
		}
		if key == "CC" && hv.Type == amqp091.TypeArray {
			if v, ok := appendValue10(nil, hv, 0); ok {
				ma = append(ma, amqp10.AppendSymbol(nil, "x-cc"), v)
			}
			continue
		}
		if hv.Type == amqp091.TypeArray || hv.Type == amqp091.TypeTable {
			continue
		}
		if v, ok := appendValue10(nil, hv, 0); ok {
			ap = append(ap, amqp10.AppendString(nil, key), v)
		}
	}
	amqp10Body := p.Flags&amqp091.FlagType != 0 && string(p.Type) == "amqp-1.0"

	// message-annotations: the route first, then the type and the x-
	// headers (or the section a header carried), the route's names left
	// out of those.
	route := [][]byte{amqp10.AppendSymbol(nil, "x-routing-key"), amqp10.AppendString(nil, m.RoutingKey),
		amqp10.AppendSymbol(nil, "x-exchange"), amqp10.AppendString(nil, m.Exchange)}
	var rest [][]byte
	if sec, ok := section10(sections[headerAMQP10Annotations], amqp10.DescriptorMessageAnnotations); ok {
		sv, _ := amqp10.Scan(sec, 0)
		items := mapItems(sec, sv)
		for items.Next() {
			k := items.Value
			if !items.Next() {
				break
			}
			rest = append(rest, sec[k.Start:k.End], sec[items.Value.Start:items.Value.End])
		}
	} else {
		if p.Flags&amqp091.FlagType != 0 {
			rest = append(rest, amqp10.AppendSymbol(nil, "x-basic-type"), amqp10.AppendString(nil, string(p.Type)))
		}
		rest = append(rest, ma...)
	}
	for i := 0; i+1 < len(rest); i += 2 {
		var k amqp10.Value
		var err error
		if k, err = amqp10.Scan(rest[i], 0); err == nil {
			if name, _ := k.Bytes(rest[i]); string(name) == "x-routing-key" || string(name) == "x-exchange" {
				continue
			}
		}
		route = append(route, rest[i], rest[i+1])
	}
	out = amqp10.AppendDescribed(out, amqp10.DescriptorMessageAnnotations, appendCompound10(nil, amqp10.CodeMap8, amqp10.CodeMap32, route))

	// properties
	if sec, ok := section10(sections[headerAMQP10Properties], amqp10.DescriptorProperties); ok {
		out = append(out, sec...)
	} else {
		props := make([][]byte, 11)
		for i := range props {
			props[i] = null
		}
		if p.Flags&amqp091.FlagMessageID != 0 {
			props[0] = id10(p.MessageID)
		}
		if p.Flags&amqp091.FlagUserID != 0 {
			props[1] = amqp10.AppendBinary(nil, p.UserID)
		}
		if p.Flags&amqp091.FlagReplyTo != 0 {
			props[4] = amqp10.AppendString(nil, "/queues/"+quoteUnreserved(p.ReplyTo))
		}
		if p.Flags&amqp091.FlagCorrelationID != 0 {
			props[5] = id10(p.CorrelationID)
		}
		if p.Flags&amqp091.FlagContentType != 0 {
			props[6] = amqp10.AppendSymbol(nil, string(p.ContentType))
		}
		if p.Flags&amqp091.FlagContentEncoding != 0 {
			props[7] = amqp10.AppendSymbol(nil, string(p.ContentEncoding))
		}
		if p.Flags&amqp091.FlagTimestamp != 0 {
			props[9] = amqp10.AppendTimestamp(nil, p.Timestamp.Unix()*1000)
		}
		if p.Flags&amqp091.FlagAppID != 0 {
			props[10] = amqp10.AppendString(nil, string(p.AppID))
		}
		n := len(props)
		for n > 0 && len(props[n-1]) == 1 && props[n-1][0] == byte(amqp10.CodeNull) {
			n-- // trailing nulls are left out (§1.4)
		}
		if n > 0 {
			out = amqp10.AppendDescribed(out, amqp10.DescriptorProperties, appendCompound10(nil, amqp10.CodeList8, amqp10.CodeList32, props[:n]))
		}
	}
	// application-properties
	if sec, ok := section10(sections[headerAMQP10AppProperties], amqp10.DescriptorApplicationProperties); ok {
		out = append(out, sec...)
	} else if len(ap) > 0 {
		out = amqp10.AppendDescribed(out, amqp10.DescriptorApplicationProperties, appendCompound10(nil, amqp10.CodeMap8, amqp10.CodeMap32, ap))
	}
	// body
	var pm amqp10.Message
	if amqp10Body && len(m.Body) > 0 && amqp10.ParseMessage(m.Body, &pm) == nil {
		out = append(out, m.Body...)
	} else {
		out = amqp10.AppendDescribed(out, amqp10.DescriptorData, amqp10.AppendBinary(nil, m.Body))
	}
	if sec, ok := section10(sections[headerAMQP10Footer], amqp10.DescriptorFooter); ok {
		out = append(out, sec...)
	}
	return out
}

// section10 reports whether b is exactly one encoded section with
// descriptor code (a described map or list).
func section10(b []byte, code uint64) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	v, err := amqp10.Scan(b, 0)
	if err != nil || v.End != len(b) {
		return nil, false
	}
	if c, _, ok := v.Descriptor(b); !ok || c != code {
		return nil, false
	}
	switch code {
	case amqp10.DescriptorProperties:
		if v.Code != amqp10.CodeList0 && v.Code != amqp10.CodeList8 && v.Code != amqp10.CodeList32 {
			return nil, false
		}
	default:
		if v.Code != amqp10.CodeMap8 && v.Code != amqp10.CodeMap32 {
			return nil, false
		}
	}
	return b, true
}

// quoteUnreserved percent-encodes every byte of s but RFC 3986's
// unreserved characters, as Erlang's uri_string:quote does.
func quoteUnreserved(s []byte) string {
	const hexDigits = "0123456789ABCDEF"
	var sb strings.Builder
	for _, c := range s {
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&15])
	}
	return sb.String()
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

// appendCompound10 appends a list or map of encoded items as RabbitMQ's
// encoder sizes it: the 8-bit form below 255 items and 256 bytes, else
// the 32-bit form; an empty list is list0.
func appendCompound10(dst []byte, short, long amqp10.Code, items [][]byte) []byte {
	if short == amqp10.CodeList8 && len(items) == 0 {
		return append(dst, byte(amqp10.CodeList0))
	}
	n := 0
	for _, it := range items {
		n += len(it)
	}
	if len(items) >= 255 || n+1 >= 256 {
		dst = binary.BigEndian.AppendUint32(append(dst, byte(long)), uint32(n+4))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(items)))
	} else {
		dst = append(dst, byte(short), byte(n+1), byte(len(items)))
	}
	for _, it := range items {
		dst = append(dst, it...)
	}
	return dst
}

// appendValue10 appends a field table value encoded as RabbitMQ 4's
// from_091 encodes it, tables and arrays included (depth counts the
// nesting); ok is false for decimals, which it has no rule for.
func appendValue10(dst []byte, v amqp091.Value, depth int) ([]byte, bool) {
	if depth > convMaxDepth {
		return dst, false
	}
	switch v.Type {
	case amqp091.TypeLongstr:
		if s := v.Bytes(); len(s) <= utf8ScanLimit && utf8.Valid(s) && bytes.IndexByte(s, 0) < 0 {
			return amqp10.AppendString(dst, string(s)), true
		}
		return amqp10.AppendBinary(dst, v.Bytes()), true
	case amqp091.TypeBytes:
		return amqp10.AppendBinary(dst, v.Bytes()), true
	case amqp091.TypeBool:
		return amqp10.AppendBoolean(dst, v.Bool()), true
	case amqp091.TypeInt8:
		return amqp10.AppendByte(dst, int8(v.Int())), true
	case amqp091.TypeUint8:
		return amqp10.AppendUbyte(dst, uint8(v.Uint())), true
	case amqp091.TypeInt16, amqp091.TypeInt16U:
		return amqp10.AppendShort(dst, int16(v.Int())), true
	case amqp091.TypeUint16:
		return amqp10.AppendUshort(dst, uint16(v.Uint())), true
	case amqp091.TypeInt32:
		return amqp10.AppendInt(dst, int32(v.Int())), true
	case amqp091.TypeUint32:
		return amqp10.AppendUint(dst, uint32(v.Uint())), true
	case amqp091.TypeInt64, amqp091.TypeUint64:
		return amqp10.AppendLong(dst, int64(v.Uint())), true
	case amqp091.TypeFloat:
		return amqp10.AppendFloat(dst, float32(v.Float())), true
	case amqp091.TypeDouble:
		return amqp10.AppendDouble(dst, v.Float()), true
	case amqp091.TypeTimestamp:
		return amqp10.AppendTimestamp(dst, int64(v.Uint())*1000), true
	case amqp091.TypeVoid:
		return amqp10.AppendNull(dst), true
	case amqp091.TypeArray:
		var items [][]byte
		it := v.Array().Iter()
		for it.Next() {
			if e, ok := appendValue10(nil, it.Value(), depth+1); ok {
				items = append(items, e)
			}
		}
		if it.Err() != nil {
			return dst, false
		}
		return appendCompound10(dst, amqp10.CodeList8, amqp10.CodeList32, items), true
	case amqp091.TypeTable:
		var items [][]byte
		it := v.Table().Iter()
		for it.Next() {
			if e, ok := appendValue10(nil, it.Value(), depth+1); ok {
				items = append(items, amqp10.AppendSymbol(nil, string(it.Key())), e)
			}
		}
		if it.Err() != nil {
			return dst, false
		}
		return appendCompound10(dst, amqp10.CodeMap8, amqp10.CodeMap32, items), true
	}
	return dst, false
}
