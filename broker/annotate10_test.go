package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
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

// BenchmarkRouteAnnotator10Transfer is the annotator's own cost per AMQP
// 1.0 publish of a steady stream (a 12-byte message on a link to
// /queues/NAME) whose route comes from its cache: what the tap pays on
// top of decoding.
func BenchmarkRouteAnnotator10Transfer(b *testing.B) {
	conn := &decode.Conn{ID: 1, Proto: decode.ProtoAMQP10}
	var units []*decode.Unit
	d := amqp10.New(conn, nil, func(u *decode.Unit) { units = append(units, u) })
	attach := amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "sender"),
		amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendUbyte(nil, 0), amqp10.AppendUbyte(nil, 0),
		amqp10.AppendNull(nil), amqp10.AppendComposite(nil, amqp10.DescriptorTarget, amqp10.AppendString(nil, "/queues/bench")))
	msg := amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, make([]byte, 12)))
	transfer := amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 7),
		amqp10.AppendBinary(nil, []byte{7}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false))
	d.Feed(decode.DirF, []byte("AMQP\x00\x01\x00\x00"), time.Time{})
	d.Feed(decode.DirF, amqp10.AppendFrame(nil, 0, 0, attach), time.Time{})
	d.Feed(decode.DirF, amqp10.AppendFrame(nil, 0, 0, transfer, msg), time.Time{})
	if len(units) != 3 || amqp10.MessageOf(units[2]) == nil {
		b.Fatalf("%d units decoded", len(units))
	}
	passed := 0
	ann := &RouteAnnotator{
		Next: func(*decode.Unit) { passed++ },
		Explain: func(vhost, exchange, key string, headers amqp091.Table) (state.Route, error) {
			return state.Route{VHost: vhost, Exchange: exchange, RoutingKey: key, Queues: []string{key}}, nil
		},
		Version: func() uint64 { return 1 },
	}
	ann.Sink(units[1])
	u := units[2]
	dissect := u.Dissect
	b.ReportAllocs()
	for b.Loop() {
		u.Dissect = dissect // the annotator wraps it: start afresh
		ann.Sink(u)
	}
	if passed == 0 || u.Dissect == nil {
		b.Fatal("nothing passed")
	}
}
