package broker

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp091go "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// declare10 declares queue over 0-9-1 (AMQP 1.0 links do not declare).
func declare10(t *testing.T, url string, queues ...string) {
	t.Helper()
	conn, ch := dial(t, url)
	defer conn.Close()
	for _, q := range queues {
		if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// messages10 are the messages the round-trip tests send, each a whole
// encoded message as a client would put it in its transfers.
func messages10() map[string][]byte {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1500) // 24000 bytes: past a 4096 max-frame-size
	props := amqp10.AppendComposite(nil, amqp10.DescriptorProperties, amqp10.AppendString(nil, "id-1"),
		amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendString(nil, "subj"))
	app := amqp10.AppendDescribed(nil, amqp10.DescriptorApplicationProperties,
		amqp10.AppendMap(nil, amqp10.AppendString(nil, "k"), amqp10.AppendBoolean(nil, true)))
	data := func(b []byte) []byte {
		return amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, b))
	}
	// A header with the two-byte boolean and a trailing null, as a client
	// may write it: the broker keeps it as it came.
	header := amqp10.AppendComposite(nil, amqp10.DescriptorHeader, amqp10.AppendBoolean(nil, false), amqp10.AppendNull(nil))
	ma := amqp10.AppendDescribed(nil, amqp10.DescriptorMessageAnnotations,
		amqp10.AppendMap(nil, amqp10.AppendSymbol(nil, "x-opt-test"), amqp10.AppendString(nil, "v"),
			amqp10.AppendSymbol(nil, "x-routing-key"), amqp10.AppendString(nil, "the broker's to set")))
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	multi := join(props, app, data([]byte("one")), data([]byte("two")), data(nil), data([]byte("three")))
	withFooter := amqp10.AppendChecksumFooter(append([]byte(nil), multi...), amqp10.CRC32, multi)
	return map[string][]byte{
		"data":          data([]byte("hello")),
		"big-data":      join(props, data(big)),
		"data-sections": join(header, ma, withFooter),
		"amqp-value":    join(props, amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendString(nil, "a value"))),
		"amqp-sequence": join(amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendInt(nil, 1), amqp10.AppendString(nil, "x"))),
			amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendLong(nil, 1<<40)))),
		"big-sequence": amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList32(nil, amqp10.AppendBinary(nil, big))),
	}
}

// TestAMQP10RoundTripByteForByte sends each message through a queue in
// both settlement modes and checks that the receiver gets exactly the
// bytes sent (delivery-annotations, which are for one hop, aside): header,
// annotations, bare message and footer, over frames of a 4096
// max-frame-size in both directions.
func TestAMQP10RoundTripByteForByte(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "rt")
	for _, settled := range []bool{false, true} {
		for name, msg := range messages10() {
			r := dialRaw10(t, url, 4096)
			r.attach(0, false, "/queues/rt", settled)
			r.expect(amqp10.DescriptorFlow)
			if c, _ := r.comp.Uint(r.last(), 6); c == 0 {
				t.Fatal("no link credit granted to the sender")
			}
			// delivery-annotations go in front and must not come out.
			da := amqp10.AppendDescribed(nil, amqp10.DescriptorDeliveryAnnotations,
				amqp10.AppendMap(nil, amqp10.AppendSymbol(nil, "x-opt-hop"), amqp10.AppendUint(nil, 7)))
			at := 0
			var pm amqp10.Message
			if err := amqp10.ParseMessage(msg, &pm); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if pm.Sections[0].Descriptor == amqp10.DescriptorHeader {
				at = pm.Sections[0].Value.End
			}
			sent := append(append(append([]byte(nil), msg[:at]...), da...), msg[at:]...)
			r.transfer(0, 0, settled, sent, 1000)
			if !settled {
				if d := r.next(); d != amqp10.DescriptorDisposition {
					t.Fatalf("%s: got 0x%x, want a disposition", name, d)
				}
				f, _ := r.comp.Field(4)
				var st amqp10.Composite
				if f == nil || st.Set(r.last(), *f) != nil || st.Descriptor != amqp10.DescriptorAccepted {
					t.Fatalf("%s: outcome is not accepted", name)
				}
			}
			r.attach(1, true, "/queues/rt", settled)
			r.flow(1, 0, 10, false)
			got, id, gotSettled, frames := r.receive()
			if gotSettled != settled {
				t.Errorf("%s: settled %v, want %v", name, gotSettled, settled)
			}
			checkDelivered(t, name+" settled "+strconv.FormatBool(settled), got, msg, "", "rt")
			if len(msg) > 4096 && frames < 2 {
				t.Errorf("%s: %d bytes in %d frame", name, len(msg), frames)
			}
			if !settled {
				r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorAccepted))
			}
			// The receiver detaches before the connection goes, so the
			// next round's message cannot reach this round's consumer
			// (and come back redelivered when its connection is gone).
			r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorDetach, amqp10.AppendUint(nil, 1), amqp10.AppendBool(nil, true)))
			if d := r.next(); d != amqp10.DescriptorDetach {
				t.Fatalf("%s: got 0x%x, want the detach", name, d)
			}
			r.nc.Close()
		}
	}
	waitEmpty(t, url, "rt")
}

func head(b []byte) []byte { return b[:min(len(b), 64)] }

// waitEmpty waits until queue has no messages, ready or unacked.
func waitEmpty(t *testing.T, url, queue string) {
	t.Helper()
	conn, ch := dial(t, url)
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s still holds %d messages", queue, q.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dialGoAMQP(t *testing.T, url string, maxFrame uint32) *goamqp.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := goamqp.Dial(ctx, "amqp://"+brokerAddr(url), &goamqp.ConnOptions{
		SASLType: goamqp.SASLTypePlain("guest", "guest"), MaxFrameSize: maxFrame, HostName: "vhost:/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAMQP10GoAMQPSendersBytes sends go-amqp messages (each body kind,
// past max-frame-size) in both settlement modes and checks the bare
// message a raw receiver gets against go-amqp's own encoding of it.
func TestAMQP10GoAMQPSendersBytes(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "ga")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 4096)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xa5}, 50000)
	msgs := []*goamqp.Message{
		goamqp.NewMessage([]byte("small")),
		goamqp.NewMessage(big),
		{Data: [][]byte{[]byte("a"), []byte("bb"), big}},
		{Value: "an amqp-value"},
		{Sequence: [][]any{{int64(1), "two"}, {true}}},
		{Properties: &goamqp.MessageProperties{Subject: ptr("s")}, ApplicationProperties: map[string]any{"n": int64(3)}, Data: [][]byte{[]byte("x")}},
	}
	r := dialRaw10(t, url, 8192)
	r.attach(0, true, "/queues/ga", false)
	for _, mode := range []goamqp.SenderSettleMode{goamqp.SenderSettleModeUnsettled, goamqp.SenderSettleModeSettled} {
		snd, err := sess.NewSender(ctx, "/queues/ga", &goamqp.SenderOptions{SettlementMode: mode.Ptr()})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range msgs {
			if err := snd.Send(ctx, m, nil); err != nil {
				t.Fatalf("mode %v message %d: %v", mode, i, err)
			}
			want, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			r.flow(0, r.count, 1, false)
			got, id, _, _ := r.receive()
			r.count++
			var gm, wm amqp10.Message
			if err := amqp10.ParseMessage(got, &gm); err != nil {
				t.Fatal(err)
			}
			if err := amqp10.ParseMessage(want, &wm); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gm.Bare(got), wm.Bare(want)) {
				t.Errorf("mode %v message %d: the bare message differs from go-amqp's encoding", mode, i)
			}
			r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorAccepted))
		}
		snd.Close(ctx)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAMQP10GoAMQPReceiverOutcomes consumes with go-amqp: credit, the
// outcomes mapped onto ack / requeue / drop, settled delivery, drain.
func TestAMQP10GoAMQPReceiverOutcomes(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 0)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/out", nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(body string) {
		t.Helper()
		if err := snd.Send(ctx, goamqp.NewMessage([]byte(body)), nil); err != nil {
			t.Fatal(err)
		}
	}
	send("m1")
	rcv, err := sess.NewReceiver(ctx, "/queues/out", &goamqp.ReceiverOptions{Credit: 1})
	if err != nil {
		t.Fatal(err)
	}
	recv := func() *goamqp.Message {
		t.Helper()
		m, err := rcv.Receive(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := recv()
	if string(m.GetData()) != "m1" {
		t.Fatalf("got %q", m.GetData())
	}
	// released: back in the queue, delivered again.
	if err := rcv.ReleaseMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	m = recv()
	if string(m.GetData()) != "m1" {
		t.Fatalf("after release got %q", m.GetData())
	}
	// modified with delivery-failed: requeued too.
	if err := rcv.ModifyMessage(ctx, m, &goamqp.ModifyMessageOptions{DeliveryFailed: true}); err != nil {
		t.Fatal(err)
	}
	m = recv()
	// rejected: dropped (the queue has no dead-letter exchange).
	if err := rcv.RejectMessage(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	send("m2")
	m = recv()
	if string(m.GetData()) != "m2" {
		t.Fatalf("after reject got %q, want m2", m.GetData())
	}
	if err := rcv.AcceptMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, url, "out")

	rcv.Close(ctx)

	// Drain with nothing in the queue: the broker answers at once with
	// the credit used up.
	drcv, err := sess.NewReceiver(ctx, "/queues/out", &goamqp.ReceiverOptions{Credit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := drcv.IssueCredit(5); err != nil {
		t.Fatal(err)
	}
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	if err := drcv.DrainCredit(dctx, nil); err != nil {
		t.Fatalf("drain: %v", err)
	}
	dcancel()
	drcv.Close(ctx)

	// A settled receiver: at-most-once, nothing left unacked.
	send("m3")
	srcv, err := sess.NewReceiver(ctx, "/queues/out", &goamqp.ReceiverOptions{Credit: 5,
		RequestedSenderSettleMode: goamqp.SenderSettleModeSettled.Ptr()})
	if err != nil {
		t.Fatal(err)
	}
	m, err = srcv.Receive(ctx, nil)
	if err != nil || string(m.GetData()) != "m3" {
		t.Fatalf("settled receive: %v %q", err, m.GetData())
	}
	waitEmpty(t, url, "out")
}

// TestAMQP10NoCreditNoMessage: a receiver that grants no credit is sent
// nothing; granting one gets one.
func TestAMQP10NoCreditNoMessage(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "nc")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/nc", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, messages10()["data"], 1000)
	r.transfer(0, 1, true, messages10()["data"], 1000)
	r.attach(1, true, "/queues/nc", true)
	r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := r.frame(); err == nil {
		t.Fatalf("without credit the broker sent performative 0x%x", r.comp.Descriptor)
	}
	r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	r.flow(1, 0, 1, false)
	r.receive()
	r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := r.frame(); err == nil {
		t.Fatalf("past its credit of 1 the broker sent performative 0x%x", r.comp.Descriptor)
	}
}

// TestAMQP10TapImmutability is the proof on the wire: the broker's own
// connections, tapped and decoded by wiretap's AMQP 1.0 decoder, pair
// each message entering with the one leaving, and the immutability check
// finds every bare message identical (RabbitMQ 3.10 reverses multiple
// data sections; this broker must not), with every checksum footer ok.
func TestAMQP10TapImmutability(t *testing.T) {
	var sink collect
	pl := pipeline.New(pipeline.Config{Sink: sink.add})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl)})
	declare10(t, url, "imm")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 4096)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/imm", nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "/queues/imm", &goamqp.ReceiverOptions{Credit: 10})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 10000)
	bodies := []*goamqp.Message{
		{Data: [][]byte{[]byte("first"), []byte("second"), []byte("third")}},
		{Data: [][]byte{big, []byte("tail")}},
		{Value: int64(42)},
		{Sequence: [][]any{{"a", "b"}, {int64(3)}}},
	}
	const n = 4
	for i, m := range bodies {
		m.Properties = &goamqp.MessageProperties{MessageID: "imm-" + strconv.Itoa(i)}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var pm amqp10.Message
		if err := amqp10.ParseMessage(enc, &pm); err != nil {
			t.Fatal(err)
		}
		m.Footer = goamqp.Annotations{amqp10.AnnotationCRC32: crc32.ChecksumIEEE(pm.Bare(enc))}
		if err := snd.Send(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		m, err := rcv.Receive(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rcv.AcceptMessage(ctx, m)
	}
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sink.mu.Lock()
		done := len(sink.units) > 0 && sink.units[len(sink.units)-1].Type == "close"
		sink.mu.Unlock()
		if done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
	pl.Finish()
	im := amqp10.NewImmutability()
	checked := 0
	for _, u := range sink.units {
		if u.Err() != "" {
			t.Errorf("unit %d %s: %s", u.N, u.Type, u.Err())
		}
		if v, paired := im.Observe(u); paired && !v.Identical {
			t.Errorf("unit %d: bare message modified at byte %d (%s)", u.N, v.Offset, v.Where)
		}
		if cm := amqp10.MessageOf(u); cm != nil {
			if ck := cm.Message.VerifyChecksum(cm.Bytes); ck.Status != decode.ChecksumOK {
				t.Errorf("unit %d (%s): checksum %v", u.N, u.Dir, ck.Status)
			}
			checked++
		}
	}
	rep := im.Report()
	if rep.Paired != n || rep.Identical != n || rep.Modified != 0 || checked != 2*n {
		t.Fatalf("immutability: %+v, %d checksums checked; want %d paired and identical, %d checksums", rep, checked, n, 2*n)
	}
}

// TestAMQP10RedeliveryHeader: a message delivered again comes with the
// broker's header (first-acquirer false; delivery-count raised by a
// modified outcome with delivery-failed, not by released) and the bare
// message unchanged.
func TestAMQP10RedeliveryHeader(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "rd")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/rd", true)
	r.expect(amqp10.DescriptorFlow)
	header := amqp10.AppendComposite(nil, amqp10.DescriptorHeader, amqp10.AppendBoolean(nil, true), amqp10.AppendUbyte(nil, 4))
	bare := messages10()["amqp-value"] // properties and an amqp-value: no header of its own
	r.transfer(0, 0, true, append(append([]byte(nil), header...), bare...), 1000)
	r.attach(1, true, "/queues/rd", false)
	r.flow(1, 0, 10, false)
	check := func(wantCount uint64, first bool) uint32 {
		t.Helper()
		got, id, _, _ := r.receive()
		var pm amqp10.Message
		if err := amqp10.ParseMessage(got, &pm); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[pm.BareStart:], bare) {
			t.Fatal("the bare message changed on redelivery")
		}
		var h amqp10.Composite
		if err := amqp10.ScanComposite(got, 0, &h); err != nil || h.Descriptor != amqp10.DescriptorHeader {
			t.Fatalf("no header section: %v", err)
		}
		if string(got[h.Fields[0].Start:h.Fields[0].End]) != string(amqp10.AppendBoolean(nil, true)) {
			t.Error("durable lost its two-byte encoding")
		}
		fa, ok := h.Bool(got, 3)
		if first && ok && fa == false {
			t.Error("first delivery: first-acquirer false")
		}
		if !first && (!ok || fa) {
			t.Error("redelivery: first-acquirer not false")
		}
		if n, _ := h.Uint(got, 4); n != wantCount {
			t.Errorf("delivery-count %d, want %d", n, wantCount)
		}
		return id
	}
	id := check(0, true)
	r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorModified, amqp10.AppendBool(nil, true)))
	id = check(1, false)
	r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorReleased))
	id = check(1, false)
	r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorModified, amqp10.AppendBool(nil, true)))
	id = check(2, false)
	r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorAccepted))
	waitEmpty(t, url, "rd")
}

// TestAMQP10AnonymousTerminus publishes with go-amqp to a sender without
// a target address: each message's properties.to routes it.
func TestAMQP10AnonymousTerminus(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "to-q", "to-x")
	conn, ch := dial(t, url)
	if err := ch.QueueBind("to-x", "k", "amq.direct", false, nil); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 0)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"/queues/to-q", "/exchanges/amq.direct/k"} {
		m := goamqp.NewMessage([]byte(to))
		m.Properties = &goamqp.MessageProperties{To: ptr(to)}
		if err := snd.Send(ctx, m, nil); err != nil {
			t.Fatalf("to %s: %v", to, err)
		}
	}
	m := goamqp.NewMessage([]byte("x"))
	m.Properties = &goamqp.MessageProperties{To: ptr("/exchanges/nope/k")}
	var re *goamqp.Error
	if err := snd.Send(ctx, m, nil); !errors.As(err, &re) || re.Condition != condNotFound {
		t.Fatalf("to a missing exchange: %v, want rejected with %s", err, condNotFound)
	}
	for q, want := range map[string]string{"to-q": "/queues/to-q", "to-x": "/exchanges/amq.direct/k"} {
		rcv, err := sess.NewReceiver(ctx, "/queues/"+q, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rcv.Receive(ctx, nil)
		if err != nil || string(got.GetData()) != want {
			t.Fatalf("queue %s: %v %q", q, err, got.GetData())
		}
		rcv.AcceptMessage(ctx, got)
	}
}

// TestAMQP10CrossProtocol: a message published over one protocol and
// consumed over the other is converted as RabbitMQ 4 converts it
// (amqp10_convert.go has the table).
func TestAMQP10CrossProtocol(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "x10", "x091")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/x10", true)
	r.expect(amqp10.DescriptorFlow)
	uuid := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}
	null := amqp10.AppendNull(nil)
	full := bytes.Join([][]byte{
		amqp10.AppendComposite(nil, amqp10.DescriptorHeader, amqp10.AppendBool(nil, true), amqp10.AppendUbyte(nil, 3), amqp10.AppendUint(nil, 60000)),
		amqp10.AppendDescribed(nil, amqp10.DescriptorMessageAnnotations, amqp10.AppendMap(nil, amqp10.AppendSymbol(nil, "x-opt-test"), amqp10.AppendString(nil, "v"))),
		amqp10.AppendComposite(nil, amqp10.DescriptorProperties, amqp10.AppendString(nil, "id-1"), null, null, null,
			amqp10.AppendString(nil, "rq"), amqp10.AppendUUID(nil, uuid), amqp10.AppendSymbol(nil, "text/plain"), null, null,
			amqp10.AppendTimestamp(nil, 1700000000123), amqp10.AppendString(nil, "app")),
		amqp10.AppendDescribed(nil, amqp10.DescriptorApplicationProperties, amqp10.AppendMap(nil,
			amqp10.AppendString(nil, "k"), amqp10.AppendBool(nil, true), amqp10.AppendString(nil, "n"), amqp10.AppendLong(nil, 5),
			amqp10.AppendString(nil, "s"), amqp10.AppendString(nil, "str"))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("ab"))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("cd"))),
	}, nil)
	value := amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendString(nil, "a value"))
	r.transfer(0, 0, true, full, 1000)
	r.transfer(0, 1, true, value, 1000)
	conn, ch := dial(t, url)
	defer conn.Close()
	waitEmptyOf(t, url, "x10", 2)
	d, ok, err := ch.Get("x10", true)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	got := fmt.Sprintf("%s|%d|%d|%s|%s|%s|%s|%s|%s|%d|%s|%v", d.Body, d.DeliveryMode, d.Priority, d.Expiration, d.MessageId,
		d.CorrelationId, d.ReplyTo, d.ContentType, d.AppId, d.Timestamp.Unix(), d.Type, d.Headers)
	want := "abcd|2|3|60000|id-1|urn:uuid:12345678-9abc-def0-0102-030405060708|rq|text/plain|app|1700000000||map[k:true n:5 s:str x-opt-test:v]"
	if got != want {
		t.Errorf("1.0 to 0-9-1:\n got %s\nwant %s", got, want)
	}
	d, ok, err = ch.Get("x10", true)
	if err != nil || !ok || !bytes.Equal(d.Body, value) || d.Type != "amqp-1.0" {
		t.Fatalf("amqp-value to 0-9-1: %v %v %x type %q", ok, err, d.Body, d.Type)
	}

	ts := time.Unix(1700000000, 0)
	if err := ch.Publish("", "x091", false, false, amqp091go.Publishing{
		DeliveryMode: 2, Priority: 4, Expiration: "5000", MessageId: "m1", CorrelationId: "urn:uuid:12345678-9abc-def0-0102-030405060708",
		ReplyTo: "rq", ContentType: "text/plain", Timestamp: ts, AppId: "app", Type: "t",
		Headers: amqp091go.Table{"x-h": "xv", "h": int32(7)}, Body: []byte("from 0-9-1")}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("", "x091", false, false, amqp091go.Publishing{Type: "amqp-1.0", Body: value}); err != nil {
		t.Fatal(err)
	}
	r.attach(1, true, "/queues/x091", true)
	r.flow(1, 0, 2, false)
	raw, _, _, _ := r.receive()
	var m goamqp.Message
	if err := m.UnmarshalBinary(raw); err != nil {
		t.Fatalf("0-9-1 to 1.0: %v (%x)", err, raw)
	}
	p := m.Properties
	if m.Header == nil || !m.Header.Durable || m.Header.Priority != 4 || m.Header.TTL != 5*time.Second || p == nil ||
		p.MessageID != "m1" || p.CorrelationID != goamqp.UUID(uuid) || *p.ReplyTo != "/queues/rq" || *p.ContentType != "text/plain" ||
		!p.CreationTime.Equal(ts) || *p.GroupID != "app" || m.Annotations["x-h"] != "xv" || m.Annotations["x-basic-type"] != "t" ||
		m.ApplicationProperties["h"] != int32(7) || string(m.GetData()) != "from 0-9-1" {
		t.Errorf("0-9-1 to 1.0: header %+v properties %+v annotations %v application-properties %v data %q",
			m.Header, p, m.Annotations, m.ApplicationProperties, m.GetData())
	}
	raw, _, _, _ = r.receive()
	if !bytes.HasSuffix(raw, value) {
		t.Errorf("0-9-1 typed amqp-1.0 to 1.0: %x, want the sections it held, %x, at the end", raw, value)
	}
}

// TestAMQP10StateView: the broker's state view lists an AMQP 1.0
// connection as such, and its receiver link as a consumer of its queue.
func TestAMQP10StateView(t *testing.T) {
	b, url := startBroker(t, Config{})
	declare10(t, url, "sv")
	r := dialRaw10(t, url, 4096)
	r.attach(0, true, "/queues/sv", false)
	deadline := time.Now().Add(5 * time.Second)
	for {
		var proto []string
		for _, c := range b.Connections() {
			proto = append(proto, c.Protocol)
		}
		cons := b.Consumers()
		if len(proto) == 1 && proto[0] == "AMQP 1.0" && len(cons) == 1 && cons[0].Queue == "sv" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections %q, consumers %+v", proto, cons)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// declareDirect declares a queue in b's default vhost without a client.
func declareDirect(t testing.TB, b *Broker, name string) {
	t.Helper()
	v := b.vhost("/")
	if _, _, _, e := v.declareQueue(&conn{admin: true, vh: v, b: b}, &amqp091.QueueDeclare{Queue: []byte(name)}); e != nil {
		t.Fatal(e)
	}
}

// TestAMQP10OverTLS: AMQPS, go-amqp over TLS to the same listener kind as
// 0-9-1's AMQPS, the protocol header read after the handshake.
func TestAMQP10OverTLS(t *testing.T) {
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	b, err := New(Config{TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	declareDirect(t, b, "tls")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan struct{})
	go func() { b.Serve(ctx, tls.NewListener(l, cfg)); close(done) }()
	defer func() { cancel(); <-done; b.Close() }()
	c, err := goamqp.Dial(ctx, "amqps://"+l.Addr().String(), &goamqp.ConnOptions{
		SASLType: goamqp.SASLTypePlain("guest", "guest"), TLSConfig: &tls.Config{InsecureSkipVerify: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/tls", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, goamqp.NewMessage([]byte("over tls")), nil); err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "/queues/tls", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := rcv.Receive(ctx, nil)
	if err != nil || string(m.GetData()) != "over tls" {
		t.Fatalf("receive over TLS: %v %q", err, m.GetData())
	}
	conns := b.Connections()
	if len(conns) != 1 || !conns[0].TLS || conns[0].Protocol != "AMQP 1.0" {
		t.Fatalf("connections %+v: want one AMQP 1.0 over TLS", conns)
	}
}

// TestAMQP10HeaderTTLAndPriority: the header's ttl expires a message in
// its queue; its priority orders a priority queue.
func TestAMQP10HeaderTTLAndPriority(t *testing.T) {
	b, url := startBroker(t, Config{})
	declareDirect(t, b, "ttl")
	v := b.vhost("/")
	args := amqp091.Table(nil).Append("x-max-priority", amqp091.Int32Value(5))
	if _, _, _, e := v.declareQueue(&conn{admin: true, vh: v, b: b}, &amqp091.QueueDeclare{Queue: []byte("prio"), Arguments: args}); e != nil {
		t.Fatal(e)
	}
	r := dialRaw10(t, url, 4096)
	body := messages10()["data"]
	hdr := func(fields ...[]byte) []byte {
		return append(amqp10.AppendComposite(nil, amqp10.DescriptorHeader, fields...), body...)
	}
	null := amqp10.AppendNull(nil)
	r.attach(0, false, "/queues/ttl", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, hdr(null, null, amqp10.AppendUint(nil, 1)), 1000)
	r.attach(1, false, "/queues/prio", true)
	r.expect(amqp10.DescriptorFlow)
	low, high := hdr(null, amqp10.AppendUbyte(nil, 1)), hdr(null, amqp10.AppendUbyte(nil, 4))
	r.transfer(1, 1, true, low, 1000)
	r.transfer(1, 2, true, high, 1000)
	waitEmptyOf(t, url, "prio", 2)
	time.Sleep(50 * time.Millisecond)
	waitEmptyOf(t, url, "ttl", 0)
	r.attach(2, true, "/queues/prio", true)
	r.flow(2, 0, 2, false)
	prio := func(b []byte) uint64 {
		var h amqp10.Composite
		if amqp10.ScanComposite(b, 0, &h) != nil {
			return 0
		}
		p, _ := h.Uint(b, 1)
		return p
	}
	if got, _, _, _ := r.receive(); prio(got) != 4 {
		t.Fatal("the priority 4 message did not come first")
	}
	if got, _, _, _ := r.receive(); prio(got) != 1 {
		t.Fatal("the priority 1 message did not come second")
	}
}

// TestAMQP10ExternalOverTLS: SASL EXTERNAL is offered to AMQP 1.0 clients
// over TLS with client certificates, and logs in the certificate's user.
func TestAMQP10ExternalOverTLS(t *testing.T) {
	b, addr, cert := externalTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := goamqp.Dial(ctx, "amqps://"+addr, &goamqp.ConnOptions{
		SASLType:  goamqp.SASLTypeExternal(""),
		TLSConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conns := b.Connections()
	if len(conns) != 1 || conns[0].User != "extuser" || conns[0].AuthMechanism != "EXTERNAL" {
		t.Fatalf("connections %+v: want extuser by EXTERNAL", conns)
	}
}

// TestAMQP10DeadLetter: a rejected AMQP 1.0 message is dead-lettered with
// its bare message as it was and the death in x-opt-deaths; a second death
// from the same queue for the same reason counts 2.
func TestAMQP10DeadLetter(t *testing.T) {
	b, url := startBroker(t, Config{})
	v := b.vhost("/")
	admin := &conn{admin: true, vh: v, b: b}
	args := amqp091.Table(nil).Append("x-dead-letter-exchange", amqp091.StringValue("")).
		Append("x-dead-letter-routing-key", amqp091.StringValue("dead"))
	for _, q := range []*amqp091.QueueDeclare{{Queue: []byte("live"), Arguments: args}, {Queue: []byte("dead")}} {
		if _, _, _, e := v.declareQueue(admin, q); e != nil {
			t.Fatal(e)
		}
	}
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/live", true)
	r.expect(amqp10.DescriptorFlow)
	sent := bytes.Join([][]byte{
		amqp10.AppendComposite(nil, amqp10.DescriptorHeader, amqp10.AppendBool(nil, true), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 60000)),
		amqp10.AppendDescribed(nil, amqp10.DescriptorMessageAnnotations, amqp10.AppendMap(nil, amqp10.AppendSymbol(nil, "x-opt-keep"), amqp10.AppendString(nil, "k"))),
		messages10()["amqp-value"],
	}, nil)
	r.transfer(0, 0, true, sent, 1000)
	r.attach(1, true, "/queues/live", false)
	r.flow(1, 0, 1, false)
	_, id, _, _ := r.receive()
	r.dispose(id, id, amqp10.AppendComposite(nil, amqp10.DescriptorRejected))
	r.attach(2, true, "/queues/dead", true)
	r.flow(2, 0, 1, false)
	got, _, _, _ := r.receive()
	var gm, sm goamqp.Message
	if err := gm.UnmarshalBinary(got); err != nil {
		t.Fatal(err)
	}
	_, grest, _, ok := delivered10(got)
	_, srest, _, _ := delivered10(sent)
	if !ok || !bytes.Equal(grest, srest) {
		t.Fatal("the dead-lettered copy's bare message differs from the one sent")
	}
	sm.UnmarshalBinary(sent)
	if gm.Header == nil || !gm.Header.Durable || gm.Header.TTL != 0 {
		t.Errorf("header %+v: want durable kept, ttl removed", gm.Header)
	}
	deaths := fmt.Sprint(gm.Annotations["x-opt-deaths"])
	if gm.Annotations["x-opt-keep"] != "k" || gm.Annotations["x-exchange"] != "" || gm.Annotations["x-routing-key"] != "dead" ||
		!strings.Contains(deaths, "queue:live") || !strings.Contains(deaths, "reason:rejected") || !strings.Contains(deaths, "count:1") ||
		!strings.Contains(deaths, "routing-keys:[live]") {
		t.Errorf("annotations %v", gm.Annotations)
	}
	// A second death in the same queue for the same reason.
	m := &queue.Message{Format: queue.FormatAMQP10, Exchange: "", RoutingKey: "live", Body: srest}
	_, rest, _, _ := delivered10(got)
	m.Header = got[:len(got)-len(rest)]
	again := append(deadLetterHeader10(m, queue.Rejected, "live", time.Now(), "", "dead"), srest...)
	var am goamqp.Message
	if err := am.UnmarshalBinary(again); err != nil {
		t.Fatal(err)
	}
	if d := fmt.Sprint(am.Annotations["x-opt-deaths"]); !strings.Contains(d, "count:2") || strings.Count(d, "queue:") != 1 {
		t.Errorf("after a second death: %s", d)
	}
	m.Header = deadLetterHeader10(m, queue.Expired, "live", time.Now(), "", "dead")
	var em goamqp.Message
	if err := em.UnmarshalBinary(append(m.Header, srest...)); err != nil {
		t.Fatal(err)
	}
	if d := fmt.Sprint(em.Annotations["x-opt-deaths"]); strings.Count(d, "queue:") != 2 || !strings.Contains(d, "reason:expired") {
		t.Errorf("after a death for another reason: %s", d)
	}
}

// TestAMQP10ConsumersShareAQueueWith091: a go-amqp receiver and a 0-9-1
// consumer on one queue take turns, as two consumers of one protocol do.
func TestAMQP10ConsumersShareAQueueWith091(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "both")
	conn, ch := dial(t, url)
	defer conn.Close()
	dl, err := ch.Consume("both", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 0)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "/queues/both", &goamqp.ReceiverOptions{Credit: 100})
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/both", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The receiver's credit reaches the broker in a flow frame of its own,
	// after the attach: messages sent before it are all the 0-9-1
	// consumer's, as they would be with RabbitMQ. So batches are sent
	// until both have been served, up to ten; once both consumers can
	// take messages, a batch must reach both.
	const n, batches = 20, 10
	got10, got091 := 0, 0
	for b := 0; b < batches && (got10 == 0 || got091 == 0); b++ {
		for i := range n {
			if err := snd.Send(ctx, goamqp.NewMessage([]byte(strconv.Itoa(b*n+i))), nil); err != nil {
				t.Fatal(err)
			}
		}
		for got10+got091 < (b+1)*n {
			select {
			case <-dl:
				got091++
			case <-ctx.Done():
				t.Fatalf("%d over 1.0 and %d over 0-9-1 of %d", got10, got091, (b+1)*n)
			default:
				rctx, rcancel := context.WithTimeout(ctx, 20*time.Millisecond)
				if m, err := rcv.Receive(rctx, nil); err == nil {
					rcv.AcceptMessage(ctx, m)
					got10++
				}
				rcancel()
			}
		}
	}
	if got10 == 0 || got091 == 0 {
		t.Fatalf("%d over 1.0 and %d over 0-9-1 after %d batches: want both served", got10, got091, batches)
	}
}

// TestAMQP10SameMessagesThroughRabbitMQ sends the round-trip messages
// through RabbitMQ 3.x's AMQP 1.0 plugin too, with the same raw client and
// the same check. RabbitMQ 3.10 rewrites bare messages: it adds a
// properties section (with to set) to a message that has none, and
// reverses several data or amqp-sequence sections; so the check can fail,
// and does there. The embedded broker keeps every bare message.
func TestAMQP10SameMessagesThroughRabbitMQ(t *testing.T) {
	url := os.Getenv("WIRETAP_AMQP_URL")
	if url == "" {
		url = "amqp://guest:guest@127.0.0.1:5672/"
	}
	conn, err := amqp091go.Dial(url)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no RabbitMQ at %s: %v", url, err)
		}
		t.Skipf("no RabbitMQ at %s: %v", url, err)
	}
	defer conn.Close()
	version, _ := conn.Properties["version"].(string)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	qname := "wiretap-amqp10-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := ch.QueueDeclare(qname, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer ch.QueueDelete(qname, false, false, false)

	_, ours := startBroker(t, Config{})
	declare10(t, ours, qname)
	bareThrough := func(url, addr string, msg []byte) bool {
		r := dialRaw10(t, url, 65536)
		defer r.nc.Close()
		r.attach(0, false, addr, true)
		r.expect(amqp10.DescriptorFlow)
		r.transfer(0, 0, true, msg, 60000)
		r.attach(1, true, addr, true)
		r.flow(1, 0, 1, false)
		got, _, _, _ := r.receive()
		_, grest, _, ok := delivered10(got)
		_, srest, _, _ := delivered10(msg)
		return ok && bytes.Equal(grest, srest)
	}
	for _, name := range []string{"data", "data-sections", "amqp-value", "amqp-sequence", "big-data"} {
		msg := messages10()[name]
		if !bareThrough(ours, "/queues/"+qname, msg) {
			t.Errorf("%s: the embedded broker modified the bare message", name)
		}
		kept := bareThrough(url, "/amq/queue/"+qname, msg)
		t.Logf("%s through RabbitMQ %s: bare message kept %v", name, version, kept)
		if name == "data-sections" && strings.HasPrefix(version, "3.") && kept {
			t.Errorf("RabbitMQ %s kept the bare message of several data sections, which 3.x is known to reverse: the check may be blind", version)
		}
	}
}
