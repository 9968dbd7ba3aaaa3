package broker

import (
	"encoding/binary"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// session10 is one AMQP 1.0 session (§2.5). Its channel is a 0-9-1 channel
// value without a 0-9-1 client: it holds the session's consumers (one per
// receiver link) and its unsettled deliveries (delivery-id = tag), so the
// queues, the state view and the connection's cleanup treat both protocols
// alike. The broker uses the client's channel number for its own.
type session10 struct {
	cn      *conn10
	ch      *channel
	channel uint16
	links   map[uint32]*link10 // by the client's handle
	ending  bool               // the broker sent end with an error

	// nextIncomingID counts the transfers received, windowEdge is the
	// transfer-id the broker's last announced incoming-window ends at
	// (reader goroutine).
	nextIncomingID uint32
	windowEdge     uint32
	// Under ch.mu: the transfers sent and what the client's
	// incoming-window still allows (§2.5.6).
	nextOutgoingID       uint32
	remoteIncomingWindow uint32
}

// link10 is one link. A client's sender (the broker receives) publishes to
// exchange with key; a client's receiver (the broker sends) consumes q.
type link10 struct {
	s      *session10
	name   string
	handle uint32
	// detached: the broker detached the link with an error and drops its
	// frames until the client's detach.
	detached bool

	// Publishing (reader goroutine only).
	publishing bool
	exchange   string
	key        string
	useSubject bool // /exchanges/NAME: properties.subject is the key
	anonymous  bool // a target without an address: properties.to is it
	credit     uint32
	count      uint32 // delivery-count (§2.6.7)
	inDelivery bool
	deliveryID uint32
	settled    bool
	buf        []byte
	counted    int64 // of buf, in the memory accounting and conn10.assembling

	// Consuming: cons is the queue's consumer; credit and count under
	// s.ch.mu.
	cons  *consumer
	q     *queueState
	drain bool
	// gone: the queue was deleted and the broker detached the link (set
	// by the deleting goroutine).
	gone atomic.Bool
}

// begin handles begin (§2.7.2).
func (cn *conn10) begin(num uint16, b []byte, comp *amqp10.Composite) error {
	if _, ok := cn.sessions[num]; ok {
		return err10(condFramingError, "begin on channel "+strconv.Itoa(int(num))+", which has a session")
	}
	if uint32(num) > uint32(cn.c.b.channelMax) {
		return err10(condFramingError, "channel "+strconv.Itoa(int(num))+" is above channel-max "+strconv.Itoa(int(cn.c.b.channelMax)))
	}
	if _, ok := comp.Field(0); ok {
		return err10(condNotImplemented, "the broker does not begin sessions, so a begin with a remote-channel answers none")
	}
	s := &session10{cn: cn, channel: num, links: make(map[uint32]*link10), nextOutgoingID: 1}
	next, _ := comp.Uint(b, 1)
	win, _ := comp.Uint(b, 2)
	s.nextIncomingID = uint32(next)
	s.windowEdge = s.nextIncomingID + cn.c.b.window10()
	s.remoteIncomingWindow = uint32(win)
	c := cn.c
	s.ch = &channel{c: c, id: num, consumers: make(map[string]*consumer)}
	cn.sessions[num] = s
	c.mu.Lock()
	c.channels[num] = s.ch
	c.mu.Unlock()
	cn.send10(num, amqp10.AppendComposite(nil, amqp10.DescriptorBegin,
		amqp10.AppendUshort(nil, num), amqp10.AppendUint(nil, 1),
		amqp10.AppendUint(nil, c.b.window10()), amqp10.AppendUint(nil, sessionWindow),
		amqp10.AppendUint(nil, maxLinksPerSession-1)))
	return nil
}

// release ends the session's part in the model: its consumers go and its
// unsettled deliveries are requeued.
func (s *session10) release() {
	c := s.cn.c
	c.mu.Lock()
	if c.channels[s.channel] == s.ch {
		delete(c.channels, s.channel)
	}
	c.mu.Unlock()
	s.ch.release()
	for _, l := range s.links {
		l.dropAssembly()
	}
}

// endWith ends the session with an error (§2.7.8).
func (s *session10) endWith(e *error10) {
	s.cn.c.logf("session ", strconv.Itoa(int(s.channel)), ": ", e.cond, " ", e.desc)
	s.release()
	s.ending = true
	s.cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorEnd, appendError10(nil, e)))
}

// Roles (§2.8.1) and settlement modes (§2.8.2, §2.8.3).
const (
	roleSender   = false
	roleReceiver = true

	sndSettleUnsettled = 0
	sndSettleSettled   = 1
	// rcvSettleSecond is rcv-settle-mode second (§2.8.3).
	rcvSettleSecond = 1
)

// attach handles attach (§2.7.3). A refused link is answered as the
// specification asks: an attach without its terminus, then a detach
// with the error.
func (s *session10) attach(b []byte, comp *amqp10.Composite) error {
	name, _ := comp.Bytes(b, 0)
	handle, ok := comp.Uint(b, 1)
	if !ok {
		return err10(condInvalidField, "attach without a handle")
	}
	if handle >= maxLinksPerSession {
		return err10(condFramingError, "handle "+strconv.FormatUint(handle, 10)+" is above handle-max "+strconv.Itoa(maxLinksPerSession-1))
	}
	if _, ok := s.links[uint32(handle)]; ok {
		return &sessionError{err10(condHandleInUse, "handle "+strconv.FormatUint(handle, 10)+" is in use")}
	}
	role, _ := comp.Bool(b, 2)
	sndMode, _ := comp.Uint(b, 3)
	raw := func(i int) []byte {
		if f, ok := comp.Field(i); ok {
			return b[f.Start:f.End]
		}
		return amqp10.AppendNull(nil)
	}
	source, target := append([]byte(nil), raw(5)...), append([]byte(nil), raw(6)...)
	rcvMode, _ := comp.Uint(b, 4)
	l := &link10{s: s, name: string(name), handle: uint32(handle)}
	s.links[l.handle] = l
	var e *error10
	switch {
	case rcvMode == rcvSettleSecond && sndMode != sndSettleSettled:
		// RabbitMQ 4 refuses rcv-settle-mode second but where the sender
		// settles everything, which makes it moot (§2.7.3).
		e = err10(condNotImplemented, "rcv-settle-mode second not supported")
	case role == roleSender:
		e = l.attachPublisher(b, comp)
	default:
		e = l.attachConsumer(b, comp, sndMode)
	}
	nameField := amqp10.AppendString(nil, l.name)
	if e != nil {
		l.detached = true
		if role == roleSender {
			target = amqp10.AppendNull(nil)
		} else {
			source = amqp10.AppendNull(nil)
		}
		s.cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorAttach,
			nameField, amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, !role), amqp10.AppendUbyte(nil, uint8(sndMode)),
			amqp10.AppendUbyte(nil, uint8(rcvMode)), source, target))
		l.sendDetach(e)
		return nil
	}
	if role == roleSender {
		s.cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorAttach,
			nameField, amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, roleReceiver), amqp10.AppendUbyte(nil, uint8(sndMode)),
			amqp10.AppendUbyte(nil, 0), source, target, amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendNull(nil),
			amqp10.AppendUlong(nil, uint64(s.cn.c.b.maxMessage))))
		count, _ := comp.Uint(b, 9)
		l.count = uint32(count)
		l.credit = s.cn.c.b.grant10()
		l.sendFlow(false)
		return nil
	}
	s.cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorAttach,
		nameField, amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, roleSender), amqp10.AppendUbyte(nil, uint8(sndMode)),
		amqp10.AppendUbyte(nil, uint8(rcvMode)), source, target, amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 0)))
	// The consumer starts now: with no credit yet it is given nothing.
	q := l.q
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		l.queueDeleted()
		return nil
	}
	q.addConsumer(l.cons)
	q.unlock()
	return nil
}

// terminusAddress returns the address of a source or target (field 0).
func terminusAddress(b []byte, comp *amqp10.Composite, i int) (string, bool) {
	f, ok := comp.Field(i)
	if !ok {
		return "", false
	}
	var t amqp10.Composite
	if t.Set(b, *f) != nil {
		return "", false
	}
	a, ok := t.Bytes(b, 0)
	return string(a), ok
}

// parseAddressV1 reads the address forms RabbitMQ 3.x accepted, which
// RabbitMQ 4 still takes with a deprecation warning: /queue/NAME and
// /amq/queue/NAME (a queue; unlike 3.x the broker does not declare it),
// /exchange/NAME/KEY, /exchange/NAME and /topic/KEY (amq.topic). Names
// are not percent-encoded in them.
func parseAddressV1(a string) (exchange, key string, isQueue, ok bool) {
	switch {
	case strings.HasPrefix(a, "/amq/queue/") && len(a) > len("/amq/queue/"):
		return "", a[len("/amq/queue/"):], true, true
	case strings.HasPrefix(a, "/queue/") && len(a) > len("/queue/"):
		return "", a[len("/queue/"):], true, true
	case strings.HasPrefix(a, "/exchange/"):
		x, k, _ := strings.Cut(a[len("/exchange/"):], "/")
		return x, k, false, x != ""
	case strings.HasPrefix(a, "/topic/"):
		return "amq.topic", a[len("/topic/"):], false, true
	}
	return "", "", false, false
}

// resolveAddress reads a v2 address, else a v1 one, logging that the v1
// form is deprecated as RabbitMQ 4 does.
func (l *link10) resolveAddress(a string) (exchange, key string, isQueue, ok bool) {
	if exchange, key, isQueue, ok = parseAddress(a); ok {
		return
	}
	if exchange, key, isQueue, ok = parseAddressV1(a); ok {
		l.s.cn.c.logf("link '", l.name, "': address '", a, "' is in the deprecated address format v1; use v2 (/queues/NAME, /exchanges/NAME/KEY)")
	}
	return
}

// parseAddress reads a RabbitMQ 4 address (v2): /queues/NAME,
// /exchanges/NAME/KEY or /exchanges/NAME, names percent-encoded.
func parseAddress(a string) (exchange, key string, isQueue, ok bool) {
	switch {
	case strings.HasPrefix(a, "/queues/"):
		n, err := url.PathUnescape(a[len("/queues/"):])
		if err != nil || n == "" || strings.Contains(a[len("/queues/"):], "/") {
			return "", "", false, false
		}
		return "", n, true, true
	case strings.HasPrefix(a, "/exchanges/"):
		rest := a[len("/exchanges/"):]
		xs, ks, hasKey := strings.Cut(rest, "/")
		x, err := url.PathUnescape(xs)
		if err != nil || x == "" || strings.Contains(ks, "/") {
			return "", "", false, false
		}
		if hasKey {
			k, err := url.PathUnescape(ks)
			if err != nil {
				return "", "", false, false
			}
			return x, k, false, true
		}
		return x, "", false, true
	}
	return "", "", false, false
}

// attachPublisher checks a client sender's target: the exchange (or the
// default exchange for a queue) must exist and be writable.
func (l *link10) attachPublisher(b []byte, comp *amqp10.Composite) *error10 {
	c := l.s.cn.c
	if _, ok := comp.Field(6); !ok {
		return err10(condInvalidField, "attach of a sender without a target")
	}
	addr, ok := terminusAddress(b, comp, 6)
	if !ok {
		// The anonymous terminus: each message's properties.to is its
		// address, checked as it comes.
		l.publishing, l.anonymous = true, true
		return nil
	}
	x, key, isQueue, ok := l.resolveAddress(addr)
	if !ok {
		return err10(condInvalidField, "address '"+addr+"' is not in RabbitMQ's address format v2 (/queues/NAME, /exchanges/NAME/KEY, /exchanges/NAME)")
	}
	if x == "amq.default" {
		return err10(condUnauthorized, "publishing to the default exchange through /exchanges/amq.default is not allowed: use /queues/NAME")
	}
	v := c.vh
	if isQueue {
		if _, e := v.lookupQueue(c, key); e != nil {
			return amqpErrorTo10(e)
		}
	} else {
		v.mu.RLock()
		ex, found := v.exchanges[x]
		v.mu.RUnlock()
		if !found {
			return err10(condNotFound, "no "+rsExchange(x, v.name))
		}
		if ex.internal {
			return err10(condUnauthorized, "cannot publish to internal "+rsExchange(x, v.name))
		}
	}
	if e := c.check(permWrite, "exchange", x); e != nil {
		return amqpErrorTo10(e)
	}
	l.publishing = true
	l.exchange, l.key = x, key
	l.useSubject = !isQueue && key == ""
	if isQueue {
		l.key = key
	}
	return nil
}

// attachConsumer checks a client receiver's source, /queues/NAME, and
// prepares its consumer.
func (l *link10) attachConsumer(b []byte, comp *amqp10.Composite, sndMode uint64) *error10 {
	c := l.s.cn.c
	addr, ok := terminusAddress(b, comp, 5)
	if !ok {
		return err10(condInvalidField, "a source needs an address")
	}
	_, name, isQueue, ok := l.resolveAddress(addr)
	if !ok || !isQueue {
		return err10(condInvalidField, "source address '"+addr+"' is not /queues/NAME")
	}
	if e := c.check(permRead, "queue", name); e != nil {
		return amqpErrorTo10(e)
	}
	q, e := c.vh.lookupQueue(c, name)
	if e != nil {
		return amqpErrorTo10(e)
	}
	tag := "amqp10-" + strconv.Itoa(int(l.s.channel)) + "-" + strconv.FormatUint(uint64(l.handle), 10)
	l.q = q
	l.cons = &consumer{tag: tag, tagBytes: []byte(tag), ch: l.s.ch, q: q, noAck: sndMode == sndSettleSettled, link: l}
	ch := l.s.ch
	ch.mu.Lock()
	ch.consumers[tag] = l.cons
	ch.mu.Unlock()
	return nil
}

// sendDetach detaches the link with an error (§2.7.6).
func (l *link10) sendDetach(e *error10) {
	l.s.cn.c.logf("link '", l.name, "': ", e.cond, " ", e.desc)
	l.s.cn.send10(l.s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorDetach,
		amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, true), appendError10(nil, e)))
}

// dropAssembly forgets the message being assembled and its accounting.
func (l *link10) dropAssembly() {
	if l.counted != 0 {
		l.s.cn.c.b.mem.shrink(l.counted)
		l.s.cn.assembling -= l.counted
		l.counted = 0
	}
	l.buf = l.buf[:0]
	if cap(l.buf) > 1<<20 {
		l.buf = nil // a large message's buffer is not kept for ever
	}
}

// fail detaches a link on an error of its client and stops it.
func (l *link10) fail(e *error10) {
	if l.detached {
		return
	}
	l.detached = true
	l.dropAssembly()
	l.inDelivery = false
	l.stopConsuming()
	l.sendDetach(e)
}

// stopConsuming removes a receiver link's consumer from its queue.
func (l *link10) stopConsuming() {
	if l.cons == nil {
		return
	}
	ch := l.s.ch
	ch.mu.Lock()
	_, ok := ch.consumers[l.cons.tag]
	delete(ch.consumers, l.cons.tag)
	ch.mu.Unlock()
	if ok {
		ch.detachConsumer(l.cons)
	}
}

// queueDeleted detaches a consumer whose queue was deleted, as RabbitMQ 4
// does (amqp:resource-deleted).
func (l *link10) queueDeleted() {
	if l.gone.Swap(true) {
		return
	}
	l.s.cn.c.send(func(out []byte) []byte {
		return appendFrame10(out, amqp10.FrameTypeAMQP, l.s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorDetach,
			amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, true),
			appendError10(nil, err10(condResourceDeleted, "deleted "+rsQueue(l.q.name, l.q.vh.name)))))
	})
}

// detach handles the client's detach (§2.7.6).
func (s *session10) detach(b []byte, comp *amqp10.Composite) error {
	h, _ := comp.Uint(b, 0)
	l := s.links[uint32(h)]
	if l == nil {
		return &sessionError{err10(condUnattachedHandle, "detach of handle "+strconv.FormatUint(h, 10)+", which is not attached")}
	}
	delete(s.links, l.handle)
	l.dropAssembly()
	if l.detached || l.gone.Load() {
		return nil // the answer to the broker's detach
	}
	l.stopConsuming()
	if l.cons != nil {
		// The link's unsettled deliveries go back to the queue.
		ch := s.ch
		ch.mu.Lock()
		var ds []delivery
		for i := ch.unackedHead; i < len(ch.unacked); i++ {
			d := &ch.unacked[i]
			if !d.done && d.cons == l.cons {
				ds = append(ds, *d)
				ch.markDone(d)
			}
		}
		ch.compact()
		ch.mu.Unlock()
		settleGroups(ds, settleRequeue, &ch.entries)
	}
	closed, _ := comp.Bool(b, 1)
	s.cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorDetach,
		amqp10.AppendUint(nil, l.handle), amqp10.AppendBool(nil, closed)))
	return nil
}

// appendSessionFlow appends the session fields of a flow (§2.7.4),
// announcing the incoming-window afresh (reader goroutine, ch.mu held).
func (s *session10) appendSessionFlow(fields [][]byte) [][]byte {
	w := s.cn.c.b.window10()
	s.windowEdge = s.nextIncomingID + w
	return append(fields, amqp10.AppendUint(nil, s.nextIncomingID), amqp10.AppendUint(nil, w),
		amqp10.AppendUint(nil, s.nextOutgoingID), amqp10.AppendUint(nil, sessionWindow))
}

// sendFlow sends the link's flow: its delivery-count and credit (reader
// goroutine), after the disposition being gathered.
func (l *link10) sendFlow(drain bool) {
	l.s.cn.flushDisposition()
	ch := l.s.ch
	ch.mu.Lock()
	fields := l.s.appendSessionFlow(make([][]byte, 0, 9))
	fields = append(fields, amqp10.AppendUint(nil, l.handle), amqp10.AppendUint(nil, l.count), amqp10.AppendUint(nil, l.credit),
		amqp10.AppendNull(nil), amqp10.AppendBool(nil, drain))
	perf := amqp10.AppendComposite(nil, amqp10.DescriptorFlow, fields...)
	// Under ch.mu, so a flow after transfers goes out after them.
	c := l.s.cn.c
	c.wmu.Lock()
	if !c.wclosed {
		c.out = appendFrame10(c.out, amqp10.FrameTypeAMQP, l.s.channel, perf)
	}
	c.wmu.Unlock()
	ch.mu.Unlock()
	c.signal()
}

// flow handles flow (§2.7.4): the session's window and, with a handle,
// the link's credit and drain.
func (s *session10) flow(b []byte, comp *amqp10.Composite) error {
	win, _ := comp.Uint(b, 1)
	next, hasNext := comp.Uint(b, 0)
	ch := s.ch
	ch.mu.Lock()
	if !hasNext {
		next = 1 // the broker's initial next-outgoing-id
	}
	s.remoteIncomingWindow = uint32(next) + uint32(win) - s.nextOutgoingID
	ch.mu.Unlock()
	echo, _ := comp.Bool(b, 9)
	h, hasHandle := comp.Uint(b, 4)
	if !hasHandle {
		if echo {
			ch.mu.Lock()
			perf := amqp10.AppendComposite(nil, amqp10.DescriptorFlow, s.appendSessionFlow(nil)...)
			ch.mu.Unlock()
			s.cn.send10(s.channel, perf)
		}
		s.redispatch()
		return nil
	}
	l := s.links[uint32(h)]
	if l == nil {
		return &sessionError{err10(condUnattachedHandle, "flow for handle "+strconv.FormatUint(h, 10)+", which is not attached")}
	}
	if l.detached {
		return nil
	}
	if l.publishing {
		if echo {
			l.sendFlow(false)
		}
		return nil
	}
	credit, _ := comp.Uint(b, 6)
	drain, _ := comp.Bool(b, 8)
	ch.mu.Lock()
	rcvCount := l.count
	if dc, ok := comp.Uint(b, 5); ok {
		rcvCount = uint32(dc)
	}
	// link-credit(snd) = delivery-count(rcv) + link-credit(rcv) -
	// delivery-count(snd) (§2.6.7), none when the client is behind.
	cr := rcvCount + uint32(credit) - l.count
	if int32(cr) < 0 {
		cr = 0
	}
	l.credit = cr
	l.drain = drain
	ch.mu.Unlock()
	q := l.q
	q.mu.Lock()
	q.dispatch()
	q.unlock()
	if drain {
		// What the queue had went out; the rest of the credit is used up
		// by advancing the delivery-count (§2.6.7).
		ch.mu.Lock()
		l.count += l.credit
		l.credit = 0
		l.drain = false
		ch.mu.Unlock()
		l.sendFlow(true)
	} else if echo {
		l.sendFlow(false)
	}
	return nil
}

// redispatch lets every receiver link's queue deliver (the session's
// window opened).
func (s *session10) redispatch() {
	for _, l := range s.links {
		if l.q != nil && !l.detached {
			l.q.mu.Lock()
			l.q.dispatch()
			l.q.unlock()
		}
	}
}

// hasCredit reports whether the link may be sent a message now (q.mu
// held): link credit, the session's window, the connection's buffer.
func (l *link10) hasCredit() bool {
	ch := l.s.ch
	ch.mu.Lock()
	ok := !ch.closing && l.credit > 0 && l.s.remoteIncomingWindow > 0
	ch.mu.Unlock()
	if !ok {
		return false
	}
	return ch.c.roomToWrite()
}

// deliver sends one message to the link (q.mu held): its stored header
// and annotations, then the bare message and footer exactly as they
// arrived, split into frames of the peer's max-frame-size.
func (l *link10) deliver(cons *consumer, q *queueState, e queue.Entry) {
	e.Msg.Held()
	if e.Msg.Format == queue.FormatAMQP10 && l.s.cn.c.b.cfg.VerifyChecksums {
		l.checkDelivery(e.Msg, q)
	}
	now := observeDeliver(q, e)
	s := l.s
	ch := s.ch
	ch.mu.Lock()
	ch.nextTag++
	tag := ch.nextTag
	if !cons.noAck {
		ch.unacked = append(ch.unacked, delivery{at: now, tag: tag, q: q, e: e, cons: cons})
		ch.unackedLive++
		cons.unacked++
	}
	// hasCredit saw credit; a flow may have taken it away since, and the
	// one message already picked still goes.
	if l.credit > 0 {
		l.credit--
	}
	l.count++
	var parts [3][]byte
	m := e.Msg
	if m.Format == queue.FormatAMQP10 {
		parts[0], parts[1] = m.Header, m.Body
		if e.Redelivered {
			parts[0] = redeliveryHeader(m.Header, e.Failures)
		}
	} else {
		// A 0-9-1 message, converted as RabbitMQ 4 converts it.
		parts[0] = from091(m, e.Redelivered, e.Failures)
	}
	c := s.cn.c
	c.wmu.Lock()
	if !c.wclosed {
		var frames uint32
		c.out, frames = appendTransfers(c.out, s.channel, l.handle, uint32(tag), cons.noAck, parts, s.cn.peerMaxFrame)
		s.nextOutgoingID += frames
		s.remoteIncomingWindow -= min(frames, s.remoteIncomingWindow)
	}
	c.wmu.Unlock()
	ch.mu.Unlock()
	c.b.stats.delivered.Add(1)
	if q.waker != nil {
		q.waker.wakeAfterBatch(c) // a publisher's reader is enqueueing
		return
	}
	c.signal()
}

// transfer handles a transfer from a client's sender (§2.7.5): frames of
// one delivery are assembled (at most the broker's max message size),
// then the message is routed and, unless settled, its outcome sent.
func (s *session10) transfer(b []byte, comp *amqp10.Composite, payload []byte) error {
	if int32(s.nextIncomingID-s.windowEdge) >= 0 {
		return &sessionError{err10(condWindowViolation, "transfer beyond the session's incoming-window")}
	}
	s.nextIncomingID++
	var t amqp10.Transfer
	if err := t.Decode(b, comp); err != nil {
		return err10(condDecodeError, err.Error())
	}
	l := s.links[t.Handle]
	if l == nil {
		return &sessionError{err10(condUnattachedHandle, "transfer on handle "+strconv.FormatUint(uint64(t.Handle), 10)+", which is not attached")}
	}
	if l.detached {
		return nil
	}
	if !l.publishing {
		l.fail(err10(condInvalidField, "transfer on a link whose role is receiver"))
		return nil
	}
	c := s.cn.c
	if !l.inDelivery {
		if l.credit == 0 {
			l.fail(err10(condTransferLimit, "transfer beyond the link credit"))
			return nil
		}
		if !t.HasDeliveryID && !t.Settled {
			l.fail(err10(condInvalidField, "first transfer of a delivery without a delivery-id"))
			return nil
		}
		if c.b.mem.blocked.Load() {
			s.cn.endOfBatch() // before the reader waits for the alarm
		}
		c.b.mem.waitUnblocked(c)
		l.credit--
		l.count++
		l.inDelivery = true
		l.deliveryID, l.settled = t.DeliveryID, t.Settled
		l.buf = l.buf[:0]
	} else if t.HasSettled && t.Settled {
		l.settled = true
	}
	if m, ok := comp.Uint(b, 6); ok && m == rcvSettleSecond && !l.settled {
		// A transfer's own rcv-settle-mode, for an unsettled delivery:
		// refused as RabbitMQ 4 refuses it (settled, it is ignored).
		l.fail(err10(condNotImplemented, "rcv-settle-mode second not supported"))
		return nil
	}
	if t.Aborted {
		l.inDelivery = false
		l.dropAssembly()
		return nil
	}
	if int64(len(l.buf))+int64(len(payload)) > c.b.maxMessage {
		l.fail(err10(condMessageSizeExceeded, "message larger than max-message-size "+strconv.FormatInt(c.b.maxMessage, 10)))
		return nil
	}
	if t.More {
		// What is being assembled on a connection, over all its links,
		// is at most the max message size.
		n := int64(len(payload))
		if s.cn.assembling+n > c.b.maxMessage {
			l.fail(err10(condResourceLimitExceeded, "messages being assembled on the connection exceed "+strconv.FormatInt(c.b.maxMessage, 10)+" bytes"))
			return nil
		}
		l.counted += n
		s.cn.assembling += n
		c.b.mem.grow(n)
		l.buf = append(l.buf, payload...)
		if cap(l.buf) > 4<<20 && len(l.buf) < cap(l.buf)/4 {
			l.buf = append([]byte(nil), l.buf...)
		}
		return nil
	}
	l.inDelivery = false
	whole := payload
	if len(l.buf) > 0 {
		l.buf = append(l.buf, payload...)
		whole = l.buf
	}
	state := l.publish(whole)
	l.dropAssembly()
	if !l.settled {
		s.cn.settle10(s.channel, l.deliveryID, state)
	}
	// Credit is topped up once less than half the grant is left.
	if grant := c.b.grant10(); l.credit < grant/2 {
		l.credit = grant
		l.sendFlow(false)
	}
	return nil
}

// Outcomes (§3.4) as the broker sends them.
var (
	outcomeAccepted = amqp10.AppendComposite(nil, amqp10.DescriptorAccepted)
	outcomeReleased = amqp10.AppendComposite(nil, amqp10.DescriptorReleased)
)

func outcomeRejected(e *error10) []byte {
	return amqp10.AppendComposite(nil, amqp10.DescriptorRejected, appendError10(nil, e))
}

// Header section fields (§3.2.1).
const (
	headerDurable  = 0
	headerPriority = 1
	headerTTL      = 2
)

// publish stores and routes one whole message; it returns the outcome:
// accepted when every queue took it, released when it was routed nowhere
// (RabbitMQ 4's answer for an unroutable message), rejected when it could
// not be parsed or a queue refused it.
func (l *link10) publish(b []byte) []byte {
	c := l.s.cn.c
	if err := amqp10.ParseMessage(b, &l.s.cn.msg); err != nil {
		return outcomeRejected(err10(condDecodeError, "message: "+err.Error()))
	}
	pm := &l.s.cn.msg
	exchange, key := l.exchange, l.key
	if l.anonymous {
		var e *error10
		if exchange, key, e = l.addressTo(b); e != nil {
			return outcomeRejected(e)
		}
	} else if l.useSubject {
		key = l.property(b, propertiesSubject)
	}
	// The header is kept as it came, and the message-annotations with
	// x-exchange and x-routing-key set as RabbitMQ 4 sets them; the
	// delivery-annotations are for this hop only.
	var header, annotations *amqp10.Section
	for i := range pm.Sections {
		sec := &pm.Sections[i]
		if sec.Value.Start >= pm.BareStart {
			break
		}
		switch sec.Descriptor {
		case amqp10.DescriptorHeader:
			header = sec
		case amqp10.DescriptorMessageAnnotations:
			annotations = sec
		}
	}
	if c.b.cfg.VerifyChecksums {
		l.checkArrival(b, pm, exchange)
	}
	footer := l.checksumFooter(b, pm)
	size := len(b) - pm.BareStart + len(footer) + annotationsOverhead + len(exchange) + len(key)
	if header != nil {
		size += header.Value.Len()
	}
	if annotations != nil {
		size += annotations.Value.Len()
	}
	msg := queue.AllocMessage(size)
	msg.Format, msg.Exchange, msg.RoutingKey = queue.FormatAMQP10, exchange, key
	if header != nil {
		h := &l.s.cn.header
		if h.Set(b, header.Value) == nil {
			msg.Persistent, _ = h.Bool(b, headerDurable)
			if p, ok := h.Uint(b, headerPriority); ok {
				msg.Priority = uint8(min(p, 255))
			}
			if ttl, ok := h.Uint(b, headerTTL); ok {
				msg.Expiration = int64(min(ttl, queue.MaxExpiry))
			}
		}
	}
	buf := msg.Buffer()
	if header != nil {
		buf = append(buf, b[header.Value.Start:header.Value.End]...)
	}
	buf = appendAnnotations(buf, b, annotations, msg.Exchange, msg.RoutingKey)
	msg.Header = buf[:len(buf):len(buf)]
	msg.Body = append(append(buf[len(buf):], b[pm.BareStart:]...), footer...)
	msg.PublishedAt = latency.Now()
	c.b.stats.published.Add(1)
	// This path's reference, until the message is routed: the queues
	// take their own.
	c.b.mem.hold(msg)
	defer c.b.mem.release(msg)
	sc := &l.s.cn.scratch
	keys, err := route.RoutingKeys(unsafeBytes(msg.RoutingKey), nil, sc.keys[:0])
	sc.keys = keys
	if err != nil {
		return outcomeRejected(err10(condInvalidField, err.Error()))
	}
	// Headers exchanges route on the application-properties and the
	// client's annotations; only messages that have either pay for them.
	var headers amqp091.Table
	if msg.Exchange != "" && (annotations != nil || pm.BareStart < len(b) && hasAppProperties(pm)) {
		headers = l.s.cn.routingHeaders(b, pm, annotations)
	}
	qs, ok, _ := c.vh.route(msg.Exchange, keys, headers, sc)
	if !ok {
		return outcomeRejected(err10(condNotFound, "no "+rsExchange(msg.Exchange, c.vh.name)))
	}
	if len(qs) == 0 {
		return outcomeReleased
	}
	msg.Via = sc.via
	// Enqueued on the session's channel, so that the consumers' writers
	// are woken once at the end of the read batch (conn.wakeAfterBatch),
	// not once a message. 0-9-1's publisher flow control is not 1.0's
	// (link credit is): the queues it would wait for are forgotten.
	refused := false
	for _, q := range qs {
		if !q.enqueue(msg, l.s.ch) {
			refused = true
		}
	}
	clear(c.flowQueues)
	c.flowQueues = c.flowQueues[:0]
	if refused {
		return outcomeRejected(err10(condResourceLimitExceeded, "a queue refused the message (x-overflow reject-publish)"))
	}
	return outcomeAccepted
}

// Properties section fields (§3.2.4).
const (
	propertiesTo      = 2
	propertiesSubject = 3
)

// addressTo returns the exchange and routing key of a message sent to the
// anonymous terminus from its properties.to, checked as an attach to that
// address would be.
func (l *link10) addressTo(b []byte) (exchange, key string, _ *error10) {
	c := l.s.cn.c
	to := l.property(b, propertiesTo)
	x, key, isQueue, ok := parseAddress(to)
	if !ok {
		return "", "", err10(condInvalidField, "properties.to '"+to+"' is not in RabbitMQ's address format v2")
	}
	if !isQueue {
		v := c.vh
		v.mu.RLock()
		ex, found := v.exchanges[x]
		v.mu.RUnlock()
		if !found {
			return "", "", err10(condNotFound, "no "+rsExchange(x, v.name))
		}
		if ex.internal || x == "amq.default" {
			return "", "", err10(condUnauthorized, "cannot publish to "+rsExchange(x, v.name))
		}
		if key == "" {
			key = l.property(b, propertiesSubject)
		}
	}
	if e := c.check(permWrite, "exchange", x); e != nil {
		return "", "", amqpErrorTo10(e)
	}
	return x, key, nil
}

// property returns a string field of the message's properties section
// ("" when absent).
func (l *link10) property(b []byte, i int) string { return properties10(b, &l.s.cn.msg, i) }

// disposition handles the client's settlement of deliveries (§2.7.6):
// accepted acknowledges; rejected dead-letters (or drops) as
// basic.reject without requeue does; released requeues; modified
// requeues as redelivered unless undeliverable-here, which dead-letters
// as RabbitMQ 4 does.
func (s *session10) disposition(b []byte, comp *amqp10.Composite) error {
	role, _ := comp.Bool(b, 0)
	if role != roleReceiver {
		return nil // the client settling its own transfers: nothing to do
	}
	first, ok := comp.Uint(b, 1)
	if !ok {
		return err10(condInvalidField, "disposition without first")
	}
	last, ok := comp.Uint(b, 2)
	if !ok {
		last = first
	}
	kind := settleRequeue
	if f, ok := comp.Field(4); ok {
		var st amqp10.Composite
		if st.Set(b, *f) == nil {
			switch st.Descriptor {
			case amqp10.DescriptorAccepted:
				kind = settleAck
			case amqp10.DescriptorRejected:
				kind = settleDead
			case amqp10.DescriptorReleased:
				kind = settleRequeue
			case amqp10.DescriptorModified:
				failed, _ := st.Bool(b, 0)
				if u, _ := st.Bool(b, 1); u {
					kind = settleDead
				} else if failed {
					kind = settleFailed
				}
			}
		}
	}
	ch := s.ch
	ch.mu.Lock()
	ds := ch.settling[:0]
	live := ch.unacked[ch.unackedHead:]
	i := sort.Search(len(live), func(i int) bool { return live[i].tag >= first })
	for ; i < len(live) && live[i].tag <= last; i++ {
		if !live[i].done {
			ds = append(ds, live[i])
			ch.markDone(&live[i])
		}
	}
	ch.compact()
	ch.mu.Unlock()
	if kind == settleAck {
		s.cn.c.b.stats.acked.Add(uint64(len(ds)))
		observeAcks(ds)
	}
	settleGroups(ds, kind, &ch.entries)
	clear(ds)
	ch.settling = ds[:0]
	return nil
}

// appendContent10 writes an AMQP 1.0 message to a 0-9-1 consumer (or
// basic.get), converted as RabbitMQ 4 converts it (see to091).
func appendContent10(dst []byte, channel uint16, m *queue.Message, frameMax uint32) []byte {
	header, body := to091(m)
	dst = amqp091.AppendFrame(dst, amqp091.FrameHeader, channel, header)
	return amqp091.AppendBodyFrames(dst, channel, body, int(frameMax))
}

// Header section fields after headerTTL (§3.2.1).
const (
	headerFirstAcquirer = 3
	headerDeliveryCount = 4
)

// redeliveryHeader returns the stored header and message-annotations of a
// message delivered again, its header section rewritten (the header is
// the broker's to write; the bare message is not touched): first-acquirer
// false and delivery-count raised by the failed deliveries. Durable,
// priority and ttl keep their encoding.
func redeliveryHeader(stored []byte, failures uint32) []byte {
	var comp amqp10.Composite
	var rest []byte
	var fields [3][]byte
	var count uint64
	if amqp10.ScanComposite(stored, 0, &comp) == nil && comp.Descriptor == amqp10.DescriptorHeader {
		for i := range fields {
			if i < comp.N {
				fields[i] = stored[comp.Fields[i].Start:comp.Fields[i].End]
			}
		}
		count, _ = comp.Uint(stored, headerDeliveryCount)
		rest = stored[comp.List.End:]
	} else {
		rest = stored
	}
	for i := range fields {
		if fields[i] == nil {
			fields[i] = amqp10.AppendNull(nil)
		}
	}
	count = min(count+uint64(failures), 1<<32-1)
	out := amqp10.AppendComposite(nil, amqp10.DescriptorHeader, fields[0], fields[1], fields[2],
		amqp10.AppendBool(nil, false), amqp10.AppendUint(nil, uint32(count)))
	return append(out, rest...)
}

// annotationsOverhead bounds what appendAnnotations adds to the client's
// annotations, besides the exchange and routing key themselves.
const annotationsOverhead = 3 + 9 + 2 + len("x-exchange") + 5 + 2 + len("x-routing-key") + 5

// appendAnnotations appends the message-annotations section the broker
// stores: the client's annotations (each entry's bytes as they came) but
// x-exchange and x-routing-key, then those two as the broker routed the
// message (utf8 strings, as RabbitMQ 4 writes them).
func appendAnnotations(dst, b []byte, client *amqp10.Section, exchange, key string) []byte {
	start := len(dst)
	// A map32 header, made a map8 below when the map is small.
	dst = append(dst, 0x00, byte(amqp10.CodeSmallUlong), byte(amqp10.DescriptorMessageAnnotations), byte(amqp10.CodeMap32), 0, 0, 0, 0, 0, 0, 0, 0)
	items := len(dst)
	count := 4
	if client != nil {
		it := mapItems(b, client.Value)
		for it.Next() {
			k := it.Value
			if !it.Next() {
				break
			}
			v := it.Value
			if name, ok := k.Bytes(b); ok && (string(name) == "x-exchange" || string(name) == "x-routing-key") {
				continue
			}
			dst = append(dst, b[k.Start:k.End]...)
			dst = append(dst, b[v.Start:v.End]...)
			count += 2
		}
	}
	dst = amqp10.AppendSymbol(dst, "x-exchange")
	dst = amqp10.AppendString(dst, exchange)
	dst = amqp10.AppendSymbol(dst, "x-routing-key")
	dst = amqp10.AppendString(dst, key)
	n := len(dst) - items
	if n+1 < 256 && count < 256 {
		dst[start+3], dst[start+4], dst[start+5] = byte(amqp10.CodeMap8), byte(n+1), byte(count)
		copy(dst[start+6:], dst[items:])
		return dst[:start+6+n]
	}
	binary.BigEndian.PutUint32(dst[start+4:], uint32(n+4))
	binary.BigEndian.PutUint32(dst[start+8:], uint32(count))
	return dst
}
