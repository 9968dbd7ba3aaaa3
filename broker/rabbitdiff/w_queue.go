package rabbitdiff

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Queues: declare variants, exclusivity, auto-delete, arguments (TTLs,
// lengths, priorities, single active consumer), purge and delete.

func queueWorkloads() []Workload {
	return []Workload{
		{Name: "go-queue-declare", Run: goScene(func(s *scene) error {
			q := s.e.Queue("durable")
			if _, err := s.ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				return err
			}
			for i := range 2 {
				if err := s.sendText("", q, "m"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			// Declaring again reports the counts.
			if _, err := s.ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if _, err := s.consume(cch, q, "c1", false, nil); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, true, false, false, false, nil); err != nil {
				return err
			}
			if err := cch.Close(); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, true, true, false, nil); err != nil {
				return err
			}
			if _, err := s.ch.QueueDelete(q, false, false, false); err != nil {
				return err
			}
			return s.expectClosed("passive declare of a missing queue", func() error {
				_, err := s.ch.QueueDeclarePassive(q, true, false, false, false, nil)
				return err
			}())
		})},
		{Name: "go-queue-server-named", Run: goScene(func(s *scene) error {
			q, err := s.ch.QueueDeclare("", false, false, true, false, nil)
			if err != nil {
				return err
			}
			s.e.Note("server named the queue " + q.Name)
			if err := s.sendText("", q.Name, "to the server-named queue"); err != nil {
				return err
			}
			if err := s.drain(q.Name); err != nil {
				return err
			}
			// A second one gets another name.
			if _, err := s.ch.QueueDeclare("", false, true, false, false, nil); err != nil {
				return err
			}
			// A client may not pick an amq. name.
			return s.expectClosed("declare amq.gen-... by name", func() error {
				_, err := s.ch.QueueDeclare("amq.gen-"+s.e.Prefix, false, false, false, false, nil)
				return err
			}())
		})},
		{Name: "go-queue-reserved-name", Run: goScene(func(s *scene) error {
			if err := s.expectClosed("declare amq.foo", declare(s.ch, "amq.foo", nil)); err != nil {
				return err
			}
			// Passive is allowed to look (and finds nothing).
			_, err := s.ch.QueueDeclarePassive("amq.foo", false, false, false, false, nil)
			return s.expectClosed("passive declare amq.foo", err)
		})},
		{Name: "go-queue-exclusive", Run: goScene(func(s *scene) error {
			q := s.e.Queue("excl")
			if _, err := s.ch.QueueDeclare(q, false, false, true, false, nil); err != nil {
				return err
			}
			if err := s.sendText("", q, "owned"); err != nil {
				return err
			}
			// The owner may redeclare, passively or not.
			if _, err := s.ch.QueueDeclare(q, false, false, true, false, nil); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			other, err := s.e.Dial()
			if err != nil {
				return err
			}
			defer other.Close()
			och, err := other.Channel()
			if err != nil {
				return err
			}
			reopen := func() error {
				och, err = other.Channel()
				return err
			}
			attempts := []struct {
				what string
				call func() error
			}{
				{"declare", func() error { _, err := och.QueueDeclare(q, false, false, true, false, nil); return err }},
				{"declare non-exclusive", func() error { _, err := och.QueueDeclare(q, false, false, false, false, nil); return err }},
				{"passive declare", func() error { _, err := och.QueueDeclarePassive(q, false, false, true, false, nil); return err }},
				{"consume", func() error { _, err := och.Consume(q, "c", true, false, false, false, nil); return err }},
				{"get", func() error { _, _, err := och.Get(q, true); return err }},
				{"purge", func() error { _, err := och.QueuePurge(q, false); return err }},
				{"delete", func() error { _, err := och.QueueDelete(q, false, false, false); return err }},
				{"bind", func() error { return och.QueueBind(q, "k", "amq.direct", false, nil) }},
			}
			for _, a := range attempts {
				if err := a.call(); err != nil {
					if err := reopen(); err != nil {
						return err
					}
				} else {
					s.e.Note(a.what + " from another connection: succeeded")
				}
			}
			// Publishing from another connection is allowed.
			ocp, err := confirmChannel(other)
			if err != nil {
				return err
			}
			if err := ocp.send("", q, text("from the other connection")); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// The queue goes with its owner's connection.
			if err := s.c.Close(); err != nil {
				return err
			}
			_, err = och.QueueDeclarePassive(q, false, false, false, false, nil)
			s.e.Note("after the owner closed: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
		{Name: "go-queue-exclusive-redeclare", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			// Redeclaring a shared queue as exclusive, on its declaring
			// connection.
			_, err = s.ch.QueueDeclare(q, false, false, true, false, nil)
			return s.expectClosed("redeclare as exclusive", err)
		})},
		{Name: "go-queue-auto-delete", Run: goScene(func(s *scene) error {
			q := s.e.Queue("ad")
			if _, err := s.ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
				return err
			}
			idle := s.e.Queue("idle")
			if _, err := s.ch.QueueDeclare(idle, false, true, false, false, nil); err != nil {
				return err
			}
			c1, err := s.c.Channel()
			if err != nil {
				return err
			}
			if _, err := s.consume(c1, q, "c1", true, nil); err != nil {
				return err
			}
			if _, err := s.consume(c1, q, "c2", true, nil); err != nil {
				return err
			}
			if err := c1.Cancel("c1", false); err != nil {
				return err
			}
			// One consumer left: still there.
			if _, err := s.ch.QueueDeclarePassive(q, false, true, false, false, nil); err != nil {
				return err
			}
			if err := c1.Cancel("c2", false); err != nil {
				return err
			}
			// Auto-deletion is asynchronous in RabbitMQ: give it a moment.
			sleep(s.ctx, 200*time.Millisecond)
			_, err = s.ch.QueueDeclarePassive(q, false, true, false, false, nil)
			if err := s.expectClosed("passive declare after the last cancel", err); err != nil {
				return err
			}
			// Never consumed from: it stays.
			_, err = s.ch.QueueDeclarePassive(idle, false, true, false, false, nil)
			return err
		})},
		{Name: "go-queue-inequivalent", Run: goScene(func(s *scene) error {
			q := s.e.Queue("q")
			args := amqp.Table{"x-max-length": int32(10)}
			if _, err := s.ch.QueueDeclare(q, false, false, false, false, args); err != nil {
				return err
			}
			redeclares := []struct {
				what                string
				durable, autoDelete bool
				args                amqp.Table
			}{
				{"durable", true, false, args},
				{"auto-delete", false, true, args},
				{"x-max-length", false, false, amqp.Table{"x-max-length": int32(11)}},
				{"x-max-length type", false, false, amqp.Table{"x-max-length": int64(10)}},
				{"no arguments", false, false, nil},
				{"extra x-message-ttl", false, false, amqp.Table{"x-max-length": int32(10), "x-message-ttl": int32(1000)}},
				{"extra non-x argument", false, false, amqp.Table{"x-max-length": int32(10), "note": "hi"}},
			}
			for _, r := range redeclares {
				_, err := s.ch.QueueDeclare(q, r.durable, r.autoDelete, false, false, r.args)
				if err := s.expectClosed("redeclare with another "+r.what, err); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-queue-invalid-arguments", Run: goScene(func(s *scene) error {
			cases := []struct {
				name string
				args amqp.Table
			}{
				{"len", amqp.Table{"x-max-length": int32(-1)}},
				{"bytes", amqp.Table{"x-max-length-bytes": int32(-1)}},
				{"expires", amqp.Table{"x-expires": int32(0)}},
				{"prio", amqp.Table{"x-max-priority": int32(300)}},
				{"prio-neg", amqp.Table{"x-max-priority": int32(-1)}},
				{"ttl-str", amqp.Table{"x-message-ttl": "1000"}},
				{"ttl-neg", amqp.Table{"x-message-ttl": int32(-5)}},
				{"overflow", amqp.Table{"x-overflow": "drop-tail"}},
				{"dlx-int", amqp.Table{"x-dead-letter-exchange": int32(1)}},
				{"dlrk-alone", amqp.Table{"x-dead-letter-routing-key": "k"}},
				{"sac-str", amqp.Table{"x-single-active-consumer": "yes"}},
				{"qtype", amqp.Table{"x-queue-type": "nope"}},
			}
			for _, c := range cases {
				q := s.e.Queue(c.name)
				if err := s.expectClosed("declare with "+c.name, declare(s.ch, q, c.args)); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-queue-message-ttl", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", amqp.Table{"x-message-ttl": int32(100)})
			if err != nil {
				return err
			}
			for i := range 2 {
				if err := s.sendText("", q, "short-lived "+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			sleep(s.ctx, 400*time.Millisecond)
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// TTL 0: only a waiting consumer could have it.
			q0, err := s.queue("q0", amqp.Table{"x-message-ttl": int32(0)})
			if err != nil {
				return err
			}
			if err := s.sendText("", q0, "gone at once"); err != nil {
				return err
			}
			return s.drain(q0)
		})},
		{Name: "go-queue-expires", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", amqp.Table{"x-expires": int32(150)})
			if err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			sleep(s.ctx, 600*time.Millisecond)
			_, err = s.ch.QueueDeclarePassive(q, false, false, false, false, nil)
			return s.expectClosed("passive declare after x-expires", err)
		})},
		{Name: "go-queue-per-message-expiration", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			long := text("long-lived at the head")
			long.Expiration = "60000"
			short := text("short-lived behind it")
			short.Expiration = "50"
			if err := s.send("", q, long); err != nil {
				return err
			}
			if err := s.send("", q, short); err != nil {
				return err
			}
			sleep(s.ctx, 300*time.Millisecond)
			// The expired message is not at the head: still counted.
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			gone := text("expired at the head")
			gone.Expiration = "50"
			if err := s.send("", q, gone); err != nil {
				return err
			}
			sleep(s.ctx, 300*time.Millisecond)
			if err := s.drain(q); err != nil {
				return err
			}
			zero := text("expiration 0")
			zero.Expiration = "0"
			if err := s.send("", q, zero); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// A message TTL and a queue TTL: the lower wins.
			qt, err := s.queue("qt", amqp.Table{"x-message-ttl": int32(50)})
			if err != nil {
				return err
			}
			both := text("queue ttl wins")
			both.Expiration = "60000"
			if err := s.send("", qt, both); err != nil {
				return err
			}
			sleep(s.ctx, 300*time.Millisecond)
			if err := s.drain(qt); err != nil {
				return err
			}
			bad := text("bad expiration")
			bad.Expiration = "soon"
			if err := s.p.Publish("", q, false, false, bad); err != nil {
				return err
			}
			_, err = waitClose(s.p.Channel)
			return err
		})},
		overflowWorkload("go-queue-max-length-drop-head", amqp.Table{"x-max-length": int32(2)}),
		overflowWorkload("go-queue-max-length-reject-publish", amqp.Table{"x-max-length": int32(2), "x-overflow": "reject-publish"}),
		overflowWorkload("go-queue-max-length-bytes", amqp.Table{"x-max-length-bytes": int32(10)}),
		overflowWorkload("go-queue-max-length-bytes-reject-publish", amqp.Table{"x-max-length-bytes": int32(10), "x-overflow": "reject-publish"}),
		overflowWorkload("go-queue-max-length-zero", amqp.Table{"x-max-length": int32(0)}),
		{Name: "go-queue-max-priority", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", amqp.Table{"x-max-priority": int32(5)})
			if err != nil {
				return err
			}
			for _, p := range []uint8{1, 5, 3, 9, 0, 5} {
				msg := text("priority " + strconv.Itoa(int(p)))
				msg.Priority = p
				if err := s.send("", q, msg); err != nil {
					return err
				}
			}
			plain := text("no priority")
			if err := s.send("", q, plain); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// Without x-max-priority, priorities are ignored.
			fifo, err := s.queue("fifo", nil)
			if err != nil {
				return err
			}
			for _, p := range []uint8{1, 5} {
				msg := text("fifo priority " + strconv.Itoa(int(p)))
				msg.Priority = p
				if err := s.send("", fifo, msg); err != nil {
					return err
				}
			}
			return s.drain(fifo)
		})},
		{Name: "go-queue-purge", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			for i := range 3 {
				if err := s.sendText("", q, "m"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			// An unacknowledged message is not purged.
			if _, _, err := s.ch.Get(q, false); err != nil {
				return err
			}
			if _, err := s.ch.QueuePurge(q, false); err != nil {
				return err
			}
			if _, err := s.ch.QueuePurge(q, false); err != nil {
				return err
			}
			if err := s.ch.Nack(1, false, true); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			_, err = s.ch.QueuePurge(s.e.Prefix+"missing", false)
			return s.expectClosed("purge a missing queue", err)
		})},
		{Name: "go-queue-delete", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			cch, err := s.c.Channel()
			if err != nil {
				return err
			}
			if _, err := s.consume(cch, q, "c", false, nil); err != nil {
				return err
			}
			_, err = s.ch.QueueDelete(q, true, false, false)
			if err := s.expectClosed("delete if-unused with a consumer", err); err != nil {
				return err
			}
			if err := cch.Cancel("c", false); err != nil {
				return err
			}
			if err := s.sendText("", q, "keeps it non-empty"); err != nil {
				return err
			}
			_, err = s.ch.QueueDelete(q, false, true, false)
			if err := s.expectClosed("delete if-empty with a message", err); err != nil {
				return err
			}
			if _, err := s.ch.QueueDelete(q, true, false, false); err != nil {
				return err
			}
			// Deleting a missing queue is fine and counts nothing.
			if _, err := s.ch.QueueDelete(q, false, false, false); err != nil {
				return err
			}
			empty, err := s.queue("empty", nil)
			if err != nil {
				return err
			}
			_, err = s.ch.QueueDelete(empty, true, true, false)
			return err
		})},
		{Name: "go-queue-single-active-consumer", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", amqp.Table{"x-single-active-consumer": true})
			if err != nil {
				return err
			}
			c1, err := s.c.Channel()
			if err != nil {
				return err
			}
			c2, err := s.c.Channel()
			if err != nil {
				return err
			}
			d1, err := s.consume(c1, q, "first", true, nil)
			if err != nil {
				return err
			}
			d2, err := s.consume(c2, q, "second", true, nil)
			if err != nil {
				return err
			}
			for i := range 2 {
				if err := s.sendText("", q, "while first is active "+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			if _, err := nextN(d1, 2); err != nil {
				return err
			}
			if err := quiet(d2, 100*time.Millisecond); err != nil {
				return err
			}
			if err := c1.Cancel("first", false); err != nil {
				return err
			}
			if err := s.sendText("", q, "now second is active"); err != nil {
				return err
			}
			if _, err := next(d2); err != nil {
				return err
			}
			if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
				return err
			}
			return nil
		})},
	}
}

// overflowWorkload publishes three 5-byte messages to a queue with args
// and drains it: the limit and x-overflow decide which remain and which
// publishes are nacked.
func overflowWorkload(name string, args amqp.Table) Workload {
	return Workload{Name: name, Run: goScene(func(s *scene) error {
		q, err := s.queue("q", args)
		if err != nil {
			return err
		}
		for _, b := range []string{"first", "secnd", "third"} {
			if err := s.sendText("", q, b); err != nil {
				return err
			}
		}
		if _, err := s.ch.QueueDeclarePassive(q, false, false, false, false, nil); err != nil {
			return err
		}
		return s.drain(q)
	})}
}
