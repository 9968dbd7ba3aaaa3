package broker

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unsafe"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// bodyPrealloc is the most of a message body reserved on its content
// header's word; a larger body grows as its frames arrive.
const bodyPrealloc = 1 << 20

// content handles a content header or body frame of the message being
// published.
func (ch *channel) content(f amqp091.Frame) *amqpError {
	p := &ch.pub
	switch {
	case p.stage == 0:
		return errorf(505, "expected method frame, got non method frame instead")
	case p.stage == 1 && f.Type != amqp091.FrameHeader:
		return ch.unexpectedFrame()
	case p.stage == 2 && f.Type != amqp091.FrameBody:
		return ch.unexpectedFrame()
	}
	if p.stage == 1 {
		if len(f.Payload) >= 2 {
			if class := uint16(f.Payload[0])<<8 | uint16(f.Payload[1]); class != amqp091.ClassBasic {
				e := errorf(505, "expected content header for class 60, got one for class "+strconv.Itoa(int(class))+" instead")
				e.classID, e.methodID = 60, 40
				return e
			}
		}
		// Header and body share the message's pooled buffer: they live
		// and die together with the message. The body-size is the
		// client's word, so at most bodyPrealloc is reserved before the
		// bytes arrive (2047 channels each announcing 128 MiB must not
		// cost that). The header is decoded once, from its copy there,
		// so that its properties stay valid until the message is
		// complete (the read buffer moves on meanwhile).
		var announced uint64
		if len(f.Payload) >= 12 {
			announced = binary.BigEndian.Uint64(f.Payload[4:])
		}
		p.msg = queue.AllocMessage(len(f.Payload) + int(min(announced, bodyPrealloc)))
		buf := append(p.msg.Buffer(), f.Payload...)
		p.header = buf[:len(f.Payload):len(f.Payload)]
		h := &ch.pubHeader
		if err := h.DecodeFromBytes(p.header); err != nil {
			ch.dropContent()
			e := errorf(502, "content header: "+err.Error())
			e.classID, e.methodID = 60, 40
			return e
		}
		if h.ClassID != amqp091.ClassBasic {
			ch.dropContent()
			e := errorf(505, "expected content header for class 60, got one for class "+strconv.Itoa(int(h.ClassID))+" instead")
			e.classID, e.methodID = 60, 40
			return e
		}
		if int64(h.BodySize) > ch.c.b.maxMessage {
			e := errorf(406, "message size "+strconv.FormatUint(h.BodySize, 10)+" is larger than configured max size "+strconv.FormatInt(ch.c.b.maxMessage, 10))
			e.classID, e.methodID = 60, 40
			ch.dropContent()
			return e
		}
		p.bodySize = h.BodySize
		p.body = buf[len(f.Payload):len(f.Payload)]
		p.stage = 2
		if h.BodySize == 0 {
			return ch.complete()
		}
		return nil
	}
	if p.overrun || uint64(len(p.body))+uint64(len(f.Payload)) > p.bodySize {
		p.overrun = true
		p.body = p.body[:0]
		ch.c.b.mem.shrink(p.counted)
		p.counted = 0
		return nil
	}
	p.body = append(p.body, f.Payload...)
	p.counted += int64(len(f.Payload))
	ch.c.b.mem.grow(int64(len(f.Payload)))
	if uint64(len(p.body)) == p.bodySize {
		return ch.complete()
	}
	return nil
}

// complete handles a whole published message, with RabbitMQ's checks in
// its order.
func (ch *channel) complete() *amqpError {
	p := ch.pub
	msg := p.msg
	p.msg, ch.pub.msg = nil, nil
	ch.dropContent() // the message's reference counts it again
	routeHeaders, e := ch.checkPublished(p, msg)
	if e != nil {
		msg.Free()
		return e
	}
	// The publishing path's reference, until the message is routed:
	// the queues and a transaction take their own. The message's bytes
	// are final now, and count from here.
	c := ch.c
	c.b.mem.hold(msg)
	defer c.b.mem.release(msg)
	if ch.tx {
		// Checked now, routed at commit.
		if _, ok, internal := c.vh.route(p.exchange, nil, nil, &ch.scratch); !ok && p.exchange != "" {
			return ids2(errNoExchange(p.exchange, c.vh.name))
		} else if internal {
			return ids2(errorf(403, "cannot publish to internal "+rsExchange(p.exchange, c.vh.name)))
		}
		c.b.mem.hold(msg)           // until commit or rollback
		p.header, p.body = nil, nil // the message's
		ch.txPubs = append(ch.txPubs, txPublish{p: p, msg: msg})
		return nil
	}
	return ids2(ch.deliverPublished(p, msg, routeHeaders))
}

// checkPublished makes msg the message published, with RabbitMQ's checks
// in its order, and returns the headers it is routed on.
func (ch *channel) checkPublished(p publishing, msg *queue.Message) (amqp091.Table, *amqpError) {
	c := ch.c
	if p.other {
		return nil, &amqpError{code: 503, text: "COMMAND_INVALID - unimplemented method", classID: p.classID, methodID: p.methodID}
	}
	ids := func(e *amqpError) *amqpError { e.classID, e.methodID = 60, 40; return e }
	if p.immediate {
		return nil, ids(errorf(540, "immediate=true"))
	}
	if err := c.checkPublish(p.exchange); err != nil {
		return nil, ids(err)
	}
	h := &ch.pubHeader // decoded from p.header when it arrived
	props := &h.Properties
	if props.Flags&amqp091.FlagUserID != 0 && string(props.UserID) != c.user {
		return nil, ids(errorf(406, "user_id property set to '"+string(props.UserID)+"' but authenticated user was '"+c.user+"'"))
	}
	// A message is published when its last bytes were read: one clock
	// reading per socket read, not one per message (a clock reading costs
	// a twentieth of a small message's path on this machine's vDSO).
	at := c.readAt
	if at == 0 { // frames that came by no socket (in process)
		at = latency.Now()
	}
	msg.Exchange, msg.RoutingKey, msg.Header, msg.Body, msg.PublishedAt = p.exchange, p.routingKey, p.header, p.body, at
	if err := msg.SetProperties(props); err != nil {
		if pe, ok := err.(*queue.PublishError); ok {
			return nil, ids(&amqpError{code: 406, text: pe.ReplyText()})
		}
		return nil, ids(errorf(502, "content header: "+err.Error()))
	}
	routeHeaders := props.Headers
	if _, bcc := props.Headers.Get("BCC"); bcc {
		// BCC routes but is not delivered: RabbitMQ strips it.
		var kept amqp091.Table
		it := props.Headers.Iter()
		for it.Next() {
			if string(it.Key()) != "BCC" {
				kept = kept.Append(string(it.Key()), it.Value())
			}
		}
		routeHeaders = append(amqp091.Table(nil), props.Headers...)
		props.Headers = kept
		msg.Header = h.AppendTo(nil)
	}
	if props.Flags&amqp091.FlagReplyTo != 0 && string(props.ReplyTo) == replyToQueue {
		ch.mu.Lock()
		token := ch.replyToken
		ch.mu.Unlock()
		if token == "" {
			return nil, ids(errorf(406, "fast reply consumer does not exist"))
		}
		props.ReplyTo = []byte(replyToQueue + "." + token)
		msg.Header = h.AppendTo(nil)
	}
	return routeHeaders, nil
}

func ids2(e *amqpError) *amqpError {
	if e != nil {
		e.classID, e.methodID = 60, 40
	}
	return e
}

// deliverPublished routes a message to its queues, returns it when
// mandatory and unroutable, and confirms it.
func (ch *channel) deliverPublished(p publishing, msg *queue.Message, headers amqp091.Table) *amqpError {
	c := ch.c
	b := c.b
	b.stats.published.Add(1)
	var seq uint64
	if ch.confirm {
		seq = ch.nextPubSeq
		ch.nextPubSeq++
	}
	if p.exchange == "" && strings.HasPrefix(p.routingKey, replyToQueue+".") {
		routed := b.deliverReply(p.routingKey[len(replyToQueue)+1:], msg)
		if !routed && p.mandatory {
			ch.basicReturn(312, "NO_ROUTE", msg)
		}
		if ch.confirm {
			ch.ack(seq)
		}
		return nil
	}
	keys, kerr := route.RoutingKeys(unsafeBytes(p.routingKey), headers, ch.scratch.keys[:0])
	ch.scratch.keys = keys
	if kerr != nil {
		return errorf(406, kerr.(*route.InvalidMessageError).Text)
	}
	qs, ok, internal := c.vh.route(p.exchange, keys, headers, &ch.scratch)
	if !ok {
		return errNoExchange(p.exchange, c.vh.name)
	}
	if internal {
		return errorf(403, "cannot publish to internal "+rsExchange(p.exchange, c.vh.name))
	}
	if len(qs) == 0 {
		if p.mandatory {
			ch.basicReturn(312, "NO_ROUTE", msg)
		}
		if ch.confirm {
			ch.ack(seq)
		}
		return nil
	}
	msg.Via = ch.scratch.via
	rejected := false
	for _, q := range qs {
		if !q.enqueue(msg, ch) {
			rejected = true
		}
	}
	if ch.confirm {
		if rejected {
			ch.nack(seq)
		} else {
			ch.ack(seq)
		}
	}
	return nil
}

func (ch *channel) basicReturn(code uint16, text string, msg *queue.Message) {
	ch.c.b.stats.returned.Add(1)
	c := ch.c
	c.send(func(out []byte) []byte {
		out = amqp091.AppendMethodFrame(out, ch.id, &amqp091.BasicReturn{
			ReplyCode: code, ReplyText: []byte(text), Exchange: []byte(msg.Exchange), RoutingKey: []byte(msg.RoutingKey)})
		return appendContent(out, ch.id, msg, c.frameMax)
	})
}

// ack records a confirm; consecutive confirms of one kind go out as one
// basic.ack (or basic.nack) with multiple at the end of the read batch,
// as RabbitMQ coalesces them.
func (ch *channel) ack(seq uint64) { ch.confirmOne(seq, false) }

func (ch *channel) nack(seq uint64) { ch.confirmOne(seq, true) }

func (ch *channel) confirmOne(seq uint64, nack bool) {
	ch.c.b.stats.confirmed.Add(1)
	if ch.confirmPending && seq == ch.ackUpTo+1 && nack == ch.pendingNack {
		ch.ackUpTo = seq
		return
	}
	ch.flushConfirms()
	ch.confirmPending = true
	ch.pendingNack = nack
	ch.ackFrom, ch.ackUpTo = seq, seq
}

func (ch *channel) flushConfirms() {
	if !ch.confirmPending {
		return
	}
	ch.confirmPending = false
	multiple := ch.ackUpTo > ch.ackFrom
	if ch.pendingNack {
		// RabbitMQ's basic.nack record has requeue true by default, and
		// that is what it sends.
		ch.sendMethod(&amqp091.BasicNack{DeliveryTag: ch.ackUpTo, Multiple: multiple, Requeue: true})
		return
	}
	ch.sendMethod(&amqp091.BasicAck{DeliveryTag: ch.ackUpTo, Multiple: multiple})
}

// commit applies a transaction: its publishes, then its acks.
func (ch *channel) commit() *amqpError {
	pubs, acks := ch.txPubs, ch.txAcks
	ch.txPubs, ch.txAcks = nil, nil
	for i, t := range pubs {
		e := ch.deliverPublished(t.p, t.msg, headersOf(t.msg.Header))
		if e != nil {
			for _, r := range pubs[i:] {
				ch.c.b.mem.release(r.msg)
			}
			return e
		}
		ch.c.b.mem.release(t.msg) // the queues hold it now
	}
	for _, a := range acks {
		if e := ch.settle(a.kind, a.tag, a.multiple, a.requeue); e != nil {
			return e
		}
	}
	return nil
}

// deliverReply hands a reply to the direct reply-to consumer of token.
func (b *Broker) deliverReply(token string, msg *queue.Message) bool {
	v, ok := b.replyTo.Load(token)
	if !ok {
		return false
	}
	ch := v.(*channel)
	ch.mu.Lock()
	cons := ch.replyTo
	ch.mu.Unlock()
	if cons == nil {
		return false
	}
	ch.deliver(cons, nil, queue.Entry{Msg: msg})
	return true
}

// unsafeBytes views a string's bytes for read-only use (routing reads
// the key and keeps nothing of it).
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
