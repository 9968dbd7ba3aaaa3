package amqp10

import (
	"context"
	"hash/adler32"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/Azure/go-amqp"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestGoAMQPLive sends messages encoded by Azure/go-amqp through RabbitMQ
// and a recording relay, with footers carrying checksums computed over the
// bare message go-amqp encodes, and receives them back with go-amqp on a
// second connection. The decoder must agree with the verdicts the test
// built in, see every message leave the broker, and decode every byte of
// both connections without error.
func TestGoAMQPLive(t *testing.T) {
	addr, ok := amqp10Broker()
	if !ok {
		needPeer(t, "no AMQP 1.0 broker at "+addr+" (set WIRETAP_AMQP10_ADDR; RabbitMQ needs rabbitmq_amqp1_0)")
	}
	r := startRelay(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	queue := "/queue/wiretap-goamqp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	opts := &amqp.ConnOptions{SASLType: amqp.SASLTypePlain("guest", "guest"), MaxFrameSize: 512}

	type sent struct {
		msg    *amqp.Message
		status decode.ChecksumStatus
	}
	var msgs []sent
	add := func(m *amqp.Message, alg string, wrong bool) {
		st := decode.ChecksumAbsent
		if alg != "" {
			enc, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var pm Message
			if err := ParseMessage(enc, &pm); err != nil {
				t.Fatalf("go-amqp's encoding: %v", err)
			}
			bare := pm.Bare(enc)
			var sum uint32
			key := AnnotationCRC32
			if alg == Adler32 {
				key, sum = AnnotationAdler32, adler32.Checksum(bare)
			} else {
				sum = crc32.ChecksumIEEE(bare)
			}
			st = decode.ChecksumOK
			if wrong {
				sum++
				st = decode.ChecksumMismatch
			}
			m.Footer = amqp.Annotations{key: sum}
		}
		msgs = append(msgs, sent{m, st})
	}
	id := func(s string) *amqp.MessageProperties { return &amqp.MessageProperties{MessageID: s} }
	add(&amqp.Message{Properties: id("go-data-crc"), Data: [][]byte{[]byte("go-amqp data")}, ApplicationProperties: map[string]any{"flag": true}}, CRC32, false)
	add(&amqp.Message{Properties: id("go-value-adler"), Value: "go-amqp value"}, Adler32, false)
	add(&amqp.Message{Properties: id("go-wrong"), Data: [][]byte{[]byte("x")}}, CRC32, true)
	add(&amqp.Message{Properties: id("go-large"), Header: &amqp.MessageHeader{Durable: true}, Data: [][]byte{[]byte(strings.Repeat("large ", 400))}}, CRC32, false)
	add(&amqp.Message{Properties: id("go-sequence"), Sequence: [][]any{{int64(1), "two"}}}, "", false)

	send, err := amqp.Dial(ctx, "amqp://"+r.addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := send.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sender, err := ss.NewSender(ctx, queue, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := sender.Send(ctx, m.msg, nil); err != nil {
			t.Fatal(err)
		}
	}
	// go-amqp encodes maps in Go's map order: with one application
	// property its encoding is the one MarshalBinary returned above.
	send.Close()
	recv, err := amqp.Dial(ctx, "amqp://"+r.addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := recv.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	receiver, err := rs.NewReceiver(ctx, queue, &amqp.ReceiverOptions{Credit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for range msgs {
		m, err := receiver.Receive(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		receiver.AcceptMessage(ctx, m)
	}
	// RabbitMQ 3.10 answers a receiving link's detach only when the
	// connection closes (go-amqp's Receiver.Close would wait for it until
	// its context expires): close the connection instead.
	recv.Close()
	recs := r.close()
	if len(recs) != 2 {
		t.Fatalf("%d connections recorded", len(recs))
	}

	want := map[string]decode.ChecksumStatus{}
	for _, m := range msgs {
		want[m.msg.Properties.MessageID.(string)] = m.status
	}
	imm := NewImmutability()
	for ci, rec := range recs {
		var units []*decode.Unit
		conn := &decode.Conn{ID: ci + 1}
		d := New(conn, nil, func(u *decode.Unit) { units = append(units, u) })
		var total [2]int
		for _, c := range rec.chunks {
			d.Feed(c.dir, c.data, time.Time{})
			total[c.dir] += len(c.data)
		}
		d.End(decode.DirF, time.Time{})
		d.End(decode.DirB, time.Time{})
		var covered [2]int
		completed := 0
		for _, u := range units {
			imm.Observe(u)
			covered[u.Dir] += u.Len
			if u.Err() != "" {
				t.Errorf("conn %d: %s: %s", ci+1, u.Summary, u.Err())
			}
			if MessageOf(u) == nil {
				continue
			}
			completed++
			if st, ok := want[u.MessageID()]; !ok || u.Checksum().Status != st {
				t.Errorf("conn %d %s %q: checksum %+v, want %s", ci+1, u.Dir, u.MessageID(), u.Checksum(), st)
			}
		}
		if covered != total {
			t.Errorf("conn %d: units cover %v bytes of %v", ci+1, covered, total)
		}
		if completed != len(msgs) {
			t.Errorf("conn %d: %d messages completed, want %d", ci+1, completed, len(msgs))
		}
	}
	if rep := imm.Report(); rep.Paired != len(msgs) || rep.Identical != len(msgs) {
		t.Errorf("immutability: %+v\n%s", rep, strings.Join(imm.Summary(), "\n"))
	}
}
