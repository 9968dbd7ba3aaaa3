package rabbitdiff

import (
	"errors"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Publishing: mandatory and basic.return, confirms, transactions,
// properties and bodies.

func publishWorkloads() []Workload {
	return []Workload{
		{Name: "go-publish-mandatory-confirm", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			returns := s.p.NotifyReturn(make(chan amqp.Return, 4))
			// Unroutable and mandatory: basic.return, then the ack.
			if err := s.p.sendFlags("", s.e.Prefix+"nowhere", true, text("returned")); err != nil {
				return err
			}
			if err := waitReturn(returns); err != nil {
				return err
			}
			if err := s.p.sendFlags("", q, true, text("routed")); err != nil {
				return err
			}
			// Unroutable, not mandatory: silently dropped, still acked.
			if err := s.p.sendFlags("", s.e.Prefix+"nowhere", false, text("dropped")); err != nil {
				return err
			}
			if err := s.p.sendFlags("amq.direct", s.e.Prefix+"nowhere", true, text("returned by amq.direct")); err != nil {
				return err
			}
			if err := waitReturn(returns); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-publish-mandatory-no-confirm", Run: goScene(func(s *scene) error {
			returns := s.ch.NotifyReturn(make(chan amqp.Return, 4))
			msg := text("returned")
			msg.Headers = amqp.Table{"h": int32(1)}
			msg.CorrelationId = "c-1"
			if err := s.ch.Publish("", s.e.Prefix+"nowhere", true, false, msg); err != nil {
				return err
			}
			return waitReturn(returns)
		})},
		{Name: "go-publish-confirms-burst", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			// 200 publishes without waiting: RabbitMQ coalesces the acks as it
			// pleases; the transcript expands them, so only which tags were
			// confirmed, and how, is compared.
			const n = 200
			for i := range n {
				if err := s.p.Publish("", q, false, false, text("burst "+strconv.Itoa(i))); err != nil {
					return err
				}
			}
			for i := range n {
				select {
				case c := <-s.p.confirms:
					if !c.Ack {
						return errors.New("confirm " + strconv.Itoa(i) + " is a nack")
					}
				case <-time.After(DefaultStepTimeout):
					return errors.New("missing confirms after " + strconv.Itoa(i))
				}
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			_, err = s.ch.QueuePurge(q, false)
			return err
		})},
		{Name: "go-publish-confirms-mixed", Run: goScene(func(s *scene) error {
			// reject-publish with room for 2: acks and nacks interleave.
			q, err := s.queue("q", amqp.Table{"x-max-length": int32(2), "x-overflow": "reject-publish"})
			if err != nil {
				return err
			}
			for i := range 4 {
				if err := s.sendText("", q, "m"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			if _, _, err := s.ch.Get(q, true); err != nil {
				return err
			}
			for i := 4; i < 6; i++ {
				if err := s.sendText("", q, "m"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			return s.drain(q)
		})},
		{Name: "go-publish-confirm-select-twice", Run: goScene(func(s *scene) error {
			// confirm.select on a channel already in confirm mode is fine.
			return s.p.Confirm(false)
		})},
		{Name: "go-tx", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			tx, err := s.c.Channel()
			if err != nil {
				return err
			}
			if err := tx.Tx(); err != nil {
				return err
			}
			if err := tx.Publish("", q, false, false, text("rolled back")); err != nil {
				return err
			}
			if err := tx.TxRollback(); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			for _, b := range []string{"committed 1", "committed 2"} {
				if err := tx.Publish("", q, false, false, text(b)); err != nil {
					return err
				}
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			if err := tx.TxCommit(); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			// Acks are transactional too: rolled back, the message stays
			// unacked.
			d, ok, err := tx.Get(q, false)
			if err != nil || !ok {
				return errOr(err, "nothing to get")
			}
			if err := d.Ack(false); err != nil {
				return err
			}
			if err := tx.TxRollback(); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			if err := d.Ack(false); err != nil {
				return err
			}
			if err := tx.TxCommit(); err != nil {
				return err
			}
			// A commit with nothing in it is fine.
			if err := tx.TxCommit(); err != nil {
				return err
			}
			// Mandatory and unroutable in a transaction: returned at commit.
			returns := tx.NotifyReturn(make(chan amqp.Return, 1))
			if err := tx.Publish("", s.e.Prefix+"nowhere", true, false, text("returned at commit")); err != nil {
				return err
			}
			if err := tx.TxCommit(); err != nil {
				return err
			}
			if err := waitReturn(returns); err != nil {
				return err
			}
			return s.drain(q)
		})},
		{Name: "go-tx-errors", Run: goScene(func(s *scene) error {
			if err := s.expectClosed("tx.commit without tx.select", s.ch.TxCommit()); err != nil {
				return err
			}
			if err := s.expectClosed("tx.rollback without tx.select", s.ch.TxRollback()); err != nil {
				return err
			}
			if err := s.expectClosed("tx.select in confirm mode", s.p.Tx()); err != nil {
				return err
			}
			if err := s.ch.Tx(); err != nil {
				return err
			}
			// tx.select twice is fine.
			if err := s.ch.Tx(); err != nil {
				return err
			}
			return s.expectClosed("confirm.select in tx mode", s.ch.Confirm(false))
		})},
		{Name: "go-publish-properties", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			msg := amqp.Publishing{
				ContentType:     "application/json",
				ContentEncoding: "utf-8",
				DeliveryMode:    amqp.Persistent,
				Priority:        3,
				CorrelationId:   "corr",
				ReplyTo:         "reply.here",
				Expiration:      "60000",
				MessageId:       "id-1",
				Timestamp:       time.Unix(1700000000, 0),
				Type:            "kind",
				UserId:          "guest",
				AppId:           "rabbitdiff",
				Headers: amqp.Table{
					"bool":    true,
					"int8":    int8(-8),
					"int16":   int16(-16),
					"int32":   int32(-32),
					"int64":   int64(-64),
					"float32": float32(1.5),
					"float64": float64(2.25),
					"decimal": amqp.Decimal{Scale: 2, Value: 1234},
					"string":  "text",
					"bytes":   []byte{0, 1, 2},
					"time":    time.Unix(1700000001, 0),
					"table":   amqp.Table{"nested": "yes", "n": int32(1)},
					"array":   []interface{}{"a", int32(2), true, amqp.Table{"t": "u"}},
					"void":    nil,
				},
				Body: []byte(`{"hello":"world"}`),
			}
			if err := s.send("", q, msg); err != nil {
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
			return nil
		})},
		{Name: "go-publish-user-id-mismatch", Run: goScene(func(s *scene) error {
			// RabbitMQ checks user-id against the connection's user.
			msg := text("forged")
			msg.UserId = "someone-else"
			if err := s.p.Publish("", s.e.Prefix+"nowhere", false, false, msg); err != nil {
				return err
			}
			_, err := waitClose(s.p.Channel)
			return err
		})},
		{Name: "go-publish-bodies", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			bodies := []string{"", "x", strings.Repeat("0123456789abcdef", 8192) + "tail", strings.Repeat("z", 131064), strings.Repeat("y", 131065)}
			for _, b := range bodies {
				if err := s.send("", q, amqp.Publishing{Body: []byte(b)}); err != nil {
					return err
				}
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			d, err := s.consume(cch, q, "c", true, nil)
			if err != nil {
				return err
			}
			_, err = nextN(d, len(bodies))
			return err
		})},
		{Name: "go-publish-immediate", Run: goScene(func(s *scene) error {
			err := s.ch.Publish("", s.e.Prefix+"q", false, true, text("immediate"))
			if err != nil {
				return err
			}
			// RabbitMQ answers with a connection error; wait for it.
			select {
			case <-s.c.NotifyClose(make(chan *amqp.Error, 1)):
			case <-time.After(DefaultStepTimeout):
				return errors.New("connection not closed")
			}
			return nil
		})},
	}
}

// waitReturn waits for a basic.return.
func waitReturn(c <-chan amqp.Return) error {
	select {
	case <-c:
		return nil
	case <-time.After(DefaultStepTimeout):
		return errors.New("no basic.return within " + DefaultStepTimeout.String())
	}
}
