package rabbitdiff

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Consuming: qos, consume and cancel, server cancels, exclusivity,
// priorities, get, acks, recover, direct reply-to.

func consumeWorkloads() []Workload {
	return []Workload{
		{Name: "go-qos-per-consumer", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 5)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := cch.Qos(2, 0, false); err != nil {
				return err
			}
			d, err := s.consume(cch, q, "c", false, nil)
			if err != nil {
				return err
			}
			got, err := nextN(d, 2)
			if err != nil {
				return err
			}
			if err := quiet(d, 150*time.Millisecond); err != nil {
				return err
			}
			if err := got[1].Ack(true); err != nil {
				return err
			}
			got, err = nextN(d, 2)
			if err != nil {
				return err
			}
			if err := got[0].Ack(false); err != nil {
				return err
			}
			last, err := next(d)
			if err != nil {
				return err
			}
			// A qos after consume does not change the existing consumer.
			if err := cch.Qos(10, 0, false); err != nil {
				return err
			}
			return last.Ack(true)
		})},
		{Name: "go-qos-global", Run: goScene(func(s *scene) error {
			q1, err := s.fill("q1", 2)
			if err != nil {
				return err
			}
			q2, err := s.queue("q2", nil)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := cch.Qos(2, 0, true); err != nil {
				return err
			}
			d1, err := s.consume(cch, q1, "c1", false, nil)
			if err != nil {
				return err
			}
			got, err := nextN(d1, 2)
			if err != nil {
				return err
			}
			d2, err := s.consume(cch, q2, "c2", false, nil)
			if err != nil {
				return err
			}
			if err := s.sendText("", q2, "waits for room on the channel"); err != nil {
				return err
			}
			if err := quiet(d2, 150*time.Millisecond); err != nil {
				return err
			}
			if err := got[0].Ack(false); err != nil {
				return err
			}
			m, err := next(d2)
			if err != nil {
				return err
			}
			if err := got[1].Ack(false); err != nil {
				return err
			}
			return m.Ack(false)
		})},
		{Name: "go-qos-both", Run: goScene(func(s *scene) error {
			// Per consumer 1, per channel 3: each of two consumers holds one.
			q1, err := s.fill("q1", 2)
			if err != nil {
				return err
			}
			q2, err := s.fill("q2", 2)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := cch.Qos(3, 0, true); err != nil {
				return err
			}
			if err := cch.Qos(1, 0, false); err != nil {
				return err
			}
			d1, err := s.consume(cch, q1, "c1", false, nil)
			if err != nil {
				return err
			}
			a, err := next(d1)
			if err != nil {
				return err
			}
			if err := quiet(d1, 100*time.Millisecond); err != nil {
				return err
			}
			d2, err := s.consume(cch, q2, "c2", false, nil)
			if err != nil {
				return err
			}
			b, err := next(d2)
			if err != nil {
				return err
			}
			if err := quiet(d2, 100*time.Millisecond); err != nil {
				return err
			}
			if err := a.Ack(false); err != nil {
				return err
			}
			if _, err := next(d1); err != nil {
				return err
			}
			if err := b.Ack(false); err != nil {
				return err
			}
			// Wait for what the ack lets through, so the run ends in a
			// known state.
			_, err = next(d2)
			return err
		})},
		{Name: "go-qos-prefetch-size", Run: goScene(func(s *scene) error {
			err := s.ch.Qos(0, 1000, false)
			s.e.Note("qos prefetch-size 1000: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
		{Name: "go-qos-zero-unlimited", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 3)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := cch.Qos(0, 0, false); err != nil {
				return err
			}
			d, err := s.consume(cch, q, "c", false, nil)
			if err != nil {
				return err
			}
			got, err := nextN(d, 3)
			if err != nil {
				return err
			}
			return got[2].Ack(true)
		})},
		{Name: "go-consume-cancel", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 1)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			d, err := s.consume(cch, q, "c", true, nil)
			if err != nil {
				return err
			}
			if _, err := next(d); err != nil {
				return err
			}
			if err := cch.Cancel("c", false); err != nil {
				return err
			}
			if err := s.sendText("", q, "after cancel"); err != nil {
				return err
			}
			// Cancelling an unknown tag is fine.
			if err := cch.Cancel("unknown", false); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			_, err = s.consume(s.ch, s.e.Prefix+"missing", "m", true, nil)
			return s.expectClosed("consume from a missing queue", err)
		})},
		{Name: "go-consume-duplicate-tag", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if _, err := s.consume(s.ch, q, "dup", true, nil); err != nil {
				return err
			}
			_, err = s.consume(s.ch, q, "dup", true, nil)
			s.e.Note("second consumer tagged dup: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
		{Name: "go-consume-same-tag-other-channel", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if _, err := s.consume(s.ch, q, "same", true, nil); err != nil {
				return err
			}
			other, err := s.c.Channel()
			if err != nil {
				return err
			}
			_, err = s.consume(other, q, "same", true, nil)
			return err
		})},
		{Name: "go-consume-server-cancel", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			cancels := cch.NotifyCancel(make(chan string, 1))
			if _, err := s.consume(cch, q, "c", true, nil); err != nil {
				return err
			}
			if _, err := s.ch.QueueDelete(q, false, false, false); err != nil {
				return err
			}
			tag, err := waitCancel(cancels)
			if err != nil {
				return err
			}
			s.e.Note("server cancelled " + tag)
			return nil
		})},
		{Name: "go-consume-exclusive", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			ex, err := s.c.Channel()
			if err != nil {
				return err
			}
			if _, err := ex.Consume(q, "owner", true, true, false, false, nil); err != nil {
				return err
			}
			_, err = s.consume(s.ch, q, "second", true, nil)
			if err := s.expectClosed("consume beside an exclusive consumer", err); err != nil {
				return err
			}
			if err := ex.Cancel("owner", false); err != nil {
				return err
			}
			if _, err := s.consume(s.ch, q, "first", true, nil); err != nil {
				return err
			}
			other, err := s.c.Channel()
			if err != nil {
				return err
			}
			_, err = other.Consume(q, "greedy", true, true, false, false, nil)
			if err == nil {
				s.e.Note("exclusive consume beside a consumer: succeeded")
			}
			return nil
		})},
		{Name: "go-consume-priority", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			low, err := s.c.Channel()
			if err != nil {
				return err
			}
			high, err := s.c.Channel()
			if err != nil {
				return err
			}
			for _, ch := range []*amqp.Channel{low, high} {
				if err := ch.Qos(1, 0, false); err != nil {
					return err
				}
			}
			dl, err := s.consume(low, q, "low", false, amqp.Table{"x-priority": int32(1)})
			if err != nil {
				return err
			}
			dh, err := s.consume(high, q, "high", false, amqp.Table{"x-priority": int32(10)})
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "first: to high"); err != nil {
				return err
			}
			h, err := next(dh)
			if err != nil {
				return err
			}
			// high is full: the next goes to low.
			if err := s.sendText("", q, "second: to low"); err != nil {
				return err
			}
			l, err := next(dl)
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "third: waits for high"); err != nil {
				return err
			}
			if err := h.Ack(false); err != nil {
				return err
			}
			h, err = next(dh)
			if err != nil {
				return err
			}
			if err := h.Ack(false); err != nil {
				return err
			}
			return l.Ack(false)
		})},
		{Name: "go-basic-get", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 3)
			if err != nil {
				return err
			}
			d, ok, err := s.ch.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "nothing to get")
			}
			if err := d.Ack(false); err != nil {
				return err
			}
			if _, _, err := s.ch.Get(q, true); err != nil {
				return err
			}
			d, ok, err = s.ch.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "nothing to get")
			}
			if err := d.Reject(true); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			_, _, err = s.ch.Get(s.e.Prefix+"missing", true)
			return s.expectClosed("get from a missing queue", err)
		})},
		{Name: "go-ack-multiple", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 4)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c", false)
			if err != nil {
				return err
			}
			got, err := nextN(d, 4)
			if err != nil {
				return err
			}
			if err := cch.Ack(got[2].DeliveryTag, true); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			if err := cch.Ack(got[3].DeliveryTag, false); err != nil {
				return err
			}
			return cch.Cancel("c", false)
		})},
		{Name: "go-nack-requeue", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 3)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c", false)
			if err != nil {
				return err
			}
			got, err := nextN(d, 3)
			if err != nil {
				return err
			}
			// The middle one comes back, marked redelivered.
			if err := cch.Nack(got[1].DeliveryTag, false, true); err != nil {
				return err
			}
			again, err := next(d)
			if err != nil {
				return err
			}
			// Then all of them, in their original order.
			if err := cch.Nack(again.DeliveryTag, true, true); err != nil {
				return err
			}
			all, err := nextN(d, 3)
			if err != nil {
				return err
			}
			if err := cch.Reject(all[0].DeliveryTag, true); err != nil {
				return err
			}
			first, err := next(d)
			if err != nil {
				return err
			}
			// Rejected without requeue: gone.
			if err := cch.Reject(first.DeliveryTag, false); err != nil {
				return err
			}
			if err := cch.Nack(all[2].DeliveryTag, true, false); err != nil {
				return err
			}
			if err := cch.Cancel("c", false); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-ack-unknown-tag", Run: goScene(func(s *scene) error {
			if err := s.ch.Ack(42, false); err != nil {
				return err
			}
			if _, err := waitClose(s.ch); err != nil {
				return err
			}
			if err := s.reopen(); err != nil {
				return err
			}
			q, err := s.fill("q", 2)
			if err != nil {
				return err
			}
			d, ok, err := s.ch.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "nothing to get")
			}
			if err := d.Ack(false); err != nil {
				return err
			}
			// Twice.
			if err := d.Ack(false); err != nil {
				return err
			}
			if _, err := waitClose(s.ch); err != nil {
				return err
			}
			if err := s.reopen(); err != nil {
				return err
			}
			// A no-ack delivery has nothing to acknowledge.
			if _, _, err := s.ch.Get(q, true); err != nil {
				return err
			}
			if err := s.ch.Nack(1, false, true); err != nil {
				return err
			}
			if _, err := waitClose(s.ch); err != nil {
				return err
			}
			if err := s.reopen(); err != nil {
				return err
			}
			// multiple=true with tag 0 and nothing outstanding.
			if err := s.ch.Ack(0, true); err != nil {
				return err
			}
			if err := s.ch.Reject(7, false); err != nil {
				return err
			}
			_, err = waitClose(s.ch)
			return err
		})},
		{Name: "go-basic-recover", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 2)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c", false)
			if err != nil {
				return err
			}
			if _, err := nextN(d, 2); err != nil {
				return err
			}
			if err := cch.Recover(true); err != nil {
				return err
			}
			got, err := nextN(d, 2)
			if err != nil {
				return err
			}
			if err := got[1].Ack(true); err != nil {
				return err
			}
			err = cch.Recover(false)
			s.e.Note("basic.recover requeue=false: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
		{Name: "go-channel-close-requeues", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 2)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c1", false)
			if err != nil {
				return err
			}
			if _, err := nextN(d, 2); err != nil {
				return err
			}
			if err := cch.Close(); err != nil {
				return err
			}
			cch2, d2, err := s.consumer(q, "c2", false)
			if err != nil {
				return err
			}
			got, err := nextN(d2, 2)
			if err != nil {
				return err
			}
			return cch2.Ack(got[1].DeliveryTag, true)
		})},
		{Name: "go-direct-reply-to", Run: goScene(func(s *scene) error {
			q, err := s.queue("requests", nil)
			if err != nil {
				return err
			}
			replies, err := s.consume(s.ch, "amq.rabbitmq.reply-to", "replies", true, nil)
			if err != nil {
				return err
			}
			req := text("question")
			req.ReplyTo = "amq.rabbitmq.reply-to"
			req.CorrelationId = "42"
			if err := s.ch.Publish("", q, false, false, req); err != nil {
				return err
			}
			// The responder, on another connection.
			rc, err := s.e.Dial()
			if err != nil {
				return err
			}
			defer rc.Close()
			rch, err := rc.Channel()
			if err != nil {
				return err
			}
			reqs, err := s.consume(rch, q, "responder", true, nil)
			if err != nil {
				return err
			}
			r, err := next(reqs)
			if err != nil {
				return err
			}
			answer := text("answer")
			answer.CorrelationId = r.CorrelationId
			if err := rch.Publish("", r.ReplyTo, false, false, answer); err != nil {
				return err
			}
			if _, err := next(replies); err != nil {
				return err
			}
			// Publishing to a reply-to name nobody consumes any more: dropped.
			if err := s.ch.Cancel("replies", false); err != nil {
				return err
			}
			if err := rch.Publish("", r.ReplyTo, true, false, text("too late")); err != nil {
				return err
			}
			if err := rch.Close(); err != nil {
				return err
			}
			return nil
		})},
		{Name: "go-direct-reply-to-errors", Run: goScene(func(s *scene) error {
			_, err := s.consume(s.ch, "amq.rabbitmq.reply-to", "acking", false, nil)
			if err := s.expectClosed("reply-to consumer with acks", err); err != nil {
				return err
			}
			req := text("no reply consumer")
			req.ReplyTo = "amq.rabbitmq.reply-to"
			if err := s.ch.Publish("", s.e.Prefix+"nowhere", false, false, req); err != nil {
				return err
			}
			if _, err := waitClose(s.ch); err != nil {
				return err
			}
			return nil
		})},
		{Name: "go-channel-flow", Run: goScene(func(s *scene) error {
			if err := s.ch.Flow(true); err != nil {
				return err
			}
			err := s.ch.Flow(false)
			s.e.Note("channel.flow active=false: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
	}
}

// fill declares queue name and puts n numbered messages in it.
func (s *scene) fill(name string, n int) (string, error) {
	q, err := s.queue(name, nil)
	if err != nil {
		return "", err
	}
	for i := range n {
		if err := s.sendText("", q, name+" "+strconv.Itoa(i)); err != nil {
			return "", err
		}
	}
	return q, nil
}

// consumer opens a channel and starts a consumer tagged tag on it.
func (s *scene) consumer(queue, tag string, autoAck bool) (*amqp.Channel, <-chan amqp.Delivery, error) {
	ch, err := s.c.Channel()
	if err != nil {
		return nil, nil, err
	}
	d, err := s.consume(ch, queue, tag, autoAck, nil)
	return ch, d, err
}
