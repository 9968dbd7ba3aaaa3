package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestFlowHoldsPublisherBehindSlowConsumer: a publisher faster than the
// queue's consumer is held back (its connection in state "flow") so that
// the backlog stays near flowHigh instead of growing with the run, and
// every message still arrives.
func TestFlowHoldsPublisherBehindSlowConsumer(t *testing.T) {
	b, url := startBroker(t, Config{})
	_, pub := dial(t, url)
	_, sub := dial(t, url)
	if _, err := pub.QueueDeclare("flow-q", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := sub.Qos(50, 0, false); err != nil {
		t.Fatal(err)
	}
	deliveries, err := sub.Consume("flow-q", "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	const total = 30000
	var received atomic.Int64
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for d := range deliveries {
			if n := received.Add(1); n%50 == 0 {
				time.Sleep(2 * time.Millisecond) // a slow consumer: at most 25k msg/s
			}
			d.Ack(false)
			if received.Load() == total {
				return
			}
		}
	}()

	var maxReady atomic.Int64
	var sawFlow atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			for _, q := range b.Queues() {
				if q.Name == "flow-q" && int64(q.Ready) > maxReady.Load() {
					maxReady.Store(int64(q.Ready))
				}
			}
			for _, c := range b.Connections() {
				if c.State == stateFlow {
					sawFlow.Store(true)
				}
			}
		}
	})
	for i := range total {
		if err := pub.Publish("", "flow-q", false, false, amqp.Publishing{Body: []byte("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-consumed:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d of %d messages received in 60 s", received.Load(), total)
	}
	close(stop)
	wg.Wait()
	// A read batch (64 KiB of frames, about 700 publishes of this size)
	// may land on top of flowHigh before the reader waits.
	if m := maxReady.Load(); m > flowHigh+2000 {
		t.Errorf("the backlog reached %d messages: the publisher was not held back (flowHigh %d)", m, flowHigh)
	}
	if !sawFlow.Load() {
		t.Error("the publishing connection was never seen in state flow")
	}
}

// TestFlowIgnoresStoppedConsumer: a consumer that stops acking does not
// stop the publisher: flow waits only for a queue that drains.
func TestFlowIgnoresStoppedConsumer(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, pub := dial(t, url)
	_, sub := dial(t, url)
	if _, err := pub.QueueDeclare("flow-stuck", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := sub.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Consume("flow-stuck", "", false, false, false, false, nil); err != nil {
		t.Fatal(err) // deliveries are never acked
	}
	if err := pub.Confirm(false); err != nil {
		t.Fatal(err)
	}
	const total = 3 * flowHigh
	confirms := pub.NotifyPublish(make(chan amqp.Confirmation, total))
	for i := range total {
		if err := pub.Publish("", "flow-stuck", false, false, amqp.Publishing{Body: []byte("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(30 * time.Second)
	for i := range total {
		select {
		case <-confirms:
		case <-deadline:
			t.Fatalf("%d of %d publishes confirmed in 30 s: the publisher is held behind a consumer that stopped", i, total)
		}
	}
}
