package broker

import (
	"strconv"
	"sync"
	"time"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// queueState is one queue of a vhost: its message store, its consumers and
// the timers of its TTLs. mu guards everything mutable; the lock order is
// queue, then channel, then connection writer. Dead-lettering routes
// messages into other queues, so it runs after mu is released (unlock).
type queueState struct {
	lat        latency.Pair
	vh         *vhost
	name       string
	durable    bool
	exclusive  bool
	autoDelete bool
	args       amqp091.Table
	owner      *conn // exclusive queues
	cfg        queue.Config
	qa         queue.Args

	mu          sync.Mutex
	store       *queue.Queue
	consumers   []*consumer
	next        int // round robin among consumers of the top priority
	unacked     int
	deleted     bool
	hadConsumer bool
	lastUsed    time.Time
	ttlTimer    *time.Timer
	ttlAt       int64
	expiryTimer *time.Timer
	dead        []deadLetter
	scratch     []queue.Entry
	mayExpire   bool // a message with a TTL was ever enqueued
	// flowWaiters are the publishers waiting for the backlog to drain;
	// flowStalled says a wait saw no delivery (flow.go).
	flowWaiters []*conn
	flowStalled bool
	// waker, while a connection's reader enqueues (mu held), is that
	// connection: the writers of the consumers dispatched to are woken at
	// the end of its read batch instead of once per message.
	waker *conn

	published, delivered, acked, redelivered uint64
}

// deadLetter is a message leaving a queue for its dead-letter exchange.
type deadLetter struct {
	e      queue.Entry
	reason queue.Reason
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// now is the time expiry is judged by, read only when something in the
// queue can expire: the clock is a quarter of a publish's cost otherwise.
func (q *queueState) now() int64 {
	if !q.mayExpire {
		return 0 // no entry has an expiry (0 means none)
	}
	return nowMillis()
}

// exclusiveTo reports whether q is exclusive to a connection other than c
// (RabbitMQ's check_exclusive_access in its lax form).
func (q *queueState) exclusiveTo(c *conn) bool {
	return q.exclusive && q.owner != c
}

// unlock releases mu, then dead-letters what was collected under it.
func (q *queueState) unlock() {
	dead := q.dead
	q.dead = nil
	q.mu.Unlock()
	if len(dead) > 0 {
		q.deadLetter(dead)
	}
}

// collect takes entries that left the store for reason: their references
// go to the dead letters, or are released when there is no dead-letter
// exchange.
func (q *queueState) collect(entries []queue.Entry, reason queue.Reason) {
	for _, e := range entries {
		if q.qa.HasDeadLetterExchange {
			q.dead = append(q.dead, deadLetter{e: e, reason: reason})
			continue
		}
		q.vh.b.mem.release(e.Msg)
	}
}

// deadLetter republishes messages to the queue's dead-letter exchange,
// with x-death as RabbitMQ writes it.
// Each dead letter holds a reference to its message, released here.
func (q *queueState) deadLetter(dead []deadLetter) {
	var s routeScratch
	now := time.Now()
	for _, d := range dead {
		if q.qa.HasDeadLetterExchange {
			q.deadLetterOne(d, now, &s)
		}
		q.vh.b.mem.release(d.e.Msg)
	}
}

func (q *queueState) deadLetterOne(d deadLetter, now time.Time, s *routeScratch) {
	dlx := q.qa.DeadLetterExchange
	m := d.e.Msg
	m.Held()
	rk := m.RoutingKey
	if q.qa.HasDeadLetterRoutingKey {
		rk = q.qa.DeadLetterRoutingKey
	}
	// Dead-lettering is a new publish, to the dead-letter exchange. The
	// copy shares its original's body, and holds the original for it.
	var nm *queue.Message
	var hs amqp091.Table
	if m.Format == queue.FormatAMQP10 {
		// The death goes into the message-annotations; the bare message
		// is shared as it is.
		nm = queue.AllocMessage(0)
		nm.Format, nm.Priority, nm.Persistent = queue.FormatAMQP10, m.Priority, m.Persistent
		nm.Header = deadLetterHeader10(m, d.reason, q.name, now, dlx, rk)
	} else {
		// The new x-death entry and the first-death headers are the
		// most the header grows by, in most cases.
		nm = queue.AllocMessage(len(m.Header) + 256 + 2*len(q.name) + 2*len(m.Exchange) + len(m.RoutingKey))
		hdr, err := queue.DeadLetterHeader(nm.Buffer(), m, d.reason, q.name, now, q.qa.HasDeadLetterRoutingKey)
		if err != nil {
			nm.Free()
			return
		}
		nm.Header, nm.Priority = hdr, m.Priority
		hs = headersOf(hdr)
	}
	nm.Exchange, nm.RoutingKey, nm.Body, nm.PublishedAt = dlx, rk, m.Body, latency.Now()
	q.vh.b.mem.hold(m) // the copy's reference to its original
	nm.SetParent(m)
	q.vh.b.mem.hold(nm) // this path's, until routed
	defer q.vh.b.mem.release(nm)
	keys, err := route.RoutingKeys([]byte(rk), hs, nil)
	if err != nil {
		return
	}
	qs, ok, _ := q.vh.route(dlx, keys, hs, s)
	if !ok {
		return
	}
	nm.Via = s.via
	for _, t := range qs {
		if t == q && d.reason != queue.Rejected {
			// RabbitMQ drops a message dead-lettered back into its own
			// queue by expiry or length in a cycle.
			continue
		}
		t.enqueue(nm, nil)
	}
}

// headersOf returns the headers table of a content header payload.
func headersOf(hdr []byte) amqp091.Table {
	var h amqp091.ContentHeader
	if h.DecodeFromBytes(hdr) != nil {
		return nil
	}
	return h.Properties.Headers
}

// enqueue stores m and delivers what it can; it reports false when the
// queue refused the message (reject-publish overflow). ch, when set, is
// the publishing channel (for the one-queue path's accounting).
func (q *queueState) enqueue(m *queue.Message, ch *channel) bool {
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return true
	}
	if m.Expiration >= 0 || q.cfg.MessageTTL >= 0 {
		q.mayExpire = true
	}
	now := q.now()
	accepted, dropped := q.store.Push(m, now, q.scratch[:0])
	if accepted {
		// The entry's reference, taken before drop-head lets go of what
		// it dropped: m itself may be among it (x-max-length 0).
		q.vh.b.mem.hold(m)
	}
	q.collect(dropped, queue.MaxLen)
	q.scratch = dropped[:0]
	if accepted {
		q.published++
		if ch != nil {
			q.waker = ch.c
		}
		q.dispatch()
		q.waker = nil
		if ch != nil {
			q.flowCheck(ch.c)
		}
		q.armTTL()
	} else if q.cfg.Overflow == queue.RejectPublishDLX && q.qa.HasDeadLetterExchange {
		q.vh.b.mem.hold(m) // the dead letter's
		q.dead = append(q.dead, deadLetter{e: queue.Entry{Msg: m}, reason: queue.MaxLen})
	}
	q.unlock()
	return accepted
}

// armTTL schedules the timer for the store's next expiry.
func (q *queueState) armTTL() {
	at, ok := q.store.NextExpiry()
	if !ok || (q.ttlTimer != nil && q.ttlAt <= at && q.ttlAt > 0) {
		return
	}
	if q.ttlTimer != nil {
		q.ttlTimer.Stop()
	}
	q.ttlAt = at
	d := time.Duration(at-nowMillis()) * time.Millisecond
	q.ttlTimer = time.AfterFunc(max(d, 0), q.expire)
}

func (q *queueState) expire() {
	q.mu.Lock()
	q.ttlTimer, q.ttlAt = nil, 0
	if !q.deleted {
		exp := q.store.Expire(nowMillis(), q.scratch[:0])
		q.collect(exp, queue.Expired)
		q.scratch = exp[:0]
		q.armTTL()
	}
	q.unlock()
}

// dispatch gives ready messages to consumers with credit (mu held), and
// lets publishers held by flow control go on when the backlog is down.
func (q *queueState) dispatch() {
	delivered := q.delivered
	q.dispatchReady()
	if q.delivered != delivered {
		q.flowStalled = false
	}
	if len(q.flowWaiters) > 0 {
		q.flowRelease()
	}
}

func (q *queueState) dispatchReady() {
	if len(q.consumers) == 0 {
		return
	}
	now := q.now()
	for q.store.Len() > 0 {
		cons := q.pick()
		if cons == nil {
			return
		}
		e, ok, exp := q.store.Pop(now, q.scratch[:0])
		q.collect(exp, queue.Expired)
		q.scratch = exp[:0]
		if !ok {
			return
		}
		q.delivered++
		if e.Redelivered {
			q.redelivered++
		}
		if !cons.noAck {
			q.unacked++ // the delivery holds the entry's reference
		}
		if cons.link != nil {
			cons.link.deliver(cons, q, e)
		} else {
			cons.ch.deliver(cons, q, e)
		}
		if cons.noAck {
			q.vh.b.mem.release(e.Msg) // its frames are encoded
		}
	}
}

// pick returns the consumer to give the next message to: among those with
// credit, the highest priority, round robin within it; with single active
// consumer, only the first.
func (q *queueState) pick() *consumer {
	if q.qa.SingleActiveConsumer {
		if c := q.consumers[0]; c.hasCredit() {
			return c
		}
		return nil
	}
	n := len(q.consumers)
	var best *consumer
	bestAt := 0
	for i := 0; i < n; i++ {
		at := (q.next + i) % n
		c := q.consumers[at]
		if best != nil && c.priority <= best.priority {
			continue
		}
		if c.hasCredit() {
			best, bestAt = c, at
		}
	}
	if best != nil {
		q.next = (bestAt + 1) % n
	}
	return best
}

// addConsumer registers c (mu held).
func (q *queueState) addConsumer(c *consumer) {
	q.consumers = append(q.consumers, c)
	q.hadConsumer = true
	q.touch()
	q.dispatch()
}

// removeConsumer drops c; it reports whether the queue is now an
// auto-delete queue to delete (mu held).
func (q *queueState) removeConsumer(c *consumer) bool {
	for i, e := range q.consumers {
		if e == c {
			q.consumers = append(q.consumers[:i], q.consumers[i+1:]...)
			if q.next > i {
				q.next--
			}
			break
		}
	}
	if len(q.consumers) == 0 {
		q.next = 0
		q.touch()
	}
	q.dispatch() // a single active consumer's successor
	return q.autoDelete && q.hadConsumer && len(q.consumers) == 0 && !q.deleted
}

// touch records a use of the queue and re-arms x-expires.
func (q *queueState) touch() {
	q.lastUsed = time.Now()
	if q.qa.Expires <= 0 {
		return
	}
	if q.expiryTimer != nil {
		q.expiryTimer.Stop()
	}
	q.expiryTimer = time.AfterFunc(time.Duration(q.qa.Expires)*time.Millisecond, func() {
		q.mu.Lock()
		idle := len(q.consumers) == 0 && !q.deleted &&
			time.Since(q.lastUsed) >= time.Duration(q.qa.Expires)*time.Millisecond
		q.mu.Unlock()
		if idle {
			q.vh.deleteQueueNow(q)
		}
	})
}

// settle records that n delivered messages were acknowledged, rejected or
// requeued, and delivers more.
func (q *queueState) settle(acked []queue.Entry, requeue []queue.Entry, dead []queue.Entry) {
	q.mu.Lock()
	n := len(acked) + len(requeue) + len(dead)
	q.unacked -= n
	if q.deleted {
		q.mu.Unlock()
		for _, es := range [][]queue.Entry{acked, requeue, dead} {
			for _, e := range es {
				q.vh.b.mem.release(e.Msg)
			}
		}
		return
	}
	q.acked += uint64(len(acked))
	for _, e := range acked {
		q.vh.b.mem.release(e.Msg)
	}
	if len(requeue) > 0 {
		q.store.RequeueMany(requeue)
		q.armTTL()
	}
	q.collect(dead, queue.Rejected)
	q.dispatch()
	q.unlock()
}

// declareQueue implements queue.declare; it returns the queue's name and
// counts for declare-ok.
func (v *vhost) declareQueue(c *conn, m *amqp091.QueueDeclare) (name string, msgs, consumers int, e *amqpError) {
	name = string(m.Queue)
	if m.Passive {
		if name == "" {
			return "", 0, 0, errorf(404, "no "+rsQueue("", v.name))
		}
		v.mu.RLock()
		q, ok := v.queues[name]
		v.mu.RUnlock()
		if !ok {
			return "", 0, 0, errNoQueue(name, v.name)
		}
		if q.exclusiveTo(c) {
			return "", 0, 0, errLocked(name, v.name)
		}
		q.mu.Lock()
		msgs, consumers = q.store.Len(), len(q.consumers)
		q.mu.Unlock()
		return name, msgs, consumers, nil
	}
	if name == "" {
		name = generatedName("amq.gen-")
	} else if reservedName(name) {
		return "", 0, 0, errorf(403, "queue name '"+name+"' contains reserved prefix 'amq.*'")
	}
	cfg, qa, err := queue.ParseArgs(m.Arguments)
	if err != nil {
		return "", 0, 0, argError(err, name, v.name)
	}
	if d := v.b.cfg.DefaultMaxLength; d > 0 && cfg.MaxLength < 0 {
		cfg.MaxLength = d
	}
	if d := v.b.cfg.DefaultMaxLengthBytes; d > 0 && cfg.MaxLengthBytes < 0 {
		cfg.MaxLengthBytes = d
	}
	if err := c.check(permConfigure, "queue", name); err != nil {
		return "", 0, 0, err
	}
	if qa.HasDeadLetterExchange {
		if err := c.check(permWrite, "exchange", qa.DeadLetterExchange); err != nil {
			return "", 0, 0, err
		}
	}
	v.mu.Lock()
	v.b.topo.Add(1)
	if q, ok := v.queues[name]; ok {
		v.mu.Unlock()
		// RabbitMQ's strict exclusivity: the owner must be the same
		// (none for a non-exclusive declare).
		var owner *conn
		if m.Exclusive {
			owner = c
		}
		if q.owner != owner {
			return "", 0, 0, errLocked(name, v.name)
		}
		if q.durable != m.Durable {
			return "", 0, 0, errInequivalent("durable", "queue", name, v.name, boolText(m.Durable), boolText(q.durable))
		}
		if q.autoDelete != m.AutoDelete {
			return "", 0, 0, errInequivalent("auto_delete", "queue", name, v.name, boolText(m.AutoDelete), boolText(q.autoDelete))
		}
		if e := argsEquivalent(q.args, m.Arguments, queueEquivalenceArgs, "queue", name, v.name); e != nil {
			return "", 0, 0, e
		}
		q.mu.Lock()
		q.touch()
		msgs, consumers = q.store.Len(), len(q.consumers)
		q.mu.Unlock()
		return name, msgs, consumers, nil
	}
	q := &queueState{
		vh: v, name: name, durable: m.Durable, exclusive: m.Exclusive, autoDelete: m.AutoDelete,
		args: cloneTable(m.Arguments), cfg: cfg, qa: qa, store: queue.New(cfg),
	}
	if m.Exclusive {
		q.owner = c
	}
	v.queues[name] = q
	v.mu.Unlock()
	q.mu.Lock()
	q.touch()
	q.mu.Unlock()
	return name, 0, 0, nil
}

// argError words a declare-argument error as RabbitMQ does.
func argError(err error, name, vhost string) *amqpError {
	if ae, ok := err.(*queue.ArgError); ok {
		return &amqpError{code: 406, text: ae.ReplyText(name, vhost)}
	}
	return errorf(406, err.Error())
}

// lookupQueue finds a queue for consume, get, purge, bind: 404 when
// missing, 405 when exclusive to another connection.
func (v *vhost) lookupQueue(c *conn, name string) (*queueState, *amqpError) {
	v.mu.RLock()
	q, ok := v.queues[name]
	v.mu.RUnlock()
	if !ok {
		return nil, errNoQueue(name, v.name)
	}
	if q.exclusiveTo(c) {
		return nil, errLocked(name, v.name)
	}
	return q, nil
}

// deleteQueue implements queue.delete.
func (v *vhost) deleteQueue(c *conn, m *amqp091.QueueDelete) (int, *amqpError) {
	name := string(m.Queue)
	if err := c.check(permConfigure, "queue", name); err != nil {
		return 0, err
	}
	v.mu.RLock()
	q, ok := v.queues[name]
	v.mu.RUnlock()
	if !ok {
		return 0, nil // RabbitMQ answers delete-ok with 0 for a missing queue
	}
	if q.exclusiveTo(c) {
		return 0, errLocked(name, v.name)
	}
	q.mu.Lock()
	switch {
	case m.IfUnused && len(q.consumers) > 0:
		q.mu.Unlock()
		return 0, errorf(406, rsQueue(name, v.name)+" in use")
	case m.IfEmpty && q.store.Len() > 0:
		q.mu.Unlock()
		return 0, errorf(406, rsQueue(name, v.name)+" not empty")
	}
	q.mu.Unlock()
	return v.deleteQueueNow(q), nil
}

// deleteQueueNow removes q with its bindings, cancels its consumers
// (basic.cancel to clients that asked for it) and returns the messages it
// held.
func (v *vhost) deleteQueueNow(q *queueState) int {
	v.mu.Lock()
	v.b.topo.Add(1)
	if v.queues[q.name] != q {
		v.mu.Unlock()
		return 0
	}
	delete(v.queues, q.name)
	v.removeDestLocked(route.Dest{Kind: route.Queue, Name: q.name})
	v.mu.Unlock()

	q.mu.Lock()
	q.deleted = true
	n := q.store.Len()
	if q.ttlTimer != nil {
		q.ttlTimer.Stop()
	}
	if q.expiryTimer != nil {
		q.expiryTimer.Stop()
	}
	n += q.dropAll()
	cons := q.consumers
	q.consumers = nil
	q.mu.Unlock()
	for _, c := range cons {
		c.ch.serverCancel(c)
	}
	return n
}

// dropAll releases every ready message, dead-lettering none (a queue
// deleted, the broker closed), and returns how many expired ones were
// left in the store besides those Len counted (mu held).
func (q *queueState) dropAll() int {
	exp := q.store.Expire(1<<62, q.scratch[:0]) // whatever is left counts no more
	expired := len(exp)
	for _, e := range exp {
		q.vh.b.mem.release(e.Msg)
	}
	for q.store.Len() > 0 {
		// Entries behind the head can expire as it goes: they are
		// released too.
		e, ok, more := q.store.Pop(1<<62-1, exp[:0])
		exp = more
		for _, x := range more {
			q.vh.b.mem.release(x.Msg)
		}
		if !ok {
			break
		}
		q.vh.b.mem.release(e.Msg)
	}
	clear(exp)
	q.scratch = exp[:0]
	return expired
}

// purgeQueue implements queue.purge.
func (v *vhost) purgeQueue(c *conn, name string) (int, *amqpError) {
	if err := c.check(permRead, "queue", name); err != nil {
		return 0, err
	}
	q, e := v.lookupQueue(c, name)
	if e != nil {
		return 0, e
	}
	q.mu.Lock()
	for e := range q.store.All() {
		v.b.mem.release(e.Msg)
	}
	n := q.store.Purge()
	q.mu.Unlock()
	return n, nil
}

// deleteExclusive deletes the exclusive queues c owned (its connection
// closed).
func (v *vhost) deleteExclusive(c *conn) {
	v.mu.RLock()
	var qs []*queueState
	for _, q := range v.queues {
		if q.owner == c {
			qs = append(qs, q)
		}
	}
	v.mu.RUnlock()
	for _, q := range qs {
		v.deleteQueueNow(q)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
