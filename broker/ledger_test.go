package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp "github.com/rabbitmq/amqp091-go"
)

// TestMessageLedger takes messages along every path that holds them, with
// poisoning on (TestMain): a fanout to queues with a TTL, with
// x-max-length 0 and with a dead-letter exchange; acks, requeues and
// rejects (dead-lettered, the copy sharing its original's body);
// transactions rolled back and committed; mandatory returns; nacks of a
// reject-publish queue; basic.get; an AMQP 1.0 sender and receiver; and
// queues deleted with messages ready and unacknowledged. Once everything
// is deleted the broker holds no message and counts no byte.
func TestMessageLedger(t *testing.T) {
	b, url := startBroker(t, Config{})
	conn, ch := dial(t, url)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(ch.ExchangeDeclare("lx", "fanout", false, false, false, false, nil))
	queues := map[string]amqp.Table{
		"plain":   nil,
		"ttl":     {"x-message-ttl": int32(1), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dead"},
		"zero":    {"x-max-length": int32(0)},
		"dlx":     {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": "dead"},
		"dead":    nil,
		"refuses": {"x-max-length": int32(1), "x-overflow": "reject-publish"},
	}
	for name, args := range queues {
		_, err := ch.QueueDeclare(name, false, false, false, false, args)
		must(err)
		if name != "dead" {
			must(ch.QueueBind(name, "", "lx", false, nil))
		}
	}
	body := func(i int) amqp.Publishing { return amqp.Publishing{Body: []byte("message " + strconv.Itoa(i))} }
	must(ch.Confirm(false))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 100))
	returns := ch.NotifyReturn(make(chan amqp.Return, 10))
	for i := range 20 {
		must(ch.Publish("lx", "", true, false, body(i)))
	}
	must(ch.Publish("", "nowhere", true, false, body(99)))
	nacked := 0
	for range 21 {
		if c := <-confirms; !c.Ack {
			nacked++
		}
	}
	if nacked != 19 {
		t.Errorf("%d nacks, want 19 (the reject-publish queue took one)", nacked)
	}
	select {
	case <-returns:
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.return for the unroutable mandatory publish")
	}

	// Acks, requeues and rejects on "dlx"; a basic.get from "plain".
	ch2, err := conn.Channel()
	must(err)
	must(ch2.Qos(5, 0, false))
	ds, err := ch2.Consume("dlx", "", false, false, false, false, nil)
	must(err)
	for i := 0; i < 20; {
		d := <-ds
		switch {
		case d.Redelivered || i%3 == 0:
			must(d.Ack(false))
			i++
		case i%3 == 1:
			must(d.Nack(false, true))
		default:
			must(d.Reject(false))
			i++
		}
	}
	if _, ok, err := ch2.Get("plain", true); err != nil || !ok {
		t.Fatalf("basic.get: %v %v", ok, err)
	}
	if _, ok, err := ch2.Get("plain", false); err != nil || !ok {
		t.Fatalf("basic.get: %v %v", ok, err)
	}

	// Transactions.
	tx, err := conn.Channel()
	must(err)
	must(tx.Tx())
	for i := range 3 {
		must(tx.Publish("lx", "", false, false, body(100+i)))
	}
	must(tx.TxRollback())
	for i := range 2 {
		must(tx.Publish("lx", "", false, false, body(200+i)))
	}
	must(tx.TxCommit())

	// AMQP 1.0: a sender to "plain", a receiver of "dead" that accepts
	// some and releases one.
	c10 := dialGoAMQP(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s10, err := c10.NewSession(ctx, nil)
	must(err)
	snd, err := s10.NewSender(ctx, "/queues/plain", nil)
	must(err)
	for i := range 5 {
		must(snd.Send(ctx, goamqp.NewMessage([]byte("over 1.0 "+strconv.Itoa(i))), nil))
	}
	rcv, err := s10.NewReceiver(ctx, "/queues/dead", &goamqp.ReceiverOptions{Credit: 3})
	must(err)
	for i := range 3 {
		m, err := rcv.Receive(ctx, nil)
		must(err)
		if i == 1 {
			must(rcv.ReleaseMessage(ctx, m))
		} else {
			must(rcv.AcceptMessage(ctx, m))
		}
	}
	if b.MessagesHeld() == 0 {
		t.Fatal("no message held while queues hold some")
	}

	// A consumer's unacked deliveries when its queue is deleted, then
	// everything else.
	ch3, err := conn.Channel()
	must(err)
	held, err := ch3.Consume("plain", "", false, false, false, false, nil)
	must(err)
	<-held
	for name := range queues {
		_, err := ch.QueueDelete(name, false, false, false)
		must(err)
	}
	rcv.Close(ctx)
	snd.Close(ctx)
	c10.Close()
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for b.MessagesHeld() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := b.MessagesHeld(); n != 0 {
		t.Fatalf("%d messages held with every queue deleted and every connection closed", n)
	}
	if n := b.mem.used.Load(); n != 0 {
		t.Fatalf("%d bytes counted with every queue deleted and every connection closed", n)
	}
}
