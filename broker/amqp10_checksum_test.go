package broker

import (
	"context"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// TestAMQP10VerifyChecksums: with VerifyChecksums, a message published
// through the broker with a wrong CRC-32 is reported on arrival and on
// delivery (Broker.Checksums, and a "broker" warning unit on the tap of
// the publishing and of the consuming connection); one with a right
// CRC-32 is verified twice and reported nowhere.
func TestAMQP10VerifyChecksums(t *testing.T) {
	var sink collect
	pl := pipeline.New(pipeline.Config{Sink: sink.add})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl), VerifyChecksums: true})
	declare10(t, url, "ck")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 0)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/ck", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"good", "bad"} {
		m := &goamqp.Message{Properties: &goamqp.MessageProperties{MessageID: id}, Data: [][]byte{[]byte("checked body")}}
		enc, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var pm amqp10.Message
		if err := amqp10.ParseMessage(enc, &pm); err != nil {
			t.Fatal(err)
		}
		sum := crc32.ChecksumIEEE(pm.Bare(enc))
		if id == "bad" {
			sum ^= 1
		}
		m.Footer = goamqp.Annotations{amqp10.AnnotationCRC32: sum}
		if err := snd.Send(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	rcv, err := sess.NewReceiver(ctx, "/queues/ck", &goamqp.ReceiverOptions{Credit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m, err := rcv.Receive(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rcv.AcceptMessage(ctx, m)
	}
	c.Close()
	ck := b.Checksums()
	if !ck.Verifying || ck.Verified != 4 || ck.Mismatches != 2 || len(ck.Recent) != 2 {
		t.Fatalf("checksums %+v: want 4 verified, 2 mismatches", ck)
	}
	for i, where := range []string{"arrival", "delivery"} {
		mm := ck.Recent[i]
		if mm.Where != where || mm.MessageID != "bad" || mm.Algorithm != amqp10.CRC32 || mm.Expected != mm.Actual^1 || mm.Flow == 0 {
			t.Errorf("mismatch %d: %+v, want %s of message bad", i, mm, where)
		}
	}
	if !b.tapNotes() {
		return // a tap without notes: the mismatches are in Checksums alone
	}
	deadline := time.Now().Add(5 * time.Second)
	var notes []*decode.Unit
	for time.Now().Before(deadline) {
		notes = notes[:0]
		sink.mu.Lock()
		for _, u := range sink.units {
			if u.Type == noteBroker {
				notes = append(notes, u)
			}
		}
		sink.mu.Unlock()
		if len(notes) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(notes) != 2 {
		t.Fatalf("%d broker notes on the tap, want 2", len(notes))
	}
	for i, where := range []string{"arrival", "delivery"} {
		u := notes[i]
		dir := decode.DirF
		if where == "delivery" {
			dir = decode.DirB
		}
		if !strings.Contains(u.Summary, "checksum mismatch on "+where) || !strings.Contains(u.Summary, `"bad"`) ||
			u.Dir != dir || strings.Join(u.Warnings(), ";") != "reported by the broker" {
			t.Errorf("note %d: %s %q warnings %q", i, u.Dir, u.Summary, u.Warnings())
		}
	}
}

// TestAMQP10ChecksumPublish: with ChecksumPublish, a message published
// without a footer reaches go-amqp with an x-opt-crc-32 footer, and a raw
// receiver of the same message finds it valid over the bare message,
// which is the bytes the publisher sent.
func TestAMQP10ChecksumPublish(t *testing.T) {
	b, url := startBroker(t, Config{ChecksumPublish: amqp10.CRC32})
	declare10(t, url, "cp")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialGoAMQP(t, url, 0)
	sess, err := c.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/cp", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &goamqp.Message{Properties: &goamqp.MessageProperties{MessageID: "cp"}, Value: "no footer sent"}
	sent, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	rcv, err := sess.NewReceiver(ctx, "/queues/cp", &goamqp.ReceiverOptions{Credit: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := rcv.Receive(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rcv.AcceptMessage(ctx, got)
	want := crc32.ChecksumIEEE(sent)
	if v, ok := got.Footer[amqp10.AnnotationCRC32].(uint32); !ok || v != want {
		t.Errorf("go-amqp footer %v, want %s %d", got.Footer, amqp10.AnnotationCRC32, want)
	}
	if err := rcv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := snd.Send(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	r := dialRaw10(t, url, 4096)
	r.attach(0, true, "/queues/cp", true)
	r.flow(0, 0, 1, false)
	raw, _, _, _ := r.receive()
	var pm amqp10.Message
	if err := amqp10.ParseMessage(raw, &pm); err != nil {
		t.Fatal(err)
	}
	if ck := pm.VerifyChecksum(raw); ck.Status != decode.ChecksumOK || ck.Expected != want || string(pm.Bare(raw)) != string(sent) {
		t.Errorf("raw receiver: checksum %+v, bare message %x, want %x", ck, pm.Bare(raw), sent)
	}
	if n := b.Checksums().Added; n != 2 {
		t.Errorf("%d footers added, want 2", n)
	}
}
