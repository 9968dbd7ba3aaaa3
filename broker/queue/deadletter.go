package queue

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Reason is why a message is dead-lettered, as x-death words it.
type Reason string

const (
	Rejected Reason = "rejected" // basic.reject or basic.nack with requeue=false
	Expired  Reason = "expired"  // its TTL ran out
	MaxLen   Reason = "maxlen"   // dropped for x-max-length(-bytes), or refused with reject-publish-dlx
)

// DeadLetterHeader appends to dst the content header payload RabbitMQ
// 3.10 gives the dead-lettered copy of m, which leaves queue for reason at
// now. The copy is published to the queue's dead-letter exchange with the
// queue's x-dead-letter-routing-key if it has one, else with m's own
// routing keys; set dropCC in the first case, where RabbitMQ also removes
// the CC header.
//
// What RabbitMQ writes, checked against the running broker: the expiration
// property is removed; x-death gets the death, as a table {count (long),
// reason, queue, time (timestamp, seconds), exchange (m.Exchange),
// routing-keys (an array of longstr: m.RoutingKey and the CC and BCC
// headers' longstr elements), original-expiration (the expiration property,
// when there was one)}. The first death also adds x-first-death-reason,
// -queue and -exchange, and its table keeps that field order; a later death
// by the same queue and reason increments that entry's count and leaves its
// other fields as they were, any other adds a new entry, and either way the
// entry moves to the front of the array with its fields sorted by name
// (the other entries reversed into their first-seen order and merged by
// queue and reason, as RabbitMQ's grouping of pre-3.x headers does). An
// x-death that is not an array is replaced. The headers table comes out
// sorted by key, and re-encoded as RabbitMQ re-encodes tables: 'L' values
// become 'l', booleans 0 or 1.
//
// Where RabbitMQ would crash on a malformed x-death (an element that is
// not a table, a count that is not an integer) this keeps the element as
// it is and counts from 1.
func DeadLetterHeader(dst []byte, m *Message, reason Reason, queue string, now time.Time, dropCC bool) ([]byte, error) {
	var h amqp091.ContentHeader
	if err := h.DecodeFromBytes(m.Header); err != nil {
		return dst, err
	}
	p := &h.Properties
	var headers amqp091.Table
	if p.Flags&amqp091.FlagHeaders != 0 {
		headers = p.Headers
		if err := headers.Validate(); err != nil {
			return dst, err
		}
	}
	var b deathBuilder
	var hasTTL bool
	var ttl []byte
	if p.Flags&amqp091.FlagExpiration != 0 {
		hasTTL, ttl = true, p.Expiration
	}
	b.setInfo(headers, m, reason, queue, now, hasTTL, ttl)

	fs := tableFields(make([]field, 0, 16), headers)
	xdeath, ok := headers.Get("x-death")
	switch {
	case !ok:
		r := []byte(reason)
		fs = keystore(fs, b.field("x-first-death-reason", amqp091.LongstrValue(r)))
		fs = keystore(fs, b.field("x-first-death-queue", amqp091.StringValue(queue)))
		fs = keystore(fs, b.field("x-first-death-exchange", amqp091.StringValue(m.Exchange)))
		fs = keystore(fs, b.field("x-death", amqp091.ArrayValue(b.entryArray(nil))))
	case xdeath.Type == amqp091.TypeArray:
		fs = keystore(fs, b.field("x-death", amqp091.ArrayValue(b.updated(xdeath.Array(), []byte(reason), []byte(queue)))))
	default:
		fs = keystore(fs, b.field("x-death", amqp091.ArrayValue(b.entryArray(nil))))
	}
	slices.SortStableFunc(fs, func(x, y field) int { return bytes.Compare(x.key, y.key) })
	if dropCC {
		if i := slices.IndexFunc(fs, func(f field) bool { return string(f.key) == "CC" }); i >= 0 {
			fs = slices.Delete(fs, i, i+1)
		}
	}
	var table []byte
	for _, f := range fs {
		table = append(table, f.raw...)
	}
	normalize(table, true)

	p.Headers = table
	p.Flags = (p.Flags | amqp091.FlagHeaders) &^ amqp091.FlagExpiration
	p.Expiration = nil
	return h.AppendTo(dst), nil
}

// field is one encoded table field, its key included in raw.
type field struct {
	key, raw []byte
}

func tableFields(dst []field, t []byte) []field {
	it := amqp091.Table(t).Iter()
	for it.Next() {
		dst = append(dst, field{key: it.Key(), raw: t[it.Offset():it.End()]})
	}
	return dst
}

// keystore is Erlang's lists:keystore: the first field with f's key is
// replaced, else f is appended.
func keystore(fs []field, f field) []field {
	for i := range fs {
		if bytes.Equal(fs[i].key, f.key) {
			fs[i] = f
			return fs
		}
	}
	return append(fs, f)
}

// deathBuilder encodes the new death's fields.
type deathBuilder struct {
	// info is the death's fields but count, in the order RabbitMQ lists
	// them: reason, queue, time, exchange, routing-keys and, for a message
	// that had a per-message TTL, original-expiration.
	info []field
}

func (b *deathBuilder) field(key string, v amqp091.Value) field {
	raw := []byte(amqp091.Table(nil).Append(key, v))
	return field{key: raw[1 : 1+len(key)], raw: raw}
}

func (b *deathBuilder) setInfo(headers amqp091.Table, m *Message, reason Reason, queue string, now time.Time, hasTTL bool, ttl []byte) {
	// The first routing key is the one the message was published with;
	// the others come from its CC and BCC headers (RabbitMQ strips BCC at
	// publish, so normally only CC is left).
	rks := amqp091.Array(nil).Append(amqp091.StringValue(m.RoutingKey))
	for _, key := range [...]string{"CC", "BCC"} {
		if v, ok := headers.Get(key); ok && v.Type == amqp091.TypeArray {
			it := v.Array().Iter()
			for it.Next() {
				if e := it.Value(); e.Type == amqp091.TypeLongstr {
					rks = rks.Append(e)
				}
			}
		}
	}
	b.info = append(b.info,
		b.field("reason", amqp091.StringValue(string(reason))),
		b.field("queue", amqp091.StringValue(queue)),
		b.field("time", amqp091.TimestampValue(now)),
		b.field("exchange", amqp091.StringValue(m.Exchange)),
		b.field("routing-keys", amqp091.ArrayValue(rks)))
	if hasTTL {
		b.info = append(b.info, b.field("original-expiration", amqp091.LongstrValue(ttl)))
	}
}

func countField(b *deathBuilder, n int64) field { return b.field("count", amqp091.Int64Value(n)) }

// appendTable appends an array element holding a table of fs.
func appendTable(dst []byte, fs []field) []byte {
	dst = append(dst, byte(amqp091.TypeTable), 0, 0, 0, 0)
	at := len(dst)
	for _, f := range fs {
		dst = append(dst, f.raw...)
	}
	binary.BigEndian.PutUint32(dst[at-4:], uint32(len(dst)-at))
	return dst
}

// entryArray returns x-death holding only the new death, count first and
// its fields in RabbitMQ's order, followed by others.
func (b *deathBuilder) entryArray(others []byte) amqp091.Array {
	fs := append([]field{countField(b, 1)}, b.info...)
	return amqp091.Array(append(appendTable(nil, fs), others...))
}

// deathKey is what RabbitMQ groups x-death entries by: the values of their
// first queue and reason fields, compared as Erlang compares them.
type deathKey struct {
	queue, reason erlValue
}

// erlValue is a field value as Erlang compares it: strings and byte arrays
// are both binaries, every integer type and timestamps are integers, and
// void is the same atom as an absent field.
type erlValue struct {
	class byte // 0: absent or void, 'b' binary, 'i' integer, else the type octet
	num   uint64
	b     []byte
}

func valueOf(v amqp091.Value, ok bool) erlValue {
	if !ok {
		return erlValue{}
	}
	switch v.Type {
	case amqp091.TypeVoid:
		return erlValue{}
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return erlValue{class: 'b', b: v.Bytes()}
	case amqp091.TypeInt8, amqp091.TypeUint8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeUint16,
		amqp091.TypeInt32, amqp091.TypeUint32, amqp091.TypeInt64, amqp091.TypeUint64, amqp091.TypeTimestamp:
		return erlValue{class: 'i', num: uint64(v.Int())}
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return erlValue{class: 'd', num: math.Float64bits(v.Float())}
	}
	return erlValue{class: byte(v.Type), num: v.Uint(), b: v.Bytes()}
}

func (x erlValue) equal(y erlValue) bool {
	return x.class == y.class && x.num == y.num && bytes.Equal(x.b, y.b)
}

func (k deathKey) equal(o deathKey) bool { return k.queue.equal(o.queue) && k.reason.equal(o.reason) }

// death is one element of an existing x-death array.
type death struct {
	raw   []byte // the element, type octet included
	table amqp091.Table
	isTab bool
	key   deathKey
}

// updated returns the x-death array after the new death, for an existing
// array old.
func (b *deathBuilder) updated(old amqp091.Array, reason, queue []byte) amqp091.Array {
	var ds []death
	it := old.Iter()
	for it.Next() {
		d := death{raw: old[it.Offset():it.End()]}
		if v := it.Value(); v.Type == amqp091.TypeTable {
			d.isTab, d.table = true, v.Table()
			q, qok := d.table.Get("queue")
			r, rok := d.table.Get("reason")
			d.key = deathKey{queue: valueOf(q, qok), reason: valueOf(r, rok)}
		}
		ds = append(ds, d)
	}
	// RabbitMQ first merges entries by queue and reason (headers from
	// before 3.x had one entry per death): each key keeps its first entry,
	// given a count of how many there were if it had none, and the keys
	// come out in reverse order of first appearance. A lone entry is left
	// as it is.
	type group struct {
		d     death
		count int64 // count to add when the entry has none; 0: as it is
	}
	var groups []group
	if len(ds) == 1 {
		groups = append(groups, group{d: ds[0]})
	} else {
	next:
		for i, d := range ds {
			if !d.isTab {
				groups = append(groups, group{d: d})
				continue
			}
			for _, e := range ds[:i] {
				if e.isTab && e.key.equal(d.key) {
					continue next
				}
			}
			n := int64(0)
			for _, e := range ds[i:] {
				if e.isTab && e.key.equal(d.key) {
					n++
				}
			}
			groups = append(groups, group{d: d, count: n})
		}
		slices.Reverse(groups)
	}
	mine := deathKey{queue: erlValue{class: 'b', b: queue}, reason: erlValue{class: 'b', b: reason}}
	var entry []field
	var rest []byte
	for _, g := range groups {
		_, hasCount := g.d.table.Get("count")
		if entry == nil && g.d.isTab && g.d.key.equal(mine) {
			entry = tableFields(nil, g.d.table)
			n := int64(1)
			if !hasCount && g.count > 0 {
				n = g.count + 1
			} else if c, ok := g.d.table.Get("count"); ok {
				n = countOf(c) + 1
			}
			if hasCount {
				for i := range entry {
					if string(entry[i].key) == "count" {
						entry[i] = countField(b, n)
						break
					}
				}
			} else {
				entry = append([]field{countField(b, n)}, entry...)
			}
			continue
		}
		if g.count > 0 && !hasCount {
			rest = appendTable(rest, append([]field{countField(b, g.count)}, tableFields(nil, g.d.table)...))
		} else {
			rest = append(rest, g.d.raw...)
		}
	}
	if entry == nil {
		entry = append([]field{countField(b, 1)}, b.info...)
	}
	slices.SortStableFunc(entry, func(x, y field) int { return bytes.Compare(x.key, y.key) })
	return amqp091.Array(append(appendTable(nil, entry), rest...))
}

// countOf reads an existing count; RabbitMQ adds one to any integer.
func countOf(v amqp091.Value) int64 {
	switch v.Type {
	case amqp091.TypeInt8, amqp091.TypeUint8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeUint16,
		amqp091.TypeInt32, amqp091.TypeUint32, amqp091.TypeInt64, amqp091.TypeUint64:
		return v.Int()
	}
	return 0
}

// normalize rewrites encoded fields in place as RabbitMQ re-encodes a
// table it decoded: its parser reads 'L' as a signed long, which it writes
// as 'l', and booleans as true or false, written as 1 or 0. Neither
// changes a size.
func normalize(b []byte, keyed bool) {
	var it amqp091.TableIter
	if keyed {
		it = amqp091.Table(b).Iter()
	} else {
		it = amqp091.Array(b).Iter()
	}
	for it.Next() {
		at := it.Offset()
		if keyed {
			at += 1 + len(it.Key())
		}
		switch v := it.Value(); v.Type {
		case amqp091.TypeUint64:
			b[at] = byte(amqp091.TypeInt64)
		case amqp091.TypeBool:
			if b[at+1] != 0 {
				b[at+1] = 1
			}
		case amqp091.TypeTable, amqp091.TypeArray:
			normalize(v.Bytes(), v.Type == amqp091.TypeTable)
		}
	}
}
