package broker

import (
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The broker hands a publish to its queues on the publishing connection's
// own goroutine, for one queue and for many alike: there is no shared
// dispatcher hop to skip. These are the tests that would catch the subtle
// regressions that made RabbitMQ reconsider its one-queue fast path:
// ordering, confirm order, returns before confirms, qos and transactions,
// with one-queue and many-queue publishes interleaved on one channel.

func recv(t *testing.T, d <-chan amqp.Delivery) amqp.Delivery {
	t.Helper()
	select {
	case m := <-d:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	return amqp.Delivery{}
}

func TestInterleavedPublishesKeepOrder(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	for _, q := range []string{"one", "two"} {
		ch.QueueDeclare(q, false, true, false, false, nil)
		ch.QueueBind(q, "", "amq.fanout", false, nil)
	}
	d1, _ := ch.Consume("one", "", true, false, false, false, nil)
	d2, _ := ch.Consume("two", "", true, false, false, false, nil)
	const n = 200
	for i := range n {
		// Even: to "one" alone (the default exchange); odd: to both.
		x, rk := "", "one"
		if i%2 == 1 {
			x, rk = "amq.fanout", ""
		}
		if err := ch.Publish(x, rk, false, false, amqp.Publishing{Body: []byte(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if m := recv(t, d1); string(m.Body) != fmt.Sprint(i) {
			t.Fatalf("queue one: message %d is %q", i, m.Body)
		}
	}
	for i := 1; i < n; i += 2 {
		if m := recv(t, d2); string(m.Body) != fmt.Sprint(i) {
			t.Fatalf("queue two: want %d, got %q", i, m.Body)
		}
	}
}

func TestConfirmOrderAndReturnsBeforeConfirms(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	ch.QueueDeclare("one", false, true, false, false, nil)
	ch.QueueDeclare("two", false, true, false, false, nil)
	ch.QueueBind("one", "", "amq.fanout", false, nil)
	ch.QueueBind("two", "", "amq.fanout", false, nil)
	ch.Consume("one", "", true, false, false, false, nil)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	// amqp091-go's reader hands each frame on in wire order, so a return
	// that came before its confirm is already in returns when the confirm
	// is read.
	returns := ch.NotifyReturn(make(chan amqp.Return, 1000))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1000))
	const n = 90
	for i := range n {
		var x, rk string
		switch i % 3 {
		case 0:
			x, rk = "", "one" // one queue, a waiting consumer
		case 1:
			x, rk = "amq.fanout", "" // two queues
		case 2:
			x, rk = "amq.direct", "nowhere" // unroutable, mandatory: returned
		}
		if err := ch.Publish(x, rk, true, false, amqp.Publishing{Body: []byte{byte(i + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
	var want uint64 = 1
	deadline := time.After(10 * time.Second)
	for want <= n {
		select {
		case c := <-confirms:
			if !c.Ack {
				t.Fatalf("nack for %d", c.DeliveryTag)
			}
			if c.DeliveryTag != want {
				t.Fatalf("confirm %d, want %d: confirms out of order", c.DeliveryTag, want)
			}
			if (want-1)%3 == 2 {
				select {
				case r := <-returns:
					if uint64(r.Body[0]) != want {
						t.Fatalf("confirm %d came with the return of %d", want, r.Body[0])
					}
				default:
					t.Fatalf("publish %d was confirmed before it was returned", want)
				}
			}
			want++
		case <-deadline:
			t.Fatalf("confirms stopped at %d", want)
		}
	}
	select {
	case r := <-returns:
		t.Fatalf("an extra return (%d)", r.Body[0])
	default:
	}
}

func TestQosWithInterleavedPublishes(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	ch.QueueDeclare("one", false, true, false, false, nil)
	ch.QueueDeclare("two", false, true, false, false, nil)
	ch.QueueBind("one", "", "amq.fanout", false, nil)
	ch.QueueBind("two", "", "amq.fanout", false, nil)
	_, cch := dial(t, url)
	if err := cch.Qos(3, 0, false); err != nil {
		t.Fatal(err)
	}
	d, _ := cch.Consume("one", "", false, false, false, false, nil)
	for i := range 10 {
		x, rk := "", "one"
		if i%2 == 1 {
			x, rk = "amq.fanout", ""
		}
		ch.Publish(x, rk, false, false, amqp.Publishing{Body: []byte(fmt.Sprint(i))})
	}
	var got []amqp.Delivery
	for range 3 {
		got = append(got, recv(t, d))
	}
	select {
	case m := <-d:
		t.Fatalf("a fourth delivery (%q) with prefetch 3 and nothing acked", m.Body)
	case <-time.After(200 * time.Millisecond):
	}
	got[0].Ack(false)
	if m := recv(t, d); string(m.Body) != "3" {
		t.Fatalf("after one ack, got %q, want \"3\"", m.Body)
	}
}

func TestTransactionsWithInterleavedPublishes(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	ch.QueueDeclare("one", false, true, false, false, nil)
	ch.QueueDeclare("two", false, true, false, false, nil)
	ch.QueueBind("one", "", "amq.fanout", false, nil)
	ch.QueueBind("two", "", "amq.fanout", false, nil)
	_, cch := dial(t, url)
	d, _ := cch.Consume("one", "", true, false, false, false, nil)
	if err := ch.Tx(); err != nil {
		t.Fatal(err)
	}
	publish := func(prefix string) {
		for i := range 4 {
			x, rk := "", "one"
			if i%2 == 1 {
				x, rk = "amq.fanout", ""
			}
			ch.Publish(x, rk, false, false, amqp.Publishing{Body: []byte(prefix + fmt.Sprint(i))})
		}
	}
	publish("rolled-back ")
	if err := ch.TxRollback(); err != nil {
		t.Fatal(err)
	}
	publish("committed ")
	select {
	case m := <-d:
		t.Fatalf("%q delivered before the commit", m.Body)
	case <-time.After(200 * time.Millisecond):
	}
	if err := ch.TxCommit(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if m := recv(t, d); string(m.Body) != "committed "+fmt.Sprint(i) {
			t.Fatalf("after commit: %q", m.Body)
		}
	}
	if n, _ := cch.QueueDeclarePassive("two", false, true, false, false, nil); n.Messages != 2 {
		t.Fatalf("queue two holds %d, want the 2 committed fanout messages", n.Messages)
	}
}
