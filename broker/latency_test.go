package broker

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// TestLatencyHistograms: each queue and exchange counts publish-to-deliver
// once per message (a redelivery is not a second first delivery) and
// deliver-to-ack per acknowledgement; an ack held back 30 ms shows in
// the deliver-to-ack buckets and percentiles.
func TestLatencyHistograms(t *testing.T) {
	b, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	if err := ch.ExchangeDeclare("lat-x", "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("lat-q", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("lat-q", "k", "lat-x", false, nil); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := ch.Publish("lat-x", "k", false, false, amqp.Publishing{Body: []byte("m")}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := ch.Consume("lat-q", "c", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := <-msgs
	if err := first.Nack(false, true); err != nil { // comes back redelivered
		t.Fatal(err)
	}
	for range 5 {
		select {
		case m := <-msgs:
			time.Sleep(30 * time.Millisecond)
			if err := m.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a delivery did not come")
		}
	}
	if _, err := ch.QueueDeclarePassive("lat-q", false, true, false, false, nil); err != nil { // the acks are in
		t.Fatal(err)
	}
	var q state.Queue
	for _, sq := range b.Queues() {
		if sq.Name == "lat-q" {
			q = sq
		}
	}
	var x state.Exchange
	for _, sx := range b.Exchanges() {
		if sx.Name == "lat-x" {
			x = sx
		}
	}
	for name, l := range map[string]state.Latency{"queue": q.PublishToDeliver, "exchange": x.PublishToDeliver} {
		if l.Count != 5 {
			t.Errorf("%s publish-to-deliver counted %d, want 5 (the redelivery is not counted)", name, l.Count)
		}
	}
	for name, l := range map[string]state.Latency{"queue": q.DeliverToAck, "exchange": x.DeliverToAck} {
		var sum uint64
		for _, n := range l.Buckets {
			sum += n
		}
		if l.Count != 5 || sum != 5 {
			t.Errorf("%s deliver-to-ack counted %d (buckets %v), want 5", name, l.Count, l.Buckets)
		}
		// Every ack came at least 30 ms after its delivery.
		if l.Buckets[0]+l.Buckets[1] != 0 || l.P50 < 30*time.Millisecond {
			t.Errorf("%s deliver-to-ack %v p50 %v: acks held 30 ms are not that late", name, l.Buckets, l.P50)
		}
	}
}
