package broker

import (
	"encoding/binary"
	"time"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// deadLetterHeader10 returns the stored header and message-annotations of
// the dead-lettered copy of an AMQP 1.0 message m, which leaves queueName
// for reason at now and is republished to exchange with key. As RabbitMQ 4
// records it: the header loses its ttl; the message-annotations get
// x-opt-deaths, an array of maps {queue, reason, count, first-time,
// last-time, exchange, routing-keys}, one per queue and reason, the latest
// first and counted (a death from the same queue for the same reason again
// raises its count); x-exchange and x-routing-key say where the copy was
// published. The bare message is the original's, shared.
func deadLetterHeader10(m *queue.Message, reason queue.Reason, queueName string, now time.Time, exchange, key string) []byte {
	stored := m.Header
	var out []byte
	var client *amqp10.Section
	var deaths *amqp10.Value
	off := 0
	for off < len(stored) {
		v, err := amqp10.Scan(stored, off)
		if err != nil {
			break
		}
		code, _, _ := v.Descriptor(stored)
		switch code {
		case amqp10.DescriptorHeader:
			var h amqp10.Composite
			if h.Set(stored, v) == nil {
				f := make([][]byte, 0, 5)
				for i := 0; i < h.N && i < 5; i++ {
					if i == headerTTL {
						f = append(f, amqp10.AppendNull(nil))
						continue
					}
					f = append(f, stored[h.Fields[i].Start:h.Fields[i].End])
				}
				out = amqp10.AppendComposite(out, amqp10.DescriptorHeader, f...)
			}
		case amqp10.DescriptorMessageAnnotations:
			client = &amqp10.Section{Descriptor: code, Value: v}
			it := mapItems(stored, v)
			for it.Next() {
				k := it.Value
				if !it.Next() {
					break
				}
				if name, ok := k.Bytes(stored); ok && string(name) == "x-opt-deaths" {
					d := it.Value
					deaths = &d
				}
			}
		}
		off = v.End
	}
	record := deathRecord(stored, deaths, reason, queueName, now, m.Exchange, m.RoutingKey)
	// The client's annotations but the ones the broker writes.
	start := len(out)
	out = append(out, 0x00, byte(amqp10.CodeSmallUlong), byte(amqp10.DescriptorMessageAnnotations), byte(amqp10.CodeMap32), 0, 0, 0, 0, 0, 0, 0, 0)
	items := len(out)
	count := 0
	if client != nil {
		it := mapItems(stored, client.Value)
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			if name, ok := k.Bytes(stored); ok {
				switch string(name) {
				case "x-opt-deaths", "x-exchange", "x-routing-key":
					continue
				}
			}
			out = append(out, stored[k.Start:k.End]...)
			out = append(out, stored[it.Value.Start:it.Value.End]...)
			count += 2
		}
	}
	out = amqp10.AppendSymbol(out, "x-opt-deaths")
	out = append(out, record...)
	out = amqp10.AppendSymbol(out, "x-exchange")
	out = amqp10.AppendString(out, exchange)
	out = amqp10.AppendSymbol(out, "x-routing-key")
	out = amqp10.AppendString(out, key)
	count += 6
	binary.BigEndian.PutUint32(out[start+4:], uint32(len(out)-items+4))
	binary.BigEndian.PutUint32(out[start+8:], uint32(count))
	return out
}

// deathRecord returns the x-opt-deaths array after a death: the record of
// this queue and reason first (its count raised, or 1), then the others
// as they were. Every element is written as a map32, the array's one
// element constructor.
func deathRecord(b []byte, deaths *amqp10.Value, reason queue.Reason, queueName string, now time.Time, exchange, key string) []byte {
	count, first := uint64(1), now.UnixMilli()
	var others [][]byte
	if deaths != nil && (deaths.Code == amqp10.CodeArray8 || deaths.Code == amqp10.CodeArray32) &&
		(deaths.Elem.Code == amqp10.CodeMap8 || deaths.Elem.Code == amqp10.CodeMap32) {
		it := deaths.Items(b)
		for it.Next() {
			el := it.Value
			d, _ := readDeath10(b, el)
			if string(d.queue) == queueName && string(d.reason) == string(reason) {
				count, first = d.count+1, d.first
				continue
			}
			// Re-headed as a map32, its entries as they were.
			el32 := binary.BigEndian.AppendUint32(nil, uint32(el.End-el.Data+4))
			el32 = binary.BigEndian.AppendUint32(el32, uint32(el.Count))
			others = append(others, append(el32, b[el.Data:el.End]...))
		}
	}
	m := amqp10.AppendMap(nil,
		amqp10.AppendSymbol(nil, "queue"), amqp10.AppendString(nil, queueName),
		amqp10.AppendSymbol(nil, "reason"), amqp10.AppendSymbol(nil, string(reason)),
		amqp10.AppendSymbol(nil, "count"), amqp10.AppendUlong(nil, count),
		amqp10.AppendSymbol(nil, "first-time"), amqp10.AppendTimestamp(nil, first),
		amqp10.AppendSymbol(nil, "last-time"), amqp10.AppendTimestamp(nil, now.UnixMilli()),
		amqp10.AppendSymbol(nil, "exchange"), amqp10.AppendString(nil, exchange),
		amqp10.AppendSymbol(nil, "routing-keys"), amqp10.AppendArray(nil, nil, amqp10.CodeStr32, strData32(key)))
	// m is a map8 or map32 with its constructor: rewrite as map32 data.
	mv, _ := amqp10.Scan(m, 0)
	el := binary.BigEndian.AppendUint32(nil, uint32(mv.End-mv.Data+4))
	el = binary.BigEndian.AppendUint32(el, uint32(mv.Count))
	el = append(el, m[mv.Data:mv.End]...)
	return amqp10.AppendArray(nil, nil, amqp10.CodeMap32, append([][]byte{el}, others...)...)
}

// strData32 is a string's data as an element of a str32 array.
func strData32(s string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s...)
}
