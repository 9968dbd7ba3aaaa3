package broker

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// Headers exchanges route AMQP 1.0 messages on their application-properties
// and message-annotations, as RabbitMQ 4 does (rabbit_exchange_type_headers
// with mc_amqp:routing_headers(Msg, [x_headers])): every application
// property with a string key and every annotation with a symbol key whose
// value is simple (string, symbol, binary, uuid, a number of any kind, a
// timestamp as its milliseconds, a boolean) is a header the bindings'
// arguments are compared with; lists, maps, arrays, described values,
// decimals, NaN and infinities, and nulls are not. The annotations are
// what the client sent (not x-exchange and x-routing-key, which the broker
// writes), and only x-match all-with-x and any-with-x compare x- keys. A
// key in both wins as an annotation; a key repeated among the
// application-properties counts its first value. The values are compared
// as 0-9-1 headers are: numbers by value whatever their width, a string
// with binary of the same bytes.

// routeHeader10 is one routing header being collected; rank orders the
// candidates for a key (the highest wins).
type routeHeader10 struct {
	key  []byte
	v    amqp091.Value
	rank int
}

// routingHeaders returns the headers of message b (parsed in pm, client
// annotations in annotations) for a headers exchange, encoded as a field
// table in the connection's scratch; nil when it has none. It allocates
// nothing once the scratch has grown.
func (cn *conn10) routingHeaders(b []byte, pm *amqp10.Message, annotations *amqp10.Section) amqp091.Table {
	hs := cn.rhdrs[:0]
	n := 0
	for i := range pm.Sections {
		sec := &pm.Sections[i]
		if sec.Descriptor != amqp10.DescriptorApplicationProperties {
			continue
		}
		it := mapItems(b, sec.Value)
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			if k.Code != amqp10.CodeStr8 && k.Code != amqp10.CodeStr32 {
				continue
			}
			if v, ok := routeValue10(b, it.Value, true); ok && k.End-k.Data <= 255 {
				n++
				hs = append(hs, routeHeader10{key: b[k.Data:k.End], v: v, rank: -n}) // the first wins
			}
		}
	}
	if annotations != nil {
		it := mapItems(b, annotations.Value)
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			if k.Code != amqp10.CodeSym8 && k.Code != amqp10.CodeSym32 || k.End-k.Data > 255 {
				continue
			}
			if v, ok := routeValue10(b, it.Value, false); ok {
				n++
				hs = append(hs, routeHeader10{key: b[k.Data:k.End], v: v, rank: n}) // after every property; the last wins
			}
		}
	}
	cn.rhdrs = hs
	if len(hs) == 0 {
		return nil
	}
	slices.SortFunc(hs, func(a, b routeHeader10) int {
		if c := strings.Compare(string(a.key), string(b.key)); c != 0 {
			return c
		}
		return a.rank - b.rank
	})
	t := amqp091.Table(cn.rtable[:0])
	for i := range hs {
		if i+1 < len(hs) && string(hs[i+1].key) == string(hs[i].key) {
			continue // a higher rank follows
		}
		t = t.Append(string(hs[i].key), hs[i].v)
	}
	cn.rtable = t
	clear(hs) // they alias the message
	return t
}

// routeValue10 converts a simple AMQP 1.0 value to the field value the
// bindings are compared with; the one-byte booleans count only in
// application-properties (RabbitMQ 4 reads them as bare atoms elsewhere).
func routeValue10(b []byte, v amqp10.Value, app bool) (amqp091.Value, bool) {
	if v.Described() {
		return amqp091.Value{}, false
	}
	d := b[v.Data:v.End]
	switch v.Code {
	case amqp10.CodeStr8, amqp10.CodeStr32, amqp10.CodeSym8, amqp10.CodeSym32, amqp10.CodeVbin8, amqp10.CodeVbin32, amqp10.CodeUUID:
		return amqp091.LongstrValue(d), true
	case amqp10.CodeBoolean:
		return amqp091.BoolValue(d[0] != 0), true
	case amqp10.CodeTrue, amqp10.CodeFalse:
		return amqp091.BoolValue(v.Code == amqp10.CodeTrue), app
	case amqp10.CodeUbyte, amqp10.CodeUshort, amqp10.CodeUint, amqp10.CodeSmallUint, amqp10.CodeUint0,
		amqp10.CodeUlong, amqp10.CodeSmallUlong, amqp10.CodeUlong0:
		u, _ := v.Uint(b)
		if u > math.MaxInt64 {
			// An integer past int64: the field type that holds it
			// unsigned compares by value too.
			return amqp091.TimestampValue(time.Unix(int64(u), 0)), true
		}
		return amqp091.Int64Value(int64(u)), true
	case amqp10.CodeByte, amqp10.CodeShort, amqp10.CodeInt, amqp10.CodeSmallInt, amqp10.CodeLong, amqp10.CodeSmallLong, amqp10.CodeTimestamp:
		i, _ := v.Int(b)
		return amqp091.Int64Value(i), true
	case amqp10.CodeChar:
		return amqp091.Int64Value(int64(binary.BigEndian.Uint32(d))), true
	case amqp10.CodeFloat:
		f := float64(math.Float32frombits(binary.BigEndian.Uint32(d)))
		return amqp091.DoubleValue(f), !math.IsNaN(f) && !math.IsInf(f, 0)
	case amqp10.CodeDouble:
		f := math.Float64frombits(binary.BigEndian.Uint64(d))
		return amqp091.DoubleValue(f), !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return amqp091.Value{}, false
}

// hasAppProperties reports whether the message has application-properties.
func hasAppProperties(pm *amqp10.Message) bool {
	for i := range pm.Sections {
		if pm.Sections[i].Descriptor == amqp10.DescriptorApplicationProperties {
			return true
		}
	}
	return false
}
