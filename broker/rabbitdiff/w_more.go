package rabbitdiff

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Edge cases around acknowledgements, connection ends and limits.

func edgeWorkloads() []Workload {
	return []Workload{
		{Name: "go-connection-close-requeues", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 2)
			if err != nil {
				return err
			}
			other, err := s.e.Dial()
			if err != nil {
				return err
			}
			och, err := other.Channel()
			if err != nil {
				return err
			}
			if _, _, err := och.Get(q, false); err != nil {
				return err
			}
			d, err := s.consume(och, q, "c", false, nil)
			if err != nil {
				return err
			}
			if _, err := next(d); err != nil {
				return err
			}
			// Both unacked when the connection goes: back in order,
			// redelivered.
			if err := other.Close(); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-recover-invalidates-tags", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 1)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c", false)
			if err != nil {
				return err
			}
			first, err := next(d)
			if err != nil {
				return err
			}
			if err := cch.Recover(true); err != nil {
				return err
			}
			again, err := next(d)
			if err != nil {
				return err
			}
			if err := again.Ack(false); err != nil {
				return err
			}
			// The tag of the first delivery is spent.
			if err := first.Ack(false); err != nil {
				return err
			}
			_, err = waitClose(cch)
			return err
		})},
		{Name: "go-nack-all-outstanding", Run: goScene(func(s *scene) error {
			q, err := s.fill("q", 3)
			if err != nil {
				return err
			}
			cch, d, err := s.consumer(q, "c", false)
			if err != nil {
				return err
			}
			if _, err := nextN(d, 3); err != nil {
				return err
			}
			// Tag 0 with multiple: everything outstanding.
			if err := cch.Nack(0, true, true); err != nil {
				return err
			}
			if _, err := nextN(d, 3); err != nil {
				return err
			}
			if err := cch.Ack(0, true); err != nil {
				return err
			}
			if err := cch.Cancel("c", false); err != nil {
				return err
			}
			_, err = s.ch.QueueDeclarePassive(q, false, false, false, false, nil)
			return err
		})},
		{Name: "go-publish-mandatory-full-queue", Run: goScene(func(s *scene) error {
			// Routed to a full reject-publish queue: nacked, not returned.
			q, err := s.queue("q", amqp.Table{"x-max-length": int32(1), "x-overflow": "reject-publish"})
			if err != nil {
				return err
			}
			returns := s.p.NotifyReturn(make(chan amqp.Return, 2))
			for _, b := range []string{"fits", "refused"} {
				if err := s.p.sendFlags("", q, true, text(b)); err != nil {
					return err
				}
			}
			select {
			case <-returns:
				s.e.Note("a full queue's refusal was returned")
			case <-time.After(100 * time.Millisecond):
			}
			return s.drain(q)
		})},
		{Name: "go-exclusive-queue-gone-with-connection", Run: goScene(func(s *scene) error {
			other, err := s.e.Dial()
			if err != nil {
				return err
			}
			och, err := other.Channel()
			if err != nil {
				return err
			}
			q, err := och.QueueDeclare("", false, false, true, false, nil)
			if err != nil {
				return err
			}
			if _, err := och.Consume(q.Name, "c", true, false, false, false, nil); err != nil {
				return err
			}
			if err := s.sendText("", q.Name, "to the exclusive queue"); err != nil {
				return err
			}
			if err := other.Close(); err != nil {
				return err
			}
			_, err = s.ch.QueueDeclarePassive(q.Name, false, false, false, false, nil)
			return s.expectClosed("passive declare after the owner left", err)
		})},
		{Name: "go-many-channels", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			var chans []*amqp.Channel
			for range 40 {
				ch, err := s.c.Channel()
				if err != nil {
					return err
				}
				if _, err := ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
					return err
				}
				chans = append(chans, ch)
			}
			for i, ch := range chans {
				if i%2 == 0 {
					if err := ch.Close(); err != nil {
						return err
					}
				}
			}
			// Numbers freed are used again.
			for range 5 {
				ch, err := s.c.Channel()
				if err != nil {
					return err
				}
				if err := ch.Qos(1, 0, false); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-qos-change-between-consumers", Run: goScene(func(s *scene) error {
			q1, err := s.fill("q1", 3)
			if err != nil {
				return err
			}
			q2, err := s.fill("q2", 3)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := cch.Qos(1, 0, false); err != nil {
				return err
			}
			d1, err := s.consume(cch, q1, "one", false, nil)
			if err != nil {
				return err
			}
			if err := cch.Qos(2, 0, false); err != nil {
				return err
			}
			d2, err := s.consume(cch, q2, "two", false, nil)
			if err != nil {
				return err
			}
			if _, err := next(d1); err != nil {
				return err
			}
			if _, err := nextN(d2, 2); err != nil {
				return err
			}
			// Each consumer keeps the limit it was created with.
			if err := quiet(d1, 100*time.Millisecond); err != nil {
				return err
			}
			if err := quiet(d2, 50*time.Millisecond); err != nil {
				return err
			}
			return cch.Cancel("one", false)
		})},
		{Name: "go-message-ttl-requeued", Run: goScene(func(s *scene) error {
			// A requeued message keeps its TTL clock.
			q, err := s.queue("q", amqp.Table{"x-message-ttl": int32(300)})
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "ticking"); err != nil {
				return err
			}
			d, ok, err := s.ch.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "nothing to get")
			}
			sleep(s.ctx, 450*time.Millisecond)
			if err := d.Nack(false, true); err != nil {
				return err
			}
			sleep(s.ctx, 100*time.Millisecond)
			return s.drain(q)
		})},
		{Name: "go-headers-exchange-types", Run: goScene(func(s *scene) error {
			// How binding and message header values of different types
			// compare.
			x, err := s.exchange("h", "headers", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "", x, false, amqp.Table{"x-match": "any", "n": int32(5), "b": true, "s": "5"}); err != nil {
				return err
			}
			for i, h := range []amqp.Table{{"n": int64(5)}, {"n": int8(5)}, {"n": "5"}, {"b": true}, {"b": int32(1)}, {"s": []byte("5")}, {"s": "5"}, {"n": float64(5)}} {
				msg := text("m" + strconv.Itoa(i))
				msg.Headers = h
				if err := s.send(x, "", msg); err != nil {
					return err
				}
			}
			return s.drain(q)
		})},
	}
}
