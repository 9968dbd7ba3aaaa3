package broker

import (
	"encoding/binary"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// channel is one channel of a connection. The reader goroutine owns the
// publishing side (content assembly, confirms, transactions); mu guards
// what queues delivering on other goroutines touch: delivery tags, the
// unacked deliveries, prefetch counters and the consumers.
type channel struct {
	c       *conn
	id      uint16
	closing bool // the broker sent channel.close and awaits close-ok

	// Publishing (reader goroutine only).
	pub publishing
	// pubHeader is the content header of pub, decoded once from the
	// message's copy of it when it arrived.
	pubHeader  amqp091.ContentHeader
	confirm    bool
	tx         bool
	nextPubSeq uint64
	// Confirms not yet sent: acks up to ackUpTo coalesce into one
	// basic.ack with multiple set when more than one is pending.
	confirmPending bool
	pendingNack    bool
	ackFrom        uint64
	ackUpTo        uint64
	txPubs         []txPublish
	txAcks         []txAck
	scratch        routeScratch
	// lastExchange and lastKey keep the names of the previous publish:
	// a publisher mostly repeats them, and the strings are then shared.
	lastExchange, lastKey interned
	// settling and entries are the ack path's scratch (reader goroutine
	// only), so acknowledging allocates nothing.
	settling []delivery
	entries  []queue.Entry

	mu             sync.Mutex
	nextTag        uint64
	unacked        []delivery // by tag; done entries are skipped
	unackedHead    int
	unackedLive    int
	prefetch       uint16 // for consumers created from now on
	globalPrefetch uint16
	consumers      map[string]*consumer
	replyTo        *consumer // direct reply-to
	replyToken     string
}

// publishing is a message being assembled from its frames.
type publishing struct {
	stage      int // 0 idle, 1 awaiting the content header, 2 body
	exchange   string
	routingKey string
	mandatory  bool
	immediate  bool
	header     []byte
	body       []byte
	bodySize   uint64
	// msg is the pooled record header and body are stored in, not yet
	// held by anyone: complete takes it, dropContent frees it.
	msg *queue.Message
	// other is a content method other than basic.publish (a client
	// sending basic.deliver, say): assembled, then refused.
	other             bool
	classID, methodID uint16
	// overrun: a body frame went past the header's body-size. RabbitMQ's
	// assembler then never completes the message, and so neither do we.
	overrun bool
	// counted is what the body frames so far added to the memory
	// accounting; dropContent or complete takes it back.
	counted int64
}

// dropContent forgets the message being assembled, and its bytes.
func (ch *channel) dropContent() {
	if n := ch.pub.counted; n != 0 {
		ch.c.b.mem.shrink(n)
	}
	if ch.pub.msg != nil {
		ch.pub.msg.Free()
	}
	ch.pub = publishing{}
}

type txPublish struct {
	p   publishing
	msg *queue.Message
}

type txAck struct {
	kind     uint8 // 0 ack, 1 nack, 2 reject
	tag      uint64
	multiple bool
	requeue  bool
}

// delivery is one unacknowledged delivery.
type delivery struct {
	at   int64 // when delivered, on latency.Now's clock
	tag  uint64
	q    *queueState
	e    queue.Entry
	cons *consumer // nil for basic.get
	done bool
}

// consumer is one basic.consume.
type consumer struct {
	tag       string
	tagBytes  []byte
	ch        *channel
	q         *queueState
	noAck     bool
	exclusive bool
	priority  int
	prefetch  uint16
	unacked   int // under ch.mu
	args      amqp091.Table
	// link is set for an AMQP 1.0 receiver link (the client consumes):
	// ch is then its session's channel, and the link sends the
	// transfers and keeps the link credit.
	link *link10
}

// hasCredit reports whether c may be given a message now: its own and its
// channel's prefetch, and its connection's outgoing buffer (q.mu held).
func (c *consumer) hasCredit() bool {
	if c.link != nil {
		return c.link.hasCredit()
	}
	ch := c.ch
	ch.mu.Lock()
	ok := !ch.closing && (c.noAck || ((c.prefetch == 0 || c.unacked < int(c.prefetch)) &&
		(ch.globalPrefetch == 0 || ch.unackedLive < int(ch.globalPrefetch))))
	ch.mu.Unlock()
	if !ok {
		return false
	}
	return ch.c.roomToWrite()
}

// deliver writes basic.deliver with the message and records it as unacked
// (q.mu held).
func (ch *channel) deliver(cons *consumer, q *queueState, e queue.Entry) {
	now := observeDeliver(q, e)
	ch.mu.Lock()
	ch.nextTag++
	tag := ch.nextTag
	if !cons.noAck {
		ch.unacked = append(ch.unacked, delivery{at: now, tag: tag, q: q, e: e, cons: cons})
		ch.unackedLive++
		cons.unacked++
	}
	c := ch.c
	c.wmu.Lock()
	if !c.wclosed {
		c.out = appendDeliver(c.out, ch.id, cons.tagBytes, tag, e.Redelivered, e.Msg.Exchange, e.Msg.RoutingKey)
		c.out = appendContent(c.out, ch.id, e.Msg, c.frameMax)
	}
	c.wmu.Unlock()
	ch.mu.Unlock()
	c.b.stats.delivered.Add(1)
	if q != nil && q.waker != nil {
		q.waker.wakeAfterBatch(c)
		return
	}
	c.signal()
}

// appendDeliver encodes a basic.deliver frame without building a method
// value: this is the broker's hottest frame.
func appendDeliver(dst []byte, channel uint16, ctag []byte, tag uint64, redelivered bool, exchange, rk string) []byte {
	start := len(dst)
	dst = append(dst, byte(amqp091.FrameMethod), byte(channel>>8), byte(channel), 0, 0, 0, 0, 0, 60, 0, 60)
	dst = append(dst, byte(len(ctag)))
	dst = append(dst, ctag...)
	dst = binary.BigEndian.AppendUint64(dst, tag)
	var bits byte
	if redelivered {
		bits = 1
	}
	dst = append(dst, bits, byte(len(exchange)))
	dst = append(dst, exchange...)
	dst = append(dst, byte(len(rk)))
	dst = append(dst, rk...)
	binary.BigEndian.PutUint32(dst[start+3:], uint32(len(dst)-start-amqp091.FrameHeaderSize))
	return append(dst, amqp091.FrameEnd)
}

// appendContent writes a message's content header (the publisher's bytes)
// and body frames.
func appendContent(dst []byte, channel uint16, m *queue.Message, frameMax uint32) []byte {
	m.Held()
	if m.Format != queue.FormatAMQP091 {
		return appendContent10(dst, channel, m, frameMax)
	}
	dst = amqp091.AppendFrame(dst, amqp091.FrameHeader, channel, m.Header)
	return amqp091.AppendBodyFrames(dst, channel, m.Body, int(frameMax))
}

// channelFrame routes a frame to its channel.
func (c *conn) channelFrame(id uint16, m amqp091.Method, f amqp091.Frame) error {
	// A publish is three frames on one channel: the last channel saves
	// the map look-up for most frames.
	ch := c.lastCh
	if ch == nil || ch.id != id {
		ch = c.channels[id]
		c.lastCh = ch
	}
	if m != nil {
		if _, ok := m.(*amqp091.ChannelOpen); ok {
			if ch != nil {
				return withIDs(errorf(504, "second 'channel.open' seen"), m)
			}
			if c.b.cfg.MaxChannels > 0 && len(c.channels) >= c.b.cfg.MaxChannels {
				return withIDs(errorf(530, "number of channels opened ("+itoa(len(c.channels))+") has reached the negotiated channel_max ("+itoa(c.b.cfg.MaxChannels)+")"), m)
			}
			ch = &channel{c: c, id: id, consumers: make(map[string]*consumer)}
			c.mu.Lock()
			c.channels[id] = ch
			c.mu.Unlock()
			c.send(func(out []byte) []byte {
				return amqp091.AppendMethodFrame(out, id, &amqp091.ChannelOpenOk{})
			})
			return nil
		}
	}
	if ch == nil {
		if m != nil {
			return withIDs(errorf(504, "expected 'channel.open'"), m)
		}
		return errorf(504, "expected 'channel.open'")
	}
	if ch.closing {
		switch m.(type) {
		case *amqp091.ChannelCloseOk:
			c.removeChannel(ch)
		case *amqp091.ChannelClose:
			c.send(func(out []byte) []byte {
				return amqp091.AppendMethodFrame(out, id, &amqp091.ChannelCloseOk{})
			})
		}
		return nil
	}
	var err *amqpError
	if m == nil {
		err = ch.content(f)
	} else {
		if ch.pub.stage != 0 {
			return ch.unexpectedFrame()
		}
		err = ch.method(m)
		if err != nil && err.classID == 0 && err.methodID == 0 {
			err.classID, err.methodID = m.IDs()
		}
	}
	if err == nil {
		return nil
	}
	if err.hard() {
		return err
	}
	ch.softError(err)
	return nil
}

func withIDs(e *amqpError, m amqp091.Method) *amqpError {
	e.classID, e.methodID = m.IDs()
	return e
}

func (ch *channel) unexpectedFrame() *amqpError {
	var e *amqpError
	if ch.pub.stage == 1 {
		e = errorf(505, "expected content header for class 60, got non content header frame instead")
	} else {
		e = errorf(505, "expected content body, got non content body frame instead")
	}
	e.classID, e.methodID = 60, 40
	return e
}

// softError closes the channel as RabbitMQ does on a soft error: close
// sent, the channel's deliveries requeued and consumers cancelled at once,
// and the client's frames dropped until close-ok.
func (ch *channel) softError(e *amqpError) {
	ch.c.logf("channel ", itoa(int(ch.id)), ": ", itoa(int(e.code)), " ", e.text)
	ch.closing = true
	ch.dropContent()
	ch.c.send(func(out []byte) []byte {
		return amqp091.AppendMethodFrame(out, ch.id, &amqp091.ChannelClose{
			ReplyCode: e.code, ReplyText: replyText(e.text), ClassID: e.classID, MethodID: e.methodID})
	})
	ch.release()
}

func (c *conn) removeChannel(ch *channel) {
	ch.release()
	c.mu.Lock()
	delete(c.channels, ch.id)
	c.mu.Unlock()
	if c.lastCh == ch {
		c.lastCh = nil
	}
}

// release cancels the channel's consumers and requeues its unacked
// deliveries (a closed channel, or its connection gone).
func (ch *channel) release() {
	ch.mu.Lock()
	ch.closing = true
	cons := make([]*consumer, 0, len(ch.consumers))
	for _, c := range ch.consumers {
		cons = append(cons, c)
	}
	clear(ch.consumers)
	if ch.replyTo != nil {
		ch.c.b.replyTo.Delete(ch.replyToken)
		ch.replyTo = nil
	}
	pending := ch.takeUnacked(nil, allTags)
	ch.mu.Unlock()
	for _, c := range cons {
		ch.detachConsumer(c)
	}
	var es []queue.Entry
	settleGroups(pending, settleRequeue, &es)
	ch.dropContent()
	ch.dropTx()
}

// dropTx forgets an open transaction's publishes and acks.
func (ch *channel) dropTx() {
	for i := range ch.txPubs {
		ch.c.b.mem.release(ch.txPubs[i].msg)
	}
	clear(ch.txPubs)
	ch.txPubs, ch.txAcks = ch.txPubs[:0], ch.txAcks[:0]
}

// detachConsumer removes c from its queue, deleting an auto-delete queue
// that lost its last consumer.
func (ch *channel) detachConsumer(c *consumer) {
	q := c.q
	if q == nil {
		return
	}
	q.mu.Lock()
	del := q.removeConsumer(c)
	q.unlock()
	if del {
		q.vh.deleteQueueNow(q)
	}
}

// serverCancel tells the client its consumer is gone (its queue was
// deleted), as RabbitMQ does for clients that announce
// consumer_cancel_notify.
func (ch *channel) serverCancel(c *consumer) {
	ch.mu.Lock()
	if ch.consumers[c.tag] != c {
		ch.mu.Unlock()
		return
	}
	delete(ch.consumers, c.tag)
	ch.mu.Unlock()
	if c.link != nil {
		c.link.queueDeleted()
		return
	}
	if ch.c.cancelNotify {
		ch.c.send(func(out []byte) []byte {
			return amqp091.AppendMethodFrame(out, ch.id, &amqp091.BasicCancel{ConsumerTag: c.tagBytes, NoWait: true})
		})
	}
}

type settleKind uint8

const (
	settleAck settleKind = iota
	settleRequeue
	settleDead
	// settleFailed requeues counting a failed delivery (AMQP 1.0's
	// modified with delivery-failed).
	settleFailed
)

// settleGroups hands settled deliveries back to their queues, one call per
// queue, in tag order. The common case, every delivery from one queue,
// builds its entries in scratch and allocates nothing.
func settleGroups(ds []delivery, kind settleKind, scratch *[]queue.Entry) {
	if len(ds) == 0 {
		return
	}
	one := true
	for _, d := range ds[1:] {
		if d.q != ds[0].q {
			one = false
			break
		}
	}
	if one {
		es := (*scratch)[:0]
		for _, d := range ds {
			es = append(es, d.e)
		}
		settleQueue(ds[0].q, es, kind)
		clear(es) // drop the messages' references until the next use
		*scratch = es[:0]
		return
	}
	byQueue := make(map[*queueState][]queue.Entry, 2)
	var order []*queueState
	for _, d := range ds {
		if _, ok := byQueue[d.q]; !ok {
			order = append(order, d.q)
		}
		byQueue[d.q] = append(byQueue[d.q], d.e)
	}
	for _, q := range order {
		settleQueue(q, byQueue[q], kind)
	}
}

func settleQueue(q *queueState, es []queue.Entry, kind settleKind) {
	switch kind {
	case settleAck:
		q.settle(es, nil, nil)
	case settleRequeue:
		for i := range es {
			es[i].Redelivered = true
		}
		q.settle(nil, es, nil)
	case settleDead:
		q.settle(nil, nil, es)
	case settleFailed:
		for i := range es {
			es[i].Redelivered = true
			es[i].Failures++
		}
		q.settle(nil, es, nil)
	}
}

// allTags selects every unacked delivery in takeUnacked.
const allTags = ^uint64(0)

// takeUnacked moves the live unacked deliveries with tags up to upTo to
// dst, in tag order (ch.mu held). Tags only grow, so it stops at the first
// tag past upTo.
func (ch *channel) takeUnacked(dst []delivery, upTo uint64) []delivery {
	for i := ch.unackedHead; i < len(ch.unacked); i++ {
		d := &ch.unacked[i]
		if d.tag > upTo {
			break
		}
		if d.done {
			continue
		}
		dst = append(dst, *d)
		ch.markDone(d)
	}
	ch.compact()
	return dst
}

func (ch *channel) markDone(d *delivery) {
	d.done = true
	ch.unackedLive--
	if d.cons != nil {
		d.cons.unacked--
	}
}

// compact drops settled entries from the front, and rebuilds the slice
// when most of it is settled.
func (ch *channel) compact() {
	for ch.unackedHead < len(ch.unacked) && ch.unacked[ch.unackedHead].done {
		ch.unacked[ch.unackedHead] = delivery{}
		ch.unackedHead++
	}
	if ch.unackedHead == len(ch.unacked) {
		ch.unacked = ch.unacked[:0]
		ch.unackedHead = 0
		return
	}
	if live := len(ch.unacked) - ch.unackedHead; ch.unackedHead > 1024 || (live > 64 && ch.unackedLive < live/4) {
		n := 0
		for i := ch.unackedHead; i < len(ch.unacked); i++ {
			if !ch.unacked[i].done {
				ch.unacked[n] = ch.unacked[i]
				n++
			}
		}
		clear(ch.unacked[n:])
		ch.unacked = ch.unacked[:n]
		ch.unackedHead = 0
	}
}

// find returns the live unacked delivery with tag, or nil (ch.mu held).
func (ch *channel) find(tag uint64) *delivery {
	live := ch.unacked[ch.unackedHead:]
	i := sort.Search(len(live), func(i int) bool { return live[i].tag >= tag })
	if i < len(live) && live[i].tag == tag && !live[i].done {
		return &live[i]
	}
	return nil
}

// settle implements basic.ack, basic.nack and basic.reject.
func (ch *channel) settle(kind uint8, tag uint64, multiple, requeue bool) *amqpError {
	ch.mu.Lock()
	ds := ch.settling[:0]
	if multiple {
		if tag != 0 && ch.find(tag) == nil {
			ch.mu.Unlock()
			return errorf(406, "unknown delivery tag "+strconv.FormatUint(tag, 10))
		}
		upTo := tag
		if tag == 0 {
			upTo = allTags
		}
		ds = ch.takeUnacked(ds, upTo)
	} else {
		d := ch.find(tag)
		if d == nil {
			ch.mu.Unlock()
			return errorf(406, "unknown delivery tag "+strconv.FormatUint(tag, 10))
		}
		ds = append(ds, *d)
		ch.markDone(d)
		ch.compact()
	}
	var more []*queueState
	if ch.globalPrefetch != 0 {
		// Room on the channel is room for every queue it consumes from.
		more = ch.consumerQueues()
	}
	ch.mu.Unlock()
	switch {
	case kind == 0:
		ch.c.b.stats.acked.Add(uint64(len(ds)))
		observeAcks(ds)
		settleGroups(ds, settleAck, &ch.entries)
	case requeue:
		settleGroups(ds, settleRequeue, &ch.entries)
	default:
		settleGroups(ds, settleDead, &ch.entries)
	}
	clear(ds)
	ch.settling = ds[:0]
	redispatch(more)
	return nil
}

// sendMethod writes one method frame on the channel.
func (ch *channel) sendMethod(m amqp091.Method) {
	ch.c.send(func(out []byte) []byte { return amqp091.AppendMethodFrame(out, ch.id, m) })
}

// check verifies a permission for the connection's user.
func (c *conn) check(p perm, kind, name string) *amqpError {
	if c.admin {
		return nil
	}
	return c.b.checkPerm(c.user, c.vh.name, p, kind, name)
}

// checkPublish is the write permission check of a publish, remembered for
// the last exchange allowed until the user store changes (RabbitMQ's
// channels keep such a cache too): a stream of publishes to one exchange
// is checked once.
func (c *conn) checkPublish(exchange string) *amqpError {
	gen := c.b.users.Generation()
	if c.pubAllowedGen == gen && c.pubAllowed == exchange && c.pubAllowedSet {
		return nil
	}
	if err := c.check(permWrite, "exchange", exchange); err != nil {
		return err
	}
	c.pubAllowed, c.pubAllowedGen, c.pubAllowedSet = strings.Clone(exchange), gen, true
	return nil
}

// method handles a method frame.
func (ch *channel) method(m amqp091.Method) *amqpError {
	c := ch.c
	v := c.vh
	switch m := m.(type) {
	case *amqp091.ChannelClose:
		c.removeChannel(ch)
		ch.sendMethod(&amqp091.ChannelCloseOk{})
		return nil
	case *amqp091.ChannelCloseOk:
		return nil
	case *amqp091.ChannelFlow:
		if !m.Active {
			return errorf(540, "active=false")
		}
		ch.sendMethod(&amqp091.ChannelFlowOk{Active: true})
		return nil
	case *amqp091.ChannelFlowOk:
		return nil

	case *amqp091.ExchangeDeclare:
		if e := v.declareExchange(c, m); e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.ExchangeDeclareOk{})
		}
		return nil
	case *amqp091.ExchangeDelete:
		if e := v.deleteExchange(c, m); e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.ExchangeDeleteOk{})
		}
		return nil
	case *amqp091.ExchangeBind:
		if e := v.bind(c, string(m.Source), route.Dest{Kind: route.Exchange, Name: string(m.Destination)}, string(m.RoutingKey), m.Arguments); e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.ExchangeBindOk{})
		}
		return nil
	case *amqp091.ExchangeUnbind:
		if e := v.unbind(c, string(m.Source), route.Dest{Kind: route.Exchange, Name: string(m.Destination)}, string(m.RoutingKey), m.Arguments); e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.ExchangeUnbindOk{})
		}
		return nil

	case *amqp091.QueueDeclare:
		name, msgs, cons, e := v.declareQueue(c, m)
		if e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.QueueDeclareOk{Queue: []byte(name), MessageCount: uint32(msgs), ConsumerCount: uint32(cons)})
		}
		return nil
	case *amqp091.QueueBind:
		if e := v.bind(c, string(m.Exchange), route.Dest{Kind: route.Queue, Name: string(m.Queue)}, string(m.RoutingKey), m.Arguments); e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.QueueBindOk{})
		}
		return nil
	case *amqp091.QueueUnbind:
		if e := v.unbind(c, string(m.Exchange), route.Dest{Kind: route.Queue, Name: string(m.Queue)}, string(m.RoutingKey), m.Arguments); e != nil {
			return e
		}
		ch.sendMethod(&amqp091.QueueUnbindOk{})
		return nil
	case *amqp091.QueuePurge:
		n, e := v.purgeQueue(c, string(m.Queue))
		if e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.QueuePurgeOk{MessageCount: uint32(n)})
		}
		return nil
	case *amqp091.QueueDelete:
		n, e := v.deleteQueue(c, m)
		if e != nil {
			return e
		}
		if !m.NoWait {
			ch.sendMethod(&amqp091.QueueDeleteOk{MessageCount: uint32(n)})
		}
		return nil

	case *amqp091.BasicQos:
		return ch.qos(m)
	case *amqp091.BasicConsume:
		return ch.consume(m)
	case *amqp091.BasicCancel:
		ch.cancel(string(m.ConsumerTag))
		if !m.NoWait {
			ch.sendMethod(&amqp091.BasicCancelOk{ConsumerTag: m.ConsumerTag})
		}
		return nil
	case *amqp091.BasicPublish:
		ch.c.b.mem.waitUnblocked(ch.c)
		ch.pub = publishing{
			stage: 1, exchange: ch.lastExchange.intern(m.Exchange), routingKey: ch.lastKey.intern(m.RoutingKey),
			mandatory: m.Mandatory, immediate: m.Immediate,
		}
		return nil
	case *amqp091.BasicGet:
		return ch.get(m)
	case *amqp091.BasicAck:
		if ch.tx {
			ch.txAcks = append(ch.txAcks, txAck{kind: 0, tag: m.DeliveryTag, multiple: m.Multiple})
			return ch.checkTags(m.DeliveryTag, m.Multiple)
		}
		return ch.settle(0, m.DeliveryTag, m.Multiple, false)
	case *amqp091.BasicNack:
		if ch.tx {
			ch.txAcks = append(ch.txAcks, txAck{kind: 1, tag: m.DeliveryTag, multiple: m.Multiple, requeue: m.Requeue})
			return ch.checkTags(m.DeliveryTag, m.Multiple)
		}
		return ch.settle(1, m.DeliveryTag, m.Multiple, m.Requeue)
	case *amqp091.BasicReject:
		if ch.tx {
			ch.txAcks = append(ch.txAcks, txAck{kind: 2, tag: m.DeliveryTag, requeue: m.Requeue})
			return ch.checkTags(m.DeliveryTag, false)
		}
		return ch.settle(2, m.DeliveryTag, false, m.Requeue)
	case *amqp091.BasicRecover:
		if !m.Requeue {
			return errorf(540, "requeue=false")
		}
		ch.recover()
		ch.sendMethod(&amqp091.BasicRecoverOk{})
		return nil
	case *amqp091.BasicRecoverAsync:
		if !m.Requeue {
			return errorf(540, "requeue=false")
		}
		ch.recover()
		return nil

	case *amqp091.ConfirmSelect:
		if ch.tx {
			return errorf(406, "cannot switch from tx to confirm mode")
		}
		if !ch.confirm {
			ch.confirm = true
			ch.nextPubSeq = 1
		}
		if !m.Nowait {
			ch.sendMethod(&amqp091.ConfirmSelectOk{})
		}
		return nil
	case *amqp091.TxSelect:
		if ch.confirm {
			return errorf(406, "cannot switch from confirm to tx mode")
		}
		ch.tx = true
		ch.sendMethod(&amqp091.TxSelectOk{})
		return nil
	case *amqp091.TxCommit:
		if !ch.tx {
			return errorf(406, "channel is not transactional")
		}
		if e := ch.commit(); e != nil {
			return e
		}
		ch.sendMethod(&amqp091.TxCommitOk{})
		return nil
	case *amqp091.TxRollback:
		if !ch.tx {
			return errorf(406, "channel is not transactional")
		}
		ch.dropTx()
		ch.sendMethod(&amqp091.TxRollbackOk{})
		return nil
	}
	if m.HasContent() {
		// RabbitMQ assembles the content of any content method first.
		ch.pub = publishing{stage: 1, other: true}
		ch.pub.classID, ch.pub.methodID = m.IDs()
		return nil
	}
	return errorf(503, "unimplemented method")
}

// checkTags validates a transactional ack's tag at once, as RabbitMQ does.
func (ch *channel) checkTags(tag uint64, multiple bool) *amqpError {
	if multiple && tag == 0 {
		return nil
	}
	ch.mu.Lock()
	ok := ch.find(tag) != nil
	ch.mu.Unlock()
	if !ok {
		return errorf(406, "unknown delivery tag "+strconv.FormatUint(tag, 10))
	}
	return nil
}

func (ch *channel) qos(m *amqp091.BasicQos) *amqpError {
	if m.PrefetchSize != 0 {
		return errorf(540, "prefetch_size!=0 ("+strconv.FormatUint(uint64(m.PrefetchSize), 10)+")")
	}
	ch.mu.Lock()
	if m.Global {
		ch.globalPrefetch = m.PrefetchCount
	} else {
		ch.prefetch = m.PrefetchCount
	}
	qs := ch.consumerQueues()
	ch.mu.Unlock()
	ch.sendMethod(&amqp091.BasicQosOk{})
	redispatch(qs)
	return nil
}

func (ch *channel) consumerQueues() []*queueState {
	var qs []*queueState
	for _, c := range ch.consumers {
		if c.q != nil && !containsQueue(qs, c.q) {
			qs = append(qs, c.q)
		}
	}
	return qs
}

func redispatch(qs []*queueState) {
	for _, q := range qs {
		q.mu.Lock()
		q.dispatch()
		q.unlock()
	}
}

const replyToQueue = "amq.rabbitmq.reply-to"

func (ch *channel) consume(m *amqp091.BasicConsume) *amqpError {
	c := ch.c
	qname := string(m.Queue)
	tag := string(m.ConsumerTag)
	if qname == replyToQueue {
		return ch.consumeReplyTo(m)
	}
	if err := c.check(permRead, "queue", qname); err != nil {
		return err
	}
	q, e := c.vh.lookupQueue(c, qname)
	if e != nil {
		return e
	}
	ch.mu.Lock()
	if tag == "" {
		tag = generatedName("amq.ctag-")
	}
	if _, dup := ch.consumers[tag]; dup {
		ch.mu.Unlock()
		return errorf(530, "attempt to reuse consumer tag '"+tag+"'")
	}
	ch.mu.Unlock()
	cons := &consumer{tag: tag, tagBytes: []byte(tag), ch: ch, q: q, noAck: m.NoAck, exclusive: m.Exclusive, args: cloneTable(m.Arguments)}
	if p, ok := m.Arguments.Get("x-priority"); ok {
		if typeClass(p.Type) != "int" {
			return errorf(406, "invalid arg 'x-priority' for "+rsQueue(qname, c.vh.name)+": {unacceptable_type,"+p.Type.RabbitName()+"}")
		}
		cons.priority = int(p.Int())
	}
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return errNoQueue(qname, c.vh.name)
	}
	for _, o := range q.consumers {
		if o.exclusive || m.Exclusive {
			q.mu.Unlock()
			return errorf(403, rsQueue(qname, c.vh.name)+" in exclusive use")
		}
	}
	ch.mu.Lock()
	cons.prefetch = ch.prefetch
	ch.consumers[tag] = cons
	ch.mu.Unlock()
	if !m.NoWait {
		// consume-ok goes out before the first delivery.
		ch.sendMethod(&amqp091.BasicConsumeOk{ConsumerTag: cons.tagBytes})
	}
	q.addConsumer(cons)
	q.unlock()
	return nil
}

func (ch *channel) consumeReplyTo(m *amqp091.BasicConsume) *amqpError {
	if !m.NoAck {
		return errorf(406, "reply consumer cannot acknowledge")
	}
	ch.mu.Lock()
	if ch.replyTo != nil {
		ch.mu.Unlock()
		return errorf(406, "reply consumer already set")
	}
	tag := string(m.ConsumerTag)
	if tag == "" {
		tag = generatedName("amq.ctag-")
	}
	cons := &consumer{tag: tag, tagBytes: []byte(tag), ch: ch, noAck: true}
	ch.replyTo = cons
	ch.replyToken = generatedName("")
	ch.consumers[tag] = cons
	ch.mu.Unlock()
	ch.c.b.replyTo.Store(ch.replyToken, ch)
	if !m.NoWait {
		ch.sendMethod(&amqp091.BasicConsumeOk{ConsumerTag: cons.tagBytes})
	}
	return nil
}

// cancel ends a consumer; an unknown tag is no error.
func (ch *channel) cancel(tag string) {
	ch.mu.Lock()
	cons, ok := ch.consumers[tag]
	if ok {
		delete(ch.consumers, tag)
		if cons == ch.replyTo {
			ch.c.b.replyTo.Delete(ch.replyToken)
			ch.replyTo = nil
		}
	}
	ch.mu.Unlock()
	if ok {
		ch.detachConsumer(cons)
	}
}

func (ch *channel) get(m *amqp091.BasicGet) *amqpError {
	c := ch.c
	qname := string(m.Queue)
	if err := c.check(permRead, "queue", qname); err != nil {
		return err
	}
	q, e := c.vh.lookupQueue(c, qname)
	if e != nil {
		return e
	}
	q.mu.Lock()
	q.touch()
	e2, ok, exp := q.store.Pop(q.now(), q.scratch[:0])
	q.collect(exp, queue.Expired)
	q.scratch = exp[:0]
	if !ok {
		q.unlock()
		ch.sendMethod(&amqp091.BasicGetEmpty{})
		return nil
	}
	q.delivered++
	if e2.Redelivered {
		q.redelivered++
	}
	if !m.NoAck {
		q.unacked++
	}
	left := q.store.Len()
	now := observeDeliver(q, e2)
	ch.mu.Lock()
	ch.nextTag++
	tag := ch.nextTag
	if !m.NoAck {
		ch.unacked = append(ch.unacked, delivery{at: now, tag: tag, q: q, e: e2})
		ch.unackedLive++
	}
	ch.mu.Unlock()
	msg := e2.Msg
	c.send(func(out []byte) []byte {
		out = amqp091.AppendMethodFrame(out, ch.id, &amqp091.BasicGetOk{
			DeliveryTag: tag, Redelivered: e2.Redelivered, Exchange: []byte(msg.Exchange),
			RoutingKey: []byte(msg.RoutingKey), MessageCount: uint32(left)})
		return appendContent(out, ch.id, msg, c.frameMax)
	})
	if m.NoAck {
		c.b.mem.release(msg) // its frames are encoded
	}
	q.unlock()
	return nil
}

// recover requeues every unacked delivery of the channel (basic.recover
// with requeue, as RabbitMQ implements it).
func (ch *channel) recover() {
	ch.mu.Lock()
	ds := ch.takeUnacked(nil, allTags)
	ch.mu.Unlock()
	settleGroups(ds, settleRequeue, &ch.entries)
}

// interned is a one-entry cache of a name seen on the wire.
type interned struct{ s string }

// intern returns b as a string, the previous one when b is the same.
func (in *interned) intern(b []byte) string {
	if string(b) != in.s { // compiled without a conversion
		in.s = string(b)
	}
	return in.s
}

// observeDeliver counts a first delivery's publish-to-deliver latency for
// its queue (nil for direct reply-to) and its exchange, and returns the
// time of delivery.
func observeDeliver(q *queueState, e queue.Entry) int64 {
	now := latency.Now()
	if e.Redelivered {
		return now
	}
	d := now - e.Msg.PublishedAt
	if q != nil {
		q.lat.PublishToDeliver.Observe(d)
	}
	if v := e.Msg.Via; v != nil {
		v.PublishToDeliver.Observe(d)
	}
	return now
}

// observeAcks counts acknowledged deliveries' deliver-to-ack latency.
func observeAcks(ds []delivery) {
	now := latency.Now()
	for i := range ds {
		d := now - ds[i].at
		if q := ds[i].q; q != nil {
			q.lat.DeliverToAck.Observe(d)
		}
		if v := ds[i].e.Msg.Via; v != nil {
			v.DeliverToAck.Observe(d)
		}
	}
}
