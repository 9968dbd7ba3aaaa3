package rabbitdiff

import (
	"strconv"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Exchanges: types and routing, the default and amq.* exchanges,
// exchange-to-exchange bindings, alternate and internal exchanges,
// declares and deletes.

func exchangeWorkloads() []Workload {
	return []Workload{
		{Name: "go-exchange-direct", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			q1, q2 := s.e.Queue("q1"), s.e.Queue("q2")
			for _, b := range []struct{ q, k string }{{q1, "k1"}, {q2, "k2"}, {q2, "k1"}, {q1, ""}} {
				if err := declare(s.ch, b.q, nil); err != nil {
					return err
				}
				if err := s.ch.QueueBind(b.q, b.k, x, false, nil); err != nil {
					return err
				}
			}
			for _, k := range []string{"k1", "k2", "k3", "", "K1"} {
				if err := s.sendText(x, k, "to "+k); err != nil {
					return err
				}
			}
			if err := s.drain(q1); err != nil {
				return err
			}
			return s.drain(q2)
		})},
		{Name: "go-exchange-fanout", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "fanout", nil)
			if err != nil {
				return err
			}
			q1, q2 := s.e.Queue("q1"), s.e.Queue("q2")
			for i, q := range []string{q1, q2} {
				if err := declare(s.ch, q, nil); err != nil {
					return err
				}
				if err := s.ch.QueueBind(q, "ignored"+strconv.Itoa(i), x, false, nil); err != nil {
					return err
				}
			}
			// A second binding of q1 with another key: fanout still delivers
			// one copy.
			if err := s.ch.QueueBind(q1, "other", x, false, nil); err != nil {
				return err
			}
			for _, k := range []string{"a", ""} {
				if err := s.sendText(x, k, "fan "+k); err != nil {
					return err
				}
			}
			if err := s.drain(q1); err != nil {
				return err
			}
			return s.drain(q2)
		})},
		{Name: "go-exchange-topic", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "topic", nil)
			if err != nil {
				return err
			}
			patterns := []string{"*", "#", "a.*", "a.#", "#.b", "a.*.c", "a.#.c", "*.*", "", "a..c",
				"#.#", "a.*.#", "*.b.#", "#.a.#", "a", ".", "*.", "#.", "a.#.#.c"}
			var queues []string
			for i, p := range patterns {
				q := s.e.Queue("t" + strconv.Itoa(i))
				queues = append(queues, q)
				if err := declare(s.ch, q, nil); err != nil {
					return err
				}
				if err := s.ch.QueueBind(q, p, x, false, nil); err != nil {
					return err
				}
			}
			keys := []string{"a", "a.b", "a.b.c", "", "a..c", ".a", "a.", "b", "x.b", "a.x.y.c", ".", "a.c", "A.b", "a.b.b"}
			for _, k := range keys {
				if err := s.sendText(x, k, "rk="+k); err != nil {
					return err
				}
			}
			for _, q := range queues {
				if err := s.drain(q); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-exchange-headers", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "headers", nil)
			if err != nil {
				return err
			}
			bindings := []amqp.Table{
				{"x-match": "all", "a": int32(1), "b": "two"},
				{"x-match": "any", "a": int32(1), "b": "two"},
				{"x-match": "all-with-x", "a": int32(1), "x-trace": "on"},
				{"x-match": "any-with-x", "x-trace": "on", "c": "three"},
				{"a": int32(1)}, // no x-match: all
				{},              // nothing to match: everything
				{"x-match": "all", "x-trace": "on"},
				{"x-match": "any", "x-trace": "on"},
				{"x-match": "all", "v": nil},
			}
			var queues []string
			for i, args := range bindings {
				q := s.e.Queue("h" + strconv.Itoa(i))
				queues = append(queues, q)
				if err := declare(s.ch, q, nil); err != nil {
					return err
				}
				if err := s.ch.QueueBind(q, "", x, false, args); err != nil {
					return err
				}
			}
			messages := []amqp.Table{
				{"a": int32(1), "b": "two"},
				{"a": int32(1)},
				{"b": "two", "c": "three"},
				nil,
				{"x-trace": "on"},
				{"a": int32(1), "x-trace": "on"},
				{"a": "1"},      // a string is not the integer 1
				{"a": int64(1)}, // another integer type with the same value
				{"a": int32(2), "b": "two"},
				{"v": nil},
				{"c": "three", "x-trace": "off"},
			}
			for i, h := range messages {
				msg := text("m" + strconv.Itoa(i))
				msg.Headers = h
				if err := s.send(x, "", msg); err != nil {
					return err
				}
			}
			for _, q := range queues {
				if err := s.drain(q); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-exchange-headers-invalid-x-match", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "headers", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			return s.expectClosed("bind with x-match=some", s.ch.QueueBind(q, "", x, false, amqp.Table{"x-match": "some"}))
		})},
		{Name: "go-exchange-default", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if err := s.sendText("", q, "by name"); err != nil {
				return err
			}
			if err := s.sendText("", s.e.Prefix+"missing", "nowhere"); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			if err := s.expectClosed("bind to the default exchange", s.ch.QueueBind(q, "k", "", false, nil)); err != nil {
				return err
			}
			if err := s.expectClosed("unbind from the default exchange", s.ch.QueueUnbind(q, q, "", nil)); err != nil {
				return err
			}
			if err := s.expectClosed("delete the default exchange", s.ch.ExchangeDelete("", false, false)); err != nil {
				return err
			}
			if err := s.expectClosed("declare the default exchange", s.ch.ExchangeDeclare("", "direct", true, false, false, false, nil)); err != nil {
				return err
			}
			return s.expectClosed("passive declare of the default exchange", s.ch.ExchangeDeclarePassive("", "direct", true, false, false, false, nil))
		})},
		{Name: "go-exchange-amq-reserved", Run: goScene(func(s *scene) error {
			if err := s.expectClosed("declare amq.<run>", s.ch.ExchangeDeclare("amq."+s.e.Prefix+"x", "direct", false, false, false, false, nil)); err != nil {
				return err
			}
			if err := s.expectClosed("declare amq.direct", s.ch.ExchangeDeclare("amq.direct", "direct", true, false, false, false, nil)); err != nil {
				return err
			}
			if err := s.ch.ExchangeDeclarePassive("amq.topic", "topic", true, false, false, false, nil); err != nil {
				return err
			}
			if err := s.expectClosed("delete amq.direct", s.ch.ExchangeDelete("amq.direct", false, false)); err != nil {
				return err
			}
			if err := s.expectClosed("delete amq.fanout if unused", s.ch.ExchangeDelete("amq.fanout", true, false)); err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			for _, x := range []struct{ name, key string }{{"amq.direct", s.e.Prefix + "k"}, {"amq.topic", s.e.Prefix + "#"}, {"amq.fanout", ""}} {
				if err := s.ch.QueueBind(q, x.key, x.name, false, nil); err != nil {
					return err
				}
			}
			if err := s.sendText("amq.direct", s.e.Prefix+"k", "via amq.direct"); err != nil {
				return err
			}
			if err := s.sendText("amq.topic", s.e.Prefix+"a.b", "via amq.topic"); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "", "amq.fanout", nil); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			for _, x := range []string{"amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match", "amq.rabbitmq.trace"} {
				if err := s.ch.ExchangeDeclarePassive(x, "", false, false, false, false, nil); err != nil {
					if err := s.reopen(); err != nil {
						return err
					}
				}
			}
			return nil
		})},
		{Name: "go-exchange-to-exchange", Run: goScene(func(s *scene) error {
			x1, err := s.exchange("x1", "direct", nil)
			if err != nil {
				return err
			}
			x2, err := s.exchange("x2", "fanout", nil)
			if err != nil {
				return err
			}
			x3, err := s.exchange("x3", "topic", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			steps := []error{
				s.ch.ExchangeBind(x2, "k", x1, false, nil),
				s.ch.ExchangeBind(x3, "k", x1, false, nil),
				s.ch.QueueBind(q, "", x2, false, nil),
				s.ch.QueueBind(q, "#", x3, false, nil),
				// A loop: routing must still deliver one copy per queue.
				s.ch.ExchangeBind(x1, "", x2, false, nil),
			}
			for _, err := range steps {
				if err != nil {
					return err
				}
			}
			for _, k := range []string{"k", "other"} {
				if err := s.sendText(x1, k, "via x1 "+k); err != nil {
					return err
				}
			}
			if err := s.drain(q); err != nil {
				return err
			}
			if err := s.ch.ExchangeUnbind(x2, "k", x1, false, nil); err != nil {
				return err
			}
			if err := s.ch.ExchangeUnbind(x3, "k", x1, false, nil); err != nil {
				return err
			}
			if err := s.sendText(x1, "k", "after unbind"); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// Unbinding what is not bound is fine.
			if err := s.ch.ExchangeUnbind(x2, "nope", x1, false, nil); err != nil {
				return err
			}
			if err := s.expectClosed("bind from a missing exchange", s.ch.ExchangeBind(x2, "k", s.e.Prefix+"missing", false, nil)); err != nil {
				return err
			}
			return s.expectClosed("bind to a missing exchange", s.ch.ExchangeBind(s.e.Prefix+"missing", "k", x1, false, nil))
		})},
		{Name: "go-exchange-alternate", Run: goScene(func(s *scene) error {
			ae, err := s.exchange("ae", "fanout", nil)
			if err != nil {
				return err
			}
			x, err := s.exchange("x", "direct", amqp.Table{"alternate-exchange": ae})
			if err != nil {
				return err
			}
			xm, err := s.exchange("xm", "direct", amqp.Table{"alternate-exchange": s.e.Prefix + "missing"})
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			qae, err := s.queue("qae", nil)
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "k", x, false, nil); err != nil {
				return err
			}
			if err := s.ch.QueueBind(qae, "", ae, false, nil); err != nil {
				return err
			}
			if err := s.sendText(x, "k", "routed"); err != nil {
				return err
			}
			if err := s.sendText(x, "other", "to the alternate"); err != nil {
				return err
			}
			// Mandatory: routed by the alternate, so no basic.return.
			if err := s.p.sendFlags(x, "other", true, text("mandatory to the alternate")); err != nil {
				return err
			}
			// A missing alternate: unroutable, returned.
			if err := s.p.sendFlags(xm, "k", true, text("missing alternate")); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			return s.drain(qae)
		})},
		{Name: "go-exchange-internal", Run: goScene(func(s *scene) error {
			xi := s.e.Exchange("internal")
			if err := s.ch.ExchangeDeclare(xi, "fanout", false, false, true, false, nil); err != nil {
				return err
			}
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "", xi, false, nil); err != nil {
				return err
			}
			if err := s.ch.ExchangeBind(xi, "k", x, false, nil); err != nil {
				return err
			}
			if err := s.sendText(x, "k", "through the internal exchange"); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// Publishing to it directly closes the publishing channel.
			if err := s.p.Publish(xi, "", false, false, text("direct")); err != nil {
				return err
			}
			if _, err := waitClose(s.p.Channel); err != nil {
				return err
			}
			return nil
		})},
		{Name: "go-exchange-passive", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			// Passive ignores type and flags.
			if err := s.ch.ExchangeDeclarePassive(x, "fanout", true, true, true, false, amqp.Table{"a": "b"}); err != nil {
				return err
			}
			return s.expectClosed("passive declare of a missing exchange", s.ch.ExchangeDeclarePassive(s.e.Prefix+"missing", "direct", false, false, false, false, nil))
		})},
		{Name: "go-exchange-inequivalent", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "direct", amqp.Table{"alternate-exchange": "ae1"})
			if err != nil {
				return err
			}
			// The same declaration again is fine.
			if err := s.ch.ExchangeDeclare(x, "direct", false, false, false, false, amqp.Table{"alternate-exchange": "ae1"}); err != nil {
				return err
			}
			redeclares := []struct {
				what                          string
				kind                          string
				durable, autoDelete, internal bool
				args                          amqp.Table
			}{
				{"type", "fanout", false, false, false, amqp.Table{"alternate-exchange": "ae1"}},
				{"durable", "direct", true, false, false, amqp.Table{"alternate-exchange": "ae1"}},
				{"auto-delete", "direct", false, true, false, amqp.Table{"alternate-exchange": "ae1"}},
				{"internal", "direct", false, false, true, amqp.Table{"alternate-exchange": "ae1"}},
				{"alternate-exchange", "direct", false, false, false, amqp.Table{"alternate-exchange": "ae2"}},
				{"no arguments", "direct", false, false, false, nil},
				{"extra argument", "direct", false, false, false, amqp.Table{"alternate-exchange": "ae1", "x-other": "v"}},
			}
			for _, r := range redeclares {
				if err := s.expectClosed("redeclare with another "+r.what, s.ch.ExchangeDeclare(x, r.kind, r.durable, r.autoDelete, r.internal, false, r.args)); err != nil {
					return err
				}
			}
			return nil
		})},
		{Name: "go-exchange-invalid-type", Run: goScene(func(s *scene) error {
			// Not "foo": RabbitMQ says "invalid exchange type" for a name that
			// happens to be an atom of its Erlang VM and "unknown exchange
			// type" for any other, and no other broker can know its atoms.
			err := s.ch.ExchangeDeclare(s.e.Exchange("x"), "x-wiretap-no-such-type", false, false, false, false, nil)
			s.e.Note("declare of an unknown type: reply code " + strconv.Itoa(codeOf(err)))
			return nil
		})},
		{Name: "go-exchange-delete-if-unused", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "k", x, false, nil); err != nil {
				return err
			}
			if err := s.expectClosed("delete if-unused with a binding", s.ch.ExchangeDelete(x, true, false)); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "k", x, nil); err != nil {
				return err
			}
			if err := s.ch.ExchangeDelete(x, true, false); err != nil {
				return err
			}
			// Deleting what is not there is fine.
			if err := s.ch.ExchangeDelete(x, false, false); err != nil {
				return err
			}
			// An exchange-to-exchange binding makes its source in use; being a
			// destination does not count.
			src, err := s.exchange("src", "fanout", nil)
			if err != nil {
				return err
			}
			dst, err := s.exchange("dst", "fanout", nil)
			if err != nil {
				return err
			}
			if err := s.ch.ExchangeBind(dst, "", src, false, nil); err != nil {
				return err
			}
			if err := s.expectClosed("delete a source if unused", s.ch.ExchangeDelete(src, true, false)); err != nil {
				return err
			}
			if err := s.expectClosed("delete a destination if unused", s.ch.ExchangeDelete(dst, true, false)); err != nil {
				return err
			}
			// The binding went with the destination.
			return s.expectClosed("delete the source if unused again", s.ch.ExchangeDelete(src, true, false))
		})},
		{Name: "go-exchange-auto-delete", Run: goScene(func(s *scene) error {
			x := s.e.Exchange("x")
			if err := s.ch.ExchangeDeclare(x, "direct", false, true, false, false, nil); err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			// Never bound: it stays.
			if err := s.ch.ExchangeDeclarePassive(x, "direct", false, true, false, false, nil); err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "k1", x, false, nil); err != nil {
				return err
			}
			if err := s.ch.QueueBind(q, "k2", x, false, nil); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "k1", x, nil); err != nil {
				return err
			}
			if err := s.ch.ExchangeDeclarePassive(x, "direct", false, true, false, false, nil); err != nil {
				return err
			}
			// The last binding goes: so does the exchange.
			if err := s.ch.QueueUnbind(q, "k2", x, nil); err != nil {
				return err
			}
			return s.expectClosed("passive declare after the last unbind", s.ch.ExchangeDeclarePassive(x, "direct", false, true, false, false, nil))
		})},
		{Name: "go-exchange-missing", Run: goScene(func(s *scene) error {
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			missing := s.e.Prefix + "missing"
			if err := s.expectClosed("bind to a missing exchange", s.ch.QueueBind(q, "k", missing, false, nil)); err != nil {
				return err
			}
			if err := s.expectClosed("bind a missing queue", s.ch.QueueBind(missing, "k", x, false, nil)); err != nil {
				return err
			}
			if err := s.expectClosed("unbind from a missing exchange", s.ch.QueueUnbind(q, "k", missing, nil)); err != nil {
				return err
			}
			// Publishing to a missing exchange closes the channel.
			if err := s.p.Publish(missing, "k", false, false, text("lost")); err != nil {
				return err
			}
			_, err = waitClose(s.p.Channel)
			return err
		})},
		{Name: "go-binding-arguments", Run: goScene(func(s *scene) error {
			x, err := s.exchange("x", "direct", nil)
			if err != nil {
				return err
			}
			q, err := s.queue("q", nil)
			if err != nil {
				return err
			}
			a1, a2 := amqp.Table{"a": int32(1)}, amqp.Table{"a": int32(2)}
			for _, args := range []amqp.Table{a1, a2, a1} {
				if err := s.ch.QueueBind(q, "k", x, false, args); err != nil {
					return err
				}
			}
			if err := s.sendText(x, "k", "two bindings, one copy"); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "k", x, a1); err != nil {
				return err
			}
			if err := s.sendText(x, "k", "the a=2 binding still routes"); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "k", x, nil); err != nil {
				return err
			}
			if err := s.sendText(x, "k", "unbinding without arguments removed nothing"); err != nil {
				return err
			}
			if err := s.ch.QueueUnbind(q, "k", x, a2); err != nil {
				return err
			}
			if err := s.sendText(x, "k", "no binding left"); err != nil {
				return err
			}
			if err := s.drain(q); err != nil {
				return err
			}
			// Headers bindings that differ only in arguments route
			// independently.
			h, err := s.exchange("h", "headers", nil)
			if err != nil {
				return err
			}
			for _, args := range []amqp.Table{{"x-match": "all", "c": "1"}, {"x-match": "all", "c": "2"}} {
				if err := s.ch.QueueBind(q, "", h, false, args); err != nil {
					return err
				}
			}
			if err := s.ch.QueueUnbind(q, "", h, amqp.Table{"x-match": "all", "c": "1"}); err != nil {
				return err
			}
			for _, c := range []string{"1", "2"} {
				msg := text("c=" + c)
				msg.Headers = amqp.Table{"c": c}
				if err := s.send(h, "", msg); err != nil {
					return err
				}
			}
			return s.drain(q)
		})},
	}
}
