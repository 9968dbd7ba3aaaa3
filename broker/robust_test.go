package broker

import (
	"bytes"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

func addrOf(url string) string {
	return strings.TrimSuffix(strings.TrimPrefix(url, "amqp://guest:guest@"), "/")
}

// settleGoroutines waits for the goroutine count to come back to at most
// want, and reports the count.
func settleGoroutines(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestThousandConnections: 1,000 clients at once, each declaring,
// publishing and getting, then gone without a goroutine left.
func TestThousandConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	b, url := startBroker(t, Config{})
	before := runtime.NumGoroutine()
	const n = 1000
	conns := make([]*amqp.Connection, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			c, err := amqp.Dial(url)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
			ch, err := c.Channel()
			if err != nil {
				errs <- err
				return
			}
			q, err := ch.QueueDeclare("", false, true, true, false, nil)
			if err == nil {
				err = ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("x")})
			}
			if err == nil {
				var ok bool
				_, ok, err = ch.Get(q.Name, true)
				if err == nil && !ok {
					err = net.ErrClosed
				}
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(b.Connections()); got != n {
		t.Fatalf("%d connections open, want %d", got, n)
	}
	if q := len(b.Queues()); q != n {
		t.Fatalf("%d queues, want %d exclusive ones", q, n)
	}
	for _, c := range conns {
		c.Close()
	}
	if g := settleGoroutines(before + 4); g > before+4 {
		t.Fatalf("%d goroutines before, %d after the connections closed", before, g)
	}
	if q := len(b.Queues()); q != 0 {
		t.Fatalf("%d exclusive queues outlived their connections", q)
	}
}

// TestStalledConsumerIsBounded: a consumer that stops reading gets no more
// than the outbound limit written for it; the rest waits in the queue, and
// other clients are served meanwhile.
func TestStalledConsumerIsBounded(t *testing.T) {
	b, url := startBroker(t, Config{OutboundLimit: 256 << 10})
	// A raw consumer that never reads after consume-ok.
	nc, err := net.Dial("tcp", addrOf(url))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	fr := amqp091.NewFrameReader(nc)
	rawHandshake(t, nc, fr)
	send(t, nc, 1, &amqp091.ChannelOpen{})
	expect[*amqp091.ChannelOpenOk](t, fr)
	send(t, nc, 1, &amqp091.QueueDeclare{Queue: []byte("stall")})
	expect[*amqp091.QueueDeclareOk](t, fr)
	send(t, nc, 1, &amqp091.BasicConsume{Queue: []byte("stall"), ConsumerTag: []byte("c"), NoAck: true})
	expect[*amqp091.BasicConsumeOk](t, fr)

	_, ch := dial(t, url)
	body := bytes.Repeat([]byte("x"), 8<<10)
	const msgs = 4000 // 32 MiB in all
	for range msgs {
		if err := ch.Publish("", "stall", false, false, amqp.Publishing{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	// Everyone else is still served while the consumer stalls.
	q, err := ch.QueueDeclare("other", false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("ok")})
	if _, ok, err := ch.Get(q.Name, true); err != nil || !ok {
		t.Fatalf("another client was not served: %v %v", ok, err)
	}
	var ready int
	for _, sq := range b.Queues() {
		if sq.Name == "stall" {
			ready = sq.Ready
		}
	}
	// What left the queue is bounded by the outbound limit and the
	// socket buffers (a few MiB), far below the 32 MiB published.
	if left := msgs - ready; left*len(body) > 8<<20 {
		t.Fatalf("%d messages (%d MiB) taken from the queue for a consumer that reads nothing", left, left*len(body)>>20)
	}
	if ready == 0 {
		t.Fatal("nothing stayed in the queue")
	}
}

// TestMissedHeartbeats: a client that goes silent past two heartbeat
// intervals is disconnected; one that sends heartbeats is not.
func TestMissedHeartbeats(t *testing.T) {
	b, url := startBroker(t, Config{Heartbeat: time.Second})
	nc, err := net.Dial("tcp", addrOf(url))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fr := amqp091.NewFrameReader(nc)
	tune := rawHandshake(t, nc, fr)
	if tune.Heartbeat != 1 {
		t.Fatalf("tune offered heartbeat %d, want 1", tune.Heartbeat)
	}
	start := time.Now()
	sawHeartbeat := false
	nc.SetReadDeadline(time.Now().Add(6 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break // the broker closed the silent connection
		}
		if f.Type == amqp091.FrameHeartbeat {
			sawHeartbeat = true
		}
	}
	if d := time.Since(start); d < 1500*time.Millisecond || d > 5*time.Second {
		t.Fatalf("silent connection closed after %v, want about 2 s", d)
	}
	if !sawHeartbeat {
		t.Fatal("the broker sent no heartbeat")
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(b.Connections()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(b.Connections()) != 0 {
		t.Fatal("the connection is still listed")
	}
}

// rawHandshake negotiates a connection with the codec and returns the
// broker's tune.
func rawHandshake(t testing.TB, nc net.Conn, fr *amqp091.FrameReader) amqp091.ConnectionTune {
	t.Helper()
	nc.Write([]byte(amqp091.ProtocolHeader))
	expect[*amqp091.ConnectionStart](t, fr)
	send(t, nc, 0, &amqp091.ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00guest\x00guest"), Locale: []byte("en_US")})
	tune := *expect[*amqp091.ConnectionTune](t, fr)
	send(t, nc, 0, &amqp091.ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax, Heartbeat: tune.Heartbeat})
	send(t, nc, 0, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})
	expect[*amqp091.ConnectionOpenOk](t, fr)
	return tune
}

func send(t testing.TB, nc net.Conn, ch uint16, m amqp091.Method) {
	t.Helper()
	if _, err := nc.Write(amqp091.AppendMethodFrame(nil, ch, m)); err != nil {
		t.Fatal(err)
	}
}

func expect[M amqp091.Method](t testing.TB, fr *amqp091.FrameReader) M {
	t.Helper()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == amqp091.FrameHeartbeat {
			continue
		}
		m, err := amqp091.ParseMethod(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		want, ok := m.(M)
		if !ok {
			if cl, isClose := m.(*amqp091.ConnectionClose); isClose {
				t.Fatalf("got connection.close %d %s", cl.ReplyCode, cl.ReplyText)
			}
			t.Fatalf("got %s", m.Name())
		}
		return want
	}
}

// clientStreams returns the client-to-server bytes of each connection of
// a shipped capture of a real client and RabbitMQ.
func clientStreams(t testing.TB, name string) [][]byte {
	t.Helper()
	var s streams
	if _, err := capture.ReadFile(filepath.Join("..", "testdata", name), &s, nil); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range s.order {
		out = append(out, s.client[f])
	}
	return out
}

type streams struct {
	client map[*capture.Flow][]byte
	order  []*capture.Flow
}

func (s *streams) Data(f *capture.Flow, fromA bool, data []byte, _ time.Time) {
	if s.client == nil {
		s.client = map[*capture.Flow][]byte{}
	}
	if _, ok := s.client[f]; !ok {
		s.order = append(s.order, f)
	}
	if fromA {
		s.client[f] = append(s.client[f], data...)
	} else if s.client[f] == nil {
		s.client[f] = []byte{}
	}
}
func (s *streams) Gap(*capture.Flow, bool, int, time.Time) {}
func (s *streams) Close(*capture.Flow, time.Time)          {}

// FuzzConnection feeds a broker connection arbitrary client bytes (seeded
// with real clients' sessions): it must never panic or hang, and must let
// go of the connection when the client does.
func FuzzConnection(f *testing.F) {
	for _, name := range []string{"amqp091-pika.pcapng", "amqp091-go.pcapng"} {
		for _, s := range clientStreams(f, name) {
			f.Add(s)
		}
	}
	if len(clientStreams(f, "amqp091-pika.pcapng")) == 0 {
		f.Fatal("no client stream in the seed capture")
	}
	f.Add([]byte(amqp091.ProtocolHeader))
	f.Add([]byte("AMQP\x00\x00\x09\x01\x01\x00\x00\xff\xff\xff\xff"))
	b, err := New(Config{Heartbeat: -1})
	if err != nil {
		f.Fatal(err)
	}
	b.silentDelay = 0
	f.Cleanup(func() { b.Close(); checkLedger(f, b) })
	f.Fuzz(func(t *testing.T, in []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			newConn(b, loopbackConn{server}).serve()
			close(done)
		}()
		go func() {
			// Drain what the broker writes so it never blocks on us.
			buf := make([]byte, 64<<10)
			for {
				if _, err := client.Read(buf); err != nil {
					return
				}
			}
		}()
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not end after its client went away")
		}
	})
}

// loopbackConn is a net.Pipe end that says it is a loopback TCP socket,
// so guest may log in over it.
type loopbackConn struct{ net.Conn }

func (loopbackConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (loopbackConn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5672} }

// TestFuzzSeedsReachTheBroker: the fuzz target's seeds get past the
// handshake, so fuzzing exercises the channel state machines.
func TestFuzzSeedsReachTheBroker(t *testing.T) {
	b, err := New(Config{Heartbeat: -1})
	if err != nil {
		t.Fatal(err)
	}
	in := clientStreams(t, "amqp091-pika.pcapng")[0]
	client, server := net.Pipe()
	done := make(chan struct{})
	go func() { newConn(b, loopbackConn{server}).serve(); close(done) }()
	var out bytes.Buffer
	read := make(chan struct{})
	closeOk := amqp091.AppendMethodFrame(nil, 0, &amqp091.ConnectionCloseOk{})
	answered := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		once := false
		for {
			n, err := client.Read(buf)
			out.Write(buf[:n])
			if !once && bytes.Contains(out.Bytes(), closeOk) {
				once = true
				close(answered)
			}
			if err != nil {
				close(read)
				return
			}
		}
	}()
	client.Write(in)
	select {
	case <-answered: // the session's connection.close was answered
	case <-time.After(10 * time.Second):
	}
	client.Close() // as a client does after close-ok
	<-done
	<-read
	if !bytes.Contains(out.Bytes(), []byte("amq.direct")) && !bytes.Contains(out.Bytes(), amqp091.AppendMethodFrame(nil, 0, &amqp091.ConnectionOpenOk{})) {
		t.Fatalf("the replayed pika session did not get past connection.open: %q", out.Bytes())
	}
}

// TestMemoryWatermarkBlocksPublishers: above the watermark a publishing
// connection gets connection.blocked and is not read; consumers draining
// the queue unblock it.
func TestMemoryWatermarkBlocksPublishers(t *testing.T) {
	b, url := startBroker(t, Config{MemoryHighWatermark: 1 << 20})
	pub, pch := dial(t, url)
	blocked := pub.NotifyBlocked(make(chan amqp.Blocking, 4))
	if _, err := pch.QueueDeclare("wm", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("m"), 64<<10)
	published := make(chan int, 1)
	go func() {
		n := 0
		for ; n < 64; n++ { // 4 MiB, four times the watermark
			if pch.Publish("", "wm", false, false, amqp.Publishing{Body: body}) != nil {
				break
			}
		}
		published <- n
	}()
	select {
	case bl := <-blocked:
		if !bl.Active || bl.Reason != "low on memory" {
			t.Fatalf("blocking %+v", bl)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no connection.blocked above the watermark")
	}
	if !b.Overview().Blocked {
		t.Fatal("the overview does not say publishers are blocked")
	}
	if used := b.Overview().MemoryUsed; used > 2<<20 {
		t.Fatalf("%d bytes held while blocked; the watermark is 1 MiB", used)
	}
	// Drain: the publisher is unblocked and finishes.
	_, cch := dial(t, url)
	msgs, err := cch.Consume("wm", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	deadline := time.After(20 * time.Second)
	for got < 64 {
		select {
		case <-msgs:
			got++
		case <-deadline:
			t.Fatalf("consumed %d of 64", got)
		}
	}
	if n := <-published; n != 64 {
		t.Fatalf("published %d of 64", n)
	}
	select {
	case bl := <-blocked:
		if bl.Active {
			t.Fatalf("second notification %+v, want unblocked", bl)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no connection.unblocked")
	}
}

// TestDefaultMaxLength: a queue declared without x-max-length gets the
// broker's default; one that names its own keeps it.
func TestDefaultMaxLength(t *testing.T) {
	_, url := startBroker(t, Config{DefaultMaxLength: 3})
	_, ch := dial(t, url)
	ch.QueueDeclare("bounded", false, true, false, false, nil)
	ch.QueueDeclare("own", false, true, false, false, amqp.Table{"x-max-length": int32(5)})
	for i := range 10 {
		for _, q := range []string{"bounded", "own"} {
			ch.Publish("", q, false, false, amqp.Publishing{Body: []byte{byte('0' + i)}})
		}
	}
	for q, want := range map[string]int{"bounded": 3, "own": 5} {
		st, err := ch.QueueDeclarePassive(q, false, true, false, false, nil)
		if err != nil || st.Messages != want {
			t.Fatalf("%s holds %d (%v), want %d", q, st.Messages, err, want)
		}
	}
	// Drop-head: the newest stay.
	if m, ok, _ := ch.Get("bounded", true); !ok || string(m.Body) != "7" {
		t.Fatalf("head of bounded is %q, want \"7\"", m.Body)
	}
}

// TestAnnouncedBodySizeIsNotReserved: content headers announcing huge
// bodies on many channels cost what was sent, not what was announced.
func TestAnnouncedBodySizeIsNotReserved(t *testing.T) {
	_, url := startBroker(t, Config{})
	nc, err := net.Dial("tcp", addrOf(url))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fr := amqp091.NewFrameReader(nc)
	rawHandshake(t, nc, fr)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const channels = 200
	var out []byte
	for ch := uint16(1); ch <= channels; ch++ {
		out = amqp091.AppendMethodFrame(out, ch, &amqp091.ChannelOpen{})
		out = amqp091.AppendMethodFrame(out, ch, &amqp091.BasicPublish{RoutingKey: []byte("nowhere")})
		out = amqp091.AppendHeaderFrame(out, ch, &amqp091.ContentHeader{ClassID: 60, BodySize: 100 << 20})
	}
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	// A last channel.open is answered only after every header before it
	// was handled.
	out = amqp091.AppendMethodFrame(out[:0], channels+1, &amqp091.ChannelOpen{})
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	for range channels + 1 {
		expect[*amqp091.ChannelOpenOk](t, fr)
	}
	runtime.ReadMemStats(&after)
	// 200 × 100 MiB announced; a reservation of each would be 20 GiB.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 512<<20 {
		t.Fatalf("heap grew %d MiB for announced, unsent bodies", grown>>20)
	}
}

// TestMemoryAccounting: what the watermark counts. A message in ten queues
// counts once; body frames count as they arrive, before the message is
// whole; a transaction's publishes count until commit or rollback; and
// everything is given back when the messages go.
func TestMemoryAccounting(t *testing.T) {
	b, url := startBroker(t, Config{})
	used := func() int64 { return b.mem.used.Load() }
	waitUsed := func(what string, want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for used() != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := used(); got != want {
			t.Fatalf("%s: %d bytes counted, want %d", what, got, want)
		}
	}
	_, ch := dial(t, url)
	if err := ch.ExchangeDeclare("fan", "fanout", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		q := "acct-" + strconv.Itoa(i)
		if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(q, "", "fan", false, nil); err != nil {
			t.Fatal(err)
		}
	}
	body := bytes.Repeat([]byte("b"), 1000)
	if err := ch.Publish("fan", "", false, false, amqp.Publishing{Body: body}); err != nil {
		t.Fatal(err)
	}
	q0, err := ch.QueueDeclarePassive("acct-9", false, true, false, false, nil)
	if err != nil || q0.Messages != 1 {
		t.Fatalf("acct-9: %+v %v", q0, err)
	}
	one := used()
	if one < 1000 || one > 1100 {
		t.Fatalf("one 1000-byte message in ten queues counts %d bytes, want it once (header and body)", one)
	}
	for i := range 9 {
		if _, err := ch.QueuePurge("acct-"+strconv.Itoa(i), false); err != nil {
			t.Fatal(err)
		}
	}
	waitUsed("purged from nine of ten queues", one)
	if _, err := ch.QueuePurge("acct-9", false); err != nil {
		t.Fatal(err)
	}
	waitUsed("purged from all", 0)

	// A transaction's publishes, until rollback.
	if err := ch.Tx(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := ch.Publish("fan", "", false, false, amqp.Publishing{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ch.QueueDeclarePassive("acct-0", false, true, false, false, nil); err != nil { // a round trip
		t.Fatal(err)
	}
	if got := used(); got != 3*one {
		t.Fatalf("three uncommitted publishes count %d bytes, want %d", got, 3*one)
	}
	if err := ch.TxRollback(); err != nil {
		t.Fatal(err)
	}
	waitUsed("rolled back", 0)

	// Body frames as they arrive, given back when the connection goes.
	nc, err := net.Dial("tcp", addrOf(url))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fr := amqp091.NewFrameReader(nc)
	rawHandshake(t, nc, fr)
	out := amqp091.AppendMethodFrame(nil, 1, &amqp091.ChannelOpen{})
	out = amqp091.AppendMethodFrame(out, 1, &amqp091.BasicPublish{Exchange: []byte("fan")})
	out = amqp091.AppendHeaderFrame(out, 1, &amqp091.ContentHeader{ClassID: 60, BodySize: 1 << 20})
	out = amqp091.AppendBodyFrames(out, 1, bytes.Repeat([]byte("p"), 100000), 131072)
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	expect[*amqp091.ChannelOpenOk](t, fr)
	waitUsed("100000 bytes of a body under way", 100000)
	// A method now would be a 505 connection error; the client vanishes
	// mid-message instead.
	nc.Close()
	waitUsed("the connection gone mid-message", 0)
}
