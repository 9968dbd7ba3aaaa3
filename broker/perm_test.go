package broker

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/capture"
)

// TestPublishPermissionCacheFollowsStore: the permission check a
// connection remembers for its last exchange is forgotten when the user
// store changes, so a write permission taken away refuses the next
// publish on a connection already open.
func TestPublishPermissionCacheFollowsStore(t *testing.T) {
	users := auth.NewDefaultStore()
	_, url := startBroker(t, Config{Users: users})
	_, ch := dial(t, url)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	if err := ch.Publish("amq.fanout", "", false, false, amqp.Publishing{Body: []byte("allowed")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-confirms:
	case <-time.After(5 * time.Second):
		t.Fatal("no confirm for the allowed publish")
	}
	if err := users.SetPermissions("guest", "/", ".*", "^$", ".*"); err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("amq.fanout", "", false, false, amqp.Publishing{Body: []byte("refused")}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-closed:
		if e == nil || e.Code != 403 {
			t.Fatalf("channel closed with %v, want 403 ACCESS_REFUSED", e)
		}
	case c := <-confirms:
		t.Fatalf("the publish after write was taken away was confirmed (%+v)", c)
	case <-time.After(5 * time.Second):
		t.Fatal("the channel was not closed")
	}
}

// stuckHandler is a tap handler that takes nothing until released.
type stuckHandler struct{ release chan struct{} }

func (h stuckHandler) Data(*capture.Flow, bool, []byte, time.Time) { <-h.release }
func (h stuckHandler) Gap(*capture.Flow, bool, int, time.Time)     {}
func (h stuckHandler) Close(*capture.Flow, time.Time)              {}

// TestTapStatsCountDrops: a tap that cannot keep up never slows a client,
// and TapStats says how much of the traffic it missed.
func TestTapStatsCountDrops(t *testing.T) {
	h := stuckHandler{release: make(chan struct{})}
	b, url := startBroker(t, Config{Tap: capture.NewSerial(h), TapBuffer: 4096})
	t.Cleanup(func() { close(h.release) })
	_, ch := dial(t, url)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 64))
	body := make([]byte, 1024)
	for range 64 {
		if err := ch.Publish("amq.fanout", "", false, false, amqp.Publishing{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	for range 64 {
		select {
		case <-confirms:
		case <-time.After(10 * time.Second):
			t.Fatal("a stuck tap delayed the client")
		}
	}
	handed, dropped := b.TapStats()
	// What was not dropped is at most the batch the handler is stuck on
	// and the buffer behind it, 4 KiB each.
	if handed < 64*1024 || dropped <= 0 || handed-dropped > 2*4096 {
		t.Errorf("TapStats %d handed, %d dropped: want at least 64 KiB handed and all but two 4 KiB buffers dropped", handed, dropped)
	}
}
