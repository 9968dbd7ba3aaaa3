package queue

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"sync"
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
		return dst, &FormatError{What: "content header", Err: err}
	}
	p := &h.Properties
	var headers amqp091.Table
	if p.Flags&amqp091.FlagHeaders != 0 {
		headers = p.Headers
		if err := headers.Validate(); err != nil {
			return dst, &FormatError{What: "headers", Err: err}
		}
	}
	b := builders.Get().(*deathBuilder)
	defer b.release()
	b.setInfo(headers, m, reason, queue, now, p.Flags&amqp091.FlagExpiration != 0, p.Expiration)

	fs := tableFields(b.fields[:0], headers)
	xdeath, ok := headers.Get("x-death")
	switch {
	case !ok:
		fs = keystore(fs, b.longstr("x-first-death-reason", string(reason)))
		fs = keystore(fs, b.longstr("x-first-death-queue", queue))
		fs = keystore(fs, b.longstr("x-first-death-exchange", m.Exchange))
		fs = keystore(fs, b.firstDeath())
	case xdeath.Type == amqp091.TypeArray:
		fs = keystore(fs, b.updated(xdeath.Array(), reason, queue))
	default:
		fs = keystore(fs, b.firstDeath())
	}
	slices.SortStableFunc(fs, compareKeys)
	if dropCC {
		if i := slices.IndexFunc(fs, func(f field) bool { return string(f.key) == "CC" }); i >= 0 {
			fs = slices.Delete(fs, i, i+1)
		}
	}
	b.fields = fs
	start := len(b.buf)
	for _, f := range fs {
		b.buf = append(b.buf, f.raw...)
	}
	table := b.buf[start:]
	normalize(table, true)

	p.Headers = table
	p.Flags = (p.Flags | amqp091.FlagHeaders) &^ amqp091.FlagExpiration
	p.Expiration = nil
	return h.AppendTo(dst), nil
}

func compareKeys(x, y field) int { return bytes.Compare(x.key, y.key) }

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

// deathBuilder holds one DeadLetterHeader call's work, reused through a
// pool. Everything it encodes goes into buf; a field refers to it only
// once written whole, and buf only grows, so a field stays valid when a
// later append moves buf.
type deathBuilder struct {
	buf []byte
	// info is the death's fields but count, in the order RabbitMQ lists
	// them: reason, queue, time, exchange, routing-keys and, for a message
	// that had a per-message TTL, original-expiration.
	info   []field
	fields []field // the headers table's
	entry  []field // the x-death entry being rebuilt
	deaths []death
	groups []group
}

var builders = sync.Pool{New: func() any { return new(deathBuilder) }}

func (b *deathBuilder) release() {
	if cap(b.buf) > 64<<10 {
		return // one huge header should not pin its memory in the pool
	}
	b.buf = b.buf[:0]
	clear(b.info[:cap(b.info)])
	clear(b.fields[:cap(b.fields)])
	clear(b.entry[:cap(b.entry)])
	clear(b.deaths[:cap(b.deaths)])
	clear(b.groups[:cap(b.groups)])
	b.info, b.fields, b.entry, b.deaths, b.groups = b.info[:0], b.fields[:0], b.entry[:0], b.deaths[:0], b.groups[:0]
	builders.Put(b)
}

// begin starts a field named key of type t; finish completes it.
func (b *deathBuilder) begin(key string, t amqp091.ValueType) int {
	start := len(b.buf)
	b.buf = append(b.buf, byte(len(key)))
	b.buf = append(b.buf, key...)
	b.buf = append(b.buf, byte(t))
	return start
}

func (b *deathBuilder) finish(start int) field {
	raw := b.buf[start:len(b.buf):len(b.buf)]
	return field{key: raw[1 : 1+int(raw[0])], raw: raw}
}

func (b *deathBuilder) longstr(key, v string) field {
	at := b.begin(key, amqp091.TypeLongstr)
	b.buf = binary.BigEndian.AppendUint32(b.buf, uint32(len(v)))
	b.buf = append(b.buf, v...)
	return b.finish(at)
}

func (b *deathBuilder) long(key string, v uint64, t amqp091.ValueType) field {
	at := b.begin(key, t)
	b.buf = binary.BigEndian.AppendUint64(b.buf, v)
	return b.finish(at)
}

func (b *deathBuilder) count(n int64) field { return b.long("count", uint64(n), amqp091.TypeInt64) }

// openLen appends a length to be set by closeLen.
func (b *deathBuilder) openLen() int {
	b.buf = append(b.buf, 0, 0, 0, 0)
	return len(b.buf)
}

func (b *deathBuilder) closeLen(at int) {
	binary.BigEndian.PutUint32(b.buf[at-4:], uint32(len(b.buf)-at))
}

// appendTable appends an array element holding a table of fs.
func (b *deathBuilder) appendTable(fs ...field) {
	b.buf = append(b.buf, byte(amqp091.TypeTable))
	at := b.openLen()
	for _, f := range fs {
		b.buf = append(b.buf, f.raw...)
	}
	b.closeLen(at)
}

func (b *deathBuilder) setInfo(headers amqp091.Table, m *Message, reason Reason, queue string, now time.Time, hasTTL bool, ttl []byte) {
	b.info = append(b.info, b.longstr("reason", string(reason)), b.longstr("queue", queue),
		b.long("time", uint64(now.Unix()), amqp091.TypeTimestamp), b.longstr("exchange", m.Exchange))
	// The first routing key is the one the message was published with;
	// the others come from its CC and BCC headers (RabbitMQ strips BCC at
	// publish, so normally only CC is left).
	at := b.begin("routing-keys", amqp091.TypeArray)
	n := b.openLen()
	b.buf = append(b.buf, byte(amqp091.TypeLongstr))
	b.buf = binary.BigEndian.AppendUint32(b.buf, uint32(len(m.RoutingKey)))
	b.buf = append(b.buf, m.RoutingKey...)
	for _, key := range [...]string{"CC", "BCC"} {
		if v, ok := headers.Get(key); ok && v.Type == amqp091.TypeArray {
			it := v.Array().Iter()
			for it.Next() {
				if it.Value().Type == amqp091.TypeLongstr {
					b.buf = append(b.buf, v.Array()[it.Offset():it.End()]...)
				}
			}
		}
	}
	b.closeLen(n)
	b.info = append(b.info, b.finish(at))
	if hasTTL {
		at := b.begin("original-expiration", amqp091.TypeLongstr)
		b.buf = binary.BigEndian.AppendUint32(b.buf, uint32(len(ttl)))
		b.buf = append(b.buf, ttl...)
		b.info = append(b.info, b.finish(at))
	}
}

// firstDeath returns x-death holding only the new death, count first and
// its fields in RabbitMQ's order.
func (b *deathBuilder) firstDeath() field {
	at := b.begin("x-death", amqp091.TypeArray)
	n := b.openLen()
	b.buf = append(b.buf, byte(amqp091.TypeTable))
	t := b.openLen()
	b.count(1)
	for _, f := range b.info {
		b.buf = append(b.buf, f.raw...)
	}
	b.closeLen(t)
	b.closeLen(n)
	return b.finish(at)
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

// group is an x-death entry after RabbitMQ's merging.
type group struct {
	d     death
	count int64 // the count to give an entry that has none; 0: as it is
}

// updated returns the x-death field after the new death, for an existing
// array old.
func (b *deathBuilder) updated(old amqp091.Array, reason Reason, queue string) field {
	ds := b.deaths[:0]
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
	b.deaths = ds
	// RabbitMQ first merges entries by queue and reason (headers from
	// before 3.x had one entry per death): each key keeps its first entry,
	// given a count of how many there were if it had none, and the keys
	// come out in reverse order of first appearance. A lone entry is left
	// as it is.
	gs := b.groups[:0]
	if len(ds) == 1 {
		gs = append(gs, group{d: ds[0]})
	} else {
	next:
		for i, d := range ds {
			if !d.isTab {
				gs = append(gs, group{d: d})
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
			gs = append(gs, group{d: d, count: n})
		}
		slices.Reverse(gs)
	}
	b.groups = gs

	mine := deathKey{queue: erlValue{class: 'b', b: []byte(queue)}, reason: erlValue{class: 'b', b: []byte(reason)}}
	match := -1
	for i, g := range gs {
		if g.d.isTab && g.d.key.equal(mine) {
			match = i
			break
		}
	}
	// The entry for this death, its fields sorted by name: the matching
	// one with its count incremented, else a new one.
	entry := b.entry[:0]
	if match >= 0 {
		g := gs[match]
		c, hasCount := g.d.table.Get("count")
		entry = tableFields(entry, g.d.table)
		switch {
		case hasCount:
			i := slices.IndexFunc(entry, func(f field) bool { return string(f.key) == "count" })
			entry[i] = b.count(countOf(c) + 1)
		case g.count > 0:
			entry = append(entry, b.count(g.count+1))
		default:
			entry = append(entry, b.count(1))
		}
	} else {
		entry = append(entry, b.count(1))
		entry = append(entry, b.info...)
	}
	slices.SortStableFunc(entry, compareKeys)
	b.entry = entry

	at := b.begin("x-death", amqp091.TypeArray)
	n := b.openLen()
	b.appendTable(entry...)
	for i, g := range gs {
		if i == match {
			continue
		}
		if _, hasCount := g.d.table.Get("count"); g.count > 0 && !hasCount {
			// The merged count goes first, as RabbitMQ prepends it.
			b.buf = append(b.buf, byte(amqp091.TypeTable))
			t := b.openLen()
			b.count(g.count)
			b.buf = append(b.buf, g.d.table...)
			b.closeLen(t)
		} else {
			b.buf = append(b.buf, g.d.raw...)
		}
	}
	b.closeLen(n)
	return b.finish(at)
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
