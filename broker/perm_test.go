package broker

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/auth"
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
