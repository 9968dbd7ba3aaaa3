package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// TestRouteAnnotatorAMQP10: messages published over AMQP 1.0 carry
// broker.route.* on the transfer that completes them: to a queue, to an
// exchange and key that match nothing, to an exchange with the subject as
// the key, and to a headers exchange on application-properties.
func TestRouteAnnotatorAMQP10(t *testing.T) {
	var sink collect
	ann := &RouteAnnotator{Next: sink.add}
	pl := pipeline.New(pipeline.Config{Sink: ann.Sink})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl)})
	ann.Explain = b.ExplainPublish
	ann.Version = b.TopologyVersion
	_, ch := dial(t, url)
	if _, err := ch.QueueDeclare("ann10-q", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("ann10-q", "orders.new", "amq.topic", false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("ann10-q", "", "amq.headers", false, amqp.Table{"x-match": "any", "kind": "audit"}); err != nil {
		t.Fatal(err)
	}
	c := dialGoAMQP(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	subject := func(s string) *goamqp.MessageProperties { return &goamqp.MessageProperties{Subject: &s} }
	for _, p := range []struct {
		target string
		msg    *goamqp.Message
	}{
		{"/queues/ann10-q", goamqp.NewMessage([]byte("to the queue"))},                                                                     // 1 queue
		{"/exchanges/amq.topic/nobody.listens", goamqp.NewMessage([]byte("unroutable"))},                                                   // 0
		{"/exchanges/amq.topic", &goamqp.Message{Properties: subject("orders.new"), Data: [][]byte{[]byte("s")}}},                          // the subject routes: 1
		{"/exchanges/amq.headers", &goamqp.Message{ApplicationProperties: map[string]any{"kind": "audit"}, Data: [][]byte{[]byte("h")}}},   // 1
		{"/exchanges/amq.headers", &goamqp.Message{ApplicationProperties: map[string]any{"kind": "billing"}, Data: [][]byte{[]byte("h")}}}, // 0
	} {
		snd, err := sess.NewSender(ctx, p.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := snd.Send(ctx, p.msg, nil); err != nil && p.target != "/exchanges/amq.topic/nobody.listens" && p.msg.ApplicationProperties["kind"] != "billing" {
			t.Fatalf("%s: %v", p.target, err) // unroutable ones are released, which go-amqp reports as an error
		}
		snd.Close(ctx)
	}
	c.Close()
	waitUnits(t, &sink, func(units []*decode.Unit) bool {
		n := 0
		for _, u := range units {
			if u.Proto == decode.ProtoAMQP10 && u.Dir == decode.DirF && amqp10.MessageOf(u) != nil {
				n++
			}
		}
		return n == 5
	})
	b.Close()
	pl.Finish()
	ann.Flush()
	var transfers []*decode.Unit
	for _, u := range sink.units {
		if u.Proto == decode.ProtoAMQP10 && u.Dir == decode.DirF && amqp10.MessageOf(u) != nil {
			transfers = append(transfers, u)
		}
	}
	checkFrozen(t, sink.units)
	for expr, want := range map[string]string{
		"broker.route.queues == 1":        "[true false true true false]",
		`broker.route.queue == "ann10-q"`: "[true false true true false]",
		"broker.route.unroutable == true": "[false true false false true]",
		"broker.route.returned == true":   "[false false false false false]",
	} {
		f, err := filter.Compile(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		var got []bool
		for _, u := range transfers {
			got = append(got, f.Match(u))
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%s: %v, want %s", expr, got, want)
		}
	}
}
