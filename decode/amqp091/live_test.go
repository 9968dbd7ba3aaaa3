package amqp091

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/decode"
)

var update = flag.Bool("update", false, "rewrite testdata from live traffic")

// brokerAddr is where the live test expects RabbitMQ: $WIRETAP_AMQP091_ADDR,
// else 127.0.0.1:5672 (where .ci/services.sh starts it).
func brokerAddr() string {
	if a := os.Getenv("WIRETAP_AMQP091_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:5672"
}

// relay is a TCP relay between one client and the broker that records both
// directions' bytes.
type relay struct {
	ln   net.Listener
	mu   sync.Mutex
	dirs [2]bytes.Buffer
	done sync.WaitGroup
}

func startRelay(t *testing.T) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln}
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", brokerAddr())
		if err != nil {
			c.Close()
			return
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go r.pipe(&wg, c, s, decode.DirF)
		go r.pipe(&wg, s, c, decode.DirB)
		wg.Wait()
	}()
	return r
}

func (r *relay) pipe(wg *sync.WaitGroup, from, to net.Conn, dir decode.Dir) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.dirs[dir].Write(buf[:n])
			r.mu.Unlock()
			if _, werr := to.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			// Close both ends so the other pipe ends too.
			from.Close()
			to.Close()
			return
		}
	}
}

func (r *relay) wait(t *testing.T) (client, server []byte) {
	r.ln.Close()
	ch := make(chan struct{})
	go func() { r.done.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("relay did not finish")
	}
	return r.dirs[decode.DirF].Bytes(), r.dirs[decode.DirB].Bytes()
}

func requireBroker(t *testing.T) {
	c, err := net.DialTimeout("tcp", brokerAddr(), 2*time.Second)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no RabbitMQ on %s: %v", brokerAddr(), err)
		}
		t.Skipf("no RabbitMQ on %s (%v); start one (.ci/services.sh start rabbitmq) or set WIRETAP_AMQP091_ADDR", brokerAddr(), err)
	}
	c.Close()
}

// TestLiveRabbitMQ decodes what amqp091-go and RabbitMQ said to each other
// and checks it against what the client did.
func TestLiveRabbitMQ(t *testing.T) {
	requireBroker(t)
	r := startRelay(t)
	conn, err := amqp.DialConfig("amqp://guest:guest@"+r.ln.Addr().String()+"/", amqp.Config{FrameSize: 8192, Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 10))
	q, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-max-length": int32(100)})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("wiretap-test-x", "direct", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q.Name, "rk", "wiretap-test-x", false, nil); err != nil {
		t.Fatal(err)
	}
	bodies := liveBodies
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, b := range bodies {
		err := ch.PublishWithContext(ctx, "wiretap-test-x", "rk", false, false, amqp.Publishing{
			ContentType: "text/plain", DeliveryMode: amqp.Persistent, MessageId: "m" + string(rune('0'+i)),
			Timestamp: time.Unix(1700000000, 0), Headers: amqp.Table{"n": int32(i), "nested": amqp.Table{"f": 1.5, "l": []any{"a", int64(2)}}},
			Body: b,
		})
		if err != nil {
			t.Fatal(err)
		}
		if c := <-confirms; !c.Ack {
			t.Fatal("publish nacked")
		}
	}
	deliveries, err := ch.Consume(q.Name, "wiretap-ctag", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range bodies {
		select {
		case m := <-deliveries:
			if err := m.Ack(false); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("no delivery")
		}
	}
	// A channel error: redeclaring the queue with other arguments.
	ch2, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch2.QueueDeclare(q.Name, false, true, true, false, amqp.Table{"x-max-length": int32(5)}); err == nil {
		t.Fatal("inequivalent redeclare accepted")
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	client, server := r.wait(t)
	if *update {
		for name, b := range map[string][]byte{"client": client, "server": server} {
			if err := os.WriteFile(filepath.Join("testdata", "amqp091-go."+name+".bin"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkRecorded(t, client, server, bodies)
}

// TestRecordedRabbitMQ decodes traffic recorded by TestLiveRabbitMQ -update
// (amqp091-go 1.16 and RabbitMQ 3.10), so the check runs without a broker.
func TestRecordedRabbitMQ(t *testing.T) {
	client, err := os.ReadFile(filepath.Join("testdata", "amqp091-go.client.bin"))
	if err != nil {
		t.Fatal(err)
	}
	server, err := os.ReadFile(filepath.Join("testdata", "amqp091-go.server.bin"))
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, client, server, liveBodies)
}

var liveBodies = [][]byte{[]byte("hello"), bytes.Repeat([]byte("0123456789abcdef"), 3000), {}}

// checkRecorded decodes both directions of the live test's conversation and
// checks the units against what the client did.
func checkRecorded(t *testing.T, client, server []byte, bodies [][]byte) {

	rec := &recorder{}
	d := New(&decode.Conn{ID: 1}, decode.DefaultOptions(), rec.emit)
	feedChunks(d, decode.DirF, client, 1000)
	d.End(decode.DirF, t0)
	feedChunks(d, decode.DirB, server, 1000)
	d.End(decode.DirB, t0)

	var seq [2][]string
	var delivered [][]byte
	for _, u := range rec.units {
		if u.Err() != "" {
			t.Errorf("%s %s at %d: %s", u.Dir, u.Type, u.Offset, u.Err())
		}
		if len(u.Warnings()) > 0 {
			t.Errorf("%s %s: warnings %v", u.Dir, u.Type, u.Warnings())
		}
		fs := u.Fields()
		if u.Type != "content-body" && u.Type != "content-header" && u.Type != "heartbeat" {
			seq[u.Dir] = append(seq[u.Dir], u.Type)
		}
		if u.Type == "connection.start-ok" && (!u.Secret || bytes.Contains(u.Raw, []byte("\x00guest\x00guest"))) {
			t.Error("password not redacted")
		}
		if m := decode.Find(fs, "amqp.message.method"); m != nil && m.Value == "basic.deliver" {
			b := decode.Find(fs, "amqp.message.body").Value
			switch b := b.(type) {
			case string:
				delivered = append(delivered, []byte(b))
			case []byte:
				delivered = append(delivered, b)
			}
		}
	}
	wantF := []string{"protocol-header", "connection.start-ok", "connection.tune-ok", "connection.open",
		"channel.open", "confirm.select", "queue.declare", "exchange.declare", "queue.bind",
		"basic.publish", "basic.publish", "basic.publish", "basic.consume", "basic.ack", "basic.ack", "basic.ack",
		"channel.open", "queue.declare", "channel.close-ok", "channel.close", "connection.close"}
	wantB := []string{"connection.start", "connection.tune", "connection.open-ok", "channel.open-ok",
		"confirm.select-ok", "queue.declare-ok", "exchange.declare-ok", "queue.bind-ok",
		"basic.ack", "basic.ack", "basic.ack", "basic.consume-ok", "basic.deliver", "basic.deliver", "basic.deliver",
		"channel.open-ok", "channel.close", "channel.close-ok", "connection.close-ok"}
	if !slices.Equal(seq[decode.DirF], wantF) {
		t.Errorf("client methods\n%s\nwant\n%s", strings.Join(seq[decode.DirF], " "), strings.Join(wantF, " "))
	}
	if !slices.Equal(seq[decode.DirB], wantB) {
		t.Errorf("server methods\n%s\nwant\n%s", strings.Join(seq[decode.DirB], " "), strings.Join(wantB, " "))
	}
	// The empty body has no body frame: its message completes on the header.
	if len(delivered) != len(bodies) {
		t.Fatalf("%d messages assembled, want %d", len(delivered), len(bodies))
	}
	for i := range bodies {
		if !bytes.Equal(delivered[i], bodies[i]) {
			t.Errorf("delivery %d: %d bytes, want %d", i, len(delivered[i]), len(bodies[i]))
		}
	}
	var total int
	for _, u := range rec.units {
		total += u.Len
	}
	if total != len(client)+len(server) {
		t.Errorf("units cover %d of %d bytes", total, len(client)+len(server))
	}
	if testing.Verbose() {
		for _, u := range rec.units {
			t.Logf("%s ch=%d %-20s %s", u.Dir, u.Channel, u.Type, u.Summary)
		}
	}
}
