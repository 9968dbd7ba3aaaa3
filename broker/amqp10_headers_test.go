package broker

import (
	"context"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp091go "github.com/rabbitmq/amqp091-go"
)

// TestAMQP10HeadersExchange: go-amqp publishes to a headers exchange,
// which routes on the application-properties (and, under the -with-x
// modes, the annotations) as RabbitMQ 4 does: x-match all and any, values
// compared by value across integer widths, a pair of bindings that differ
// only in their arguments being two bindings (unbinding one leaves the
// other), and a list value not being a header at all, so that not even a
// presence test (a void argument) matches it, as RabbitMQ 4 leaves
// complex 1.0 values out of the routing headers.
func TestAMQP10HeadersExchange(t *testing.T) {
	_, url := startBroker(t, Config{})
	c, ch := dial(t, url)
	defer c.Close()
	if err := ch.ExchangeDeclare("hx", "headers", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	binds := []struct {
		q    string
		args amqp091go.Table
	}{
		{"h-all", amqp091go.Table{"x-match": "all", "color": "red", "size": int32(5)}},
		{"h-any", amqp091go.Table{"x-match": "any", "color": "blue", "shape": "round"}},
		{"h-withx", amqp091go.Table{"x-match": "all-with-x", "x-opt-k": "v"}},
		{"h-x-ignored", amqp091go.Table{"x-match": "all", "x-opt-k": "other"}}, // x- keys not compared under all
		{"h-present", amqp091go.Table{"x-match": "all", "tags": nil}},          // void: presence only
		{"h-pair", amqp091go.Table{"x-match": "all", "a": int8(1)}},
		{"h-pair", amqp091go.Table{"x-match": "all", "b": int64(2)}},
	}
	for _, b := range binds {
		if _, err := ch.QueueDeclare(b.q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(b.q, "", "hx", false, b.args); err != nil {
			t.Fatal(err)
		}
	}
	conn := dialGoAMQP(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/exchanges/hx", nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(app map[string]any, ann goamqp.Annotations) {
		t.Helper()
		// Unsettled: Send returns once the broker has routed it.
		if err := snd.Send(ctx, &goamqp.Message{ApplicationProperties: app, Annotations: ann, Data: [][]byte{[]byte("m")}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	send(map[string]any{"color": "red", "size": int64(5)}, nil)                  // h-all (5 as a long matches 5 as an int), h-x-ignored
	send(map[string]any{"color": "red"}, nil)                                    // h-x-ignored only: all needs size too
	send(map[string]any{"shape": "round", "size": uint8(6)}, nil)                // h-any, h-x-ignored
	send(nil, goamqp.Annotations{"x-opt-k": "v"})                                // h-withx, h-x-ignored
	send(map[string]any{"x-opt-k": "v"}, goamqp.Annotations{"x-opt-k": "other"}) // the annotation wins: h-x-ignored only
	send(map[string]any{"tags": []any{"a", "b"}}, nil)                           // h-x-ignored only: a list is no header
	send(map[string]any{"tags": "a"}, nil)                                       // h-present, h-x-ignored
	send(map[string]any{"a": uint32(1)}, nil)                                    // h-pair (a), h-x-ignored
	send(map[string]any{"b": float64(2), "a": int16(1)}, nil)                    // h-pair once (both), h-x-ignored
	if err := ch.QueueUnbind("h-pair", "", "hx", amqp091go.Table{"x-match": "all", "a": int8(1)}); err != nil {
		t.Fatal(err)
	}
	send(map[string]any{"a": int32(1)}, nil) // the a binding is gone: h-x-ignored only
	send(map[string]any{"b": int32(2)}, nil) // the b binding stays: h-pair, h-x-ignored
	want := map[string]int{"h-all": 1, "h-any": 1, "h-withx": 1, "h-x-ignored": 11, "h-present": 1, "h-pair": 3}
	for q, n := range want {
		got, err := ch.QueueDeclarePassive(q, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Messages != n {
			t.Errorf("queue %s holds %d messages, want %d", q, got.Messages, n)
		}
	}
}
