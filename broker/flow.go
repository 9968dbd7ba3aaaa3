package broker

import "time"

// Publisher flow control.
//
// A publisher faster than a queue's consumers fills the queue without
// bound: every message waits behind the backlog, and latency grows with
// the run. RabbitMQ's credit flow holds such a publisher back (its
// connection shows the state "flow") when the processes on the message's
// path fall behind. Here routing and enqueueing happen on the publisher's
// own goroutine and never fall behind, so the backlog itself is the
// signal: a read batch that published into a queue whose ready messages
// number flowHigh or more, while consumers are taking from it, ends with
// the reader waiting until the queue is down to flowLow. The socket is
// not read meanwhile (TCP backpressure reaches the client), and the
// consumers keep receiving from the backlog, so they never starve: what
// the publisher loses in rate it would only have added to the queue.
//
// Flow never holds a publisher behind consumers that have stopped: a wait
// that sees no delivery for flowStall marks the queue stalled, and it is
// not waited for again until it delivers. A queue without consumers
// accumulates messages as RabbitMQ's does, and the memory alarm
// (memory.go) stays the limit of last resort.
const (
	flowHigh  = 2048
	flowLow   = flowHigh / 2
	flowStall = 50 * time.Millisecond
)

// flowCheck runs after m was enqueued by the publishing connection c (q.mu
// held): a backlog past flowHigh with consumers makes c wait at the end of
// its read batch.
func (q *queueState) flowCheck(c *conn) {
	if q.flowStalled || len(q.consumers) == 0 || q.store.Len() < flowHigh {
		return
	}
	for _, f := range c.flowQueues {
		if f == q {
			return
		}
	}
	c.flowQueues = append(c.flowQueues, q)
}

// flowRelease wakes the publishers waiting for q once its backlog is down
// to flowLow, or when it can no longer drain (deleted, no consumers): mu
// held.
func (q *queueState) flowRelease() {
	if len(q.flowWaiters) == 0 {
		return
	}
	if q.store.Len() > flowLow && len(q.consumers) > 0 && !q.deleted {
		return
	}
	for i, c := range q.flowWaiters {
		select {
		case c.flowWake <- struct{}{}:
		default:
		}
		q.flowWaiters[i] = nil
	}
	q.flowWaiters = q.flowWaiters[:0]
}

// awaitFlow holds the reader until every queue of c.flowQueues is down to
// flowLow, has stalled, or the connection is asked to close. The state is
// "flow" meanwhile.
func (c *conn) awaitFlow() {
	if c.flowWake == nil {
		c.flowWake = make(chan struct{}, 1)
	}
	c.setState(stateFlow)
	for i, q := range c.flowQueues {
		c.flowQueues[i] = nil
		q.mu.Lock()
		if consumesOn(q, c) {
			// Its consumer's acks arrive on this very socket: waiting
			// would stop them.
			q.mu.Unlock()
			continue
		}
		for !q.flowStalled && !q.deleted && len(q.consumers) > 0 && q.store.Len() > flowLow && c.closeRequested.Load() == nil {
			delivered := q.delivered
			select { // a wake left from an earlier wait
			case <-c.flowWake:
			default:
			}
			if !containsConn(q.flowWaiters, c) {
				q.flowWaiters = append(q.flowWaiters, c)
			}
			q.mu.Unlock()
			if c.flowTimer == nil {
				c.flowTimer = time.NewTimer(flowStall)
			} else {
				c.flowTimer.Reset(flowStall)
			}
			select {
			case <-c.flowWake:
			case <-c.flowTimer.C:
			}
			c.flowTimer.Stop()
			q.mu.Lock()
			if q.delivered == delivered {
				q.flowStalled = true // its consumers stopped: do not wait for it
			}
		}
		q.mu.Unlock()
	}
	c.flowQueues = c.flowQueues[:0]
	c.setState(stateRunning)
}

func containsConn(cs []*conn, c *conn) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

// consumesOn reports whether one of q's consumers is on connection c (mu
// held).
func consumesOn(q *queueState, c *conn) bool {
	for _, cons := range q.consumers {
		if cons.ch != nil && cons.ch.c == c {
			return true
		}
	}
	return false
}
