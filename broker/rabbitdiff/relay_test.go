package rabbitdiff

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// fakeServer accepts connections on loopback and runs serve on each.
func fakeServer(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestRelayRecordsBothDirections(t *testing.T) {
	target := fakeServer(t, func(c net.Conn) {
		buf := make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err != nil {
			return
		}
		c.Write(method(0, &amqp091.ConnectionStart{VersionMinor: 9}))
		io.Copy(io.Discard, c) // until the client's end of stream
		c.Write([]byte("bye"))
	})
	r, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(amqp091.ProtocolHeader))
		got := make([]byte, len(method(0, &amqp091.ConnectionStart{VersionMinor: 9})))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		extra := []byte{byte(i)}
		c.Write(extra)
		// Half-closed, the server may still answer through the relay.
		c.(*net.TCPConn).CloseWrite()
		tail, _ := io.ReadAll(c)
		if string(tail) != "bye" {
			t.Errorf("connection %d: after the half close got %q", i, tail)
		}
		c.Close()
	}
	recs := r.Close(time.Second)
	if len(recs) != 2 {
		t.Fatalf("%d recordings", len(recs))
	}
	for i, rec := range recs {
		if want := amqp091.ProtocolHeader + string([]byte{byte(i)}); string(rec.ClientBytes) != want {
			t.Errorf("%d: client bytes %q, want %q", i, rec.ClientBytes, want)
		}
		if want := append(method(0, &amqp091.ConnectionStart{VersionMinor: 9}), "bye"...); !bytes.Equal(rec.ServerBytes, want) {
			t.Errorf("%d: server bytes %q, want %q", i, rec.ServerBytes, want)
		}
		if rec.Stall != "" || rec.DialErr != "" {
			t.Errorf("%d: stall %q, dial error %q", i, rec.Stall, rec.DialErr)
		}
	}
}

func TestRelayGivesUpOnASilentServer(t *testing.T) {
	target := fakeServer(t, func(c net.Conn) {
		// Answers the protocol header, then reads and says nothing.
		buf := make([]byte, 8)
		io.ReadFull(c, buf)
		c.Write(method(0, &amqp091.ConnectionStart{VersionMinor: 9}))
		io.Copy(io.Discard, c)
	})
	r, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	r.StallTimeout = 300 * time.Millisecond
	c, err := DialRaw(r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(amqp091.ProtocolHeader))
	if _, err := c.Expect("connection.start"); err != nil {
		t.Fatal(err)
	}
	// Idle with nothing asked: no stall, however long.
	time.Sleep(2 * r.StallTimeout)
	// A tune-ok wants no answer; an open does.
	c.SendMethod(0, &amqp091.ConnectionTuneOk{ChannelMax: 1})
	time.Sleep(2 * r.StallTimeout)
	start := time.Now()
	c.SendMethod(0, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})
	c.Timeout = 5 * time.Second
	_, err = c.ReadFrame()
	if err == nil {
		t.Fatal("read a frame from a silent server")
	}
	if d := time.Since(start); d < r.StallTimeout || d > r.StallTimeout+time.Second {
		t.Errorf("closed after %v, want about %v", d, r.StallTimeout)
	}
	recs := r.Close(time.Second)
	if want := "no reply to connection.open on channel 0 within 300ms"; len(recs) != 1 || recs[0].Stall != want {
		t.Errorf("recordings %+v, want one with stall %q", recs, want)
	}
}

func TestRelayDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	r, err := Listen(dead)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the relay kept a connection it could not forward")
	}
	c.Close()
	recs := r.Close(time.Second)
	if len(recs) != 1 || recs[0].DialErr == "" {
		t.Errorf("recordings %+v", recs)
	}
}

func TestRelayCloseEndsLingeringConnections(t *testing.T) {
	target := fakeServer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	r, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("x"))
	start := time.Now()
	recs := r.Close(200 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	if len(recs) != 1 || string(recs[0].ClientBytes) != "x" {
		t.Errorf("recordings %+v", recs)
	}
}

// watchFrames is a client and a server stream of a short session.
func watchFrames() (client, server []byte) {
	client = []byte(amqp091.ProtocolHeader)
	client = append(client, method(0, &amqp091.ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00guest\x00guest")})...)
	client = append(client, method(0, &amqp091.ConnectionTuneOk{ChannelMax: 2047, FrameMax: 131072})...)
	client = append(client, method(0, &amqp091.ConnectionOpen{VirtualHost: []byte("/")})...)
	client = append(client, method(1, &amqp091.ChannelOpen{})...)
	client = append(client, method(1, &amqp091.QueueDeclare{Queue: []byte("q")})...)
	client = append(client, amqp091.AppendMessage(nil, 1, &amqp091.BasicPublish{RoutingKey: []byte("q")}, nil, []byte("hello"), 0)...)
	client = append(client, method(1, &amqp091.BasicAck{DeliveryTag: 1})...)
	server = method(0, &amqp091.ConnectionStart{VersionMinor: 9})
	server = append(server, method(0, &amqp091.ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60})...)
	server = append(server, method(0, &amqp091.ConnectionOpenOk{})...)
	server = append(server, method(1, &amqp091.ChannelOpenOk{})...)
	server = append(server, amqp091.AppendHeartbeatFrame(nil)...)
	server = append(server, amqp091.AppendMessage(nil, 1, &amqp091.BasicDeliver{ConsumerTag: []byte("c"), DeliveryTag: 1}, nil, []byte("hello"), 0)...)
	server = append(server, method(1, &amqp091.QueueDeclareOk{Queue: []byte("q")})...)
	return client, server
}

func TestWatchPending(t *testing.T) {
	client, server := watchFrames()
	var w watch
	now := time.Unix(1, 0)
	w.client(client, now)
	// Outstanding: the header (0), start-ok... on channel 0 three requests
	// (header, start-ok, open); channel 1 two (open, declare). The publish
	// and the ack want nothing.
	what, ch, _, ok := w.oldest()
	if !ok || ch != 0 || what != "the protocol header" {
		t.Errorf("oldest: %q on %d (%v)", what, ch, ok)
	}
	w.server(server, now.Add(time.Second))
	if what, ch, _, ok := w.oldest(); ok {
		t.Errorf("still waiting for %s on %d", what, ch)
	}
	// Byte by byte, the same.
	var w2 watch
	for i := 1; i <= len(client); i++ {
		w2.client(client[:i], now)
	}
	for i := 1; i <= len(server); i++ {
		w2.server(server[:i], now)
	}
	if what, ch, _, ok := w2.oldest(); ok {
		t.Errorf("byte by byte: still waiting for %s on %d", what, ch)
	}
	// A channel.close from the server settles that channel.
	var w3 watch
	w3.client(append([]byte(amqp091.ProtocolHeader), method(3, &amqp091.QueueDeclare{Queue: []byte("q"), Passive: true})...), now)
	w3.server(method(0, &amqp091.ConnectionStart{}), now)
	if _, ch, _, ok := w3.oldest(); !ok || ch != 3 {
		t.Fatalf("declare on 3 not pending")
	}
	w3.server(append(method(0, &amqp091.ConnectionStart{}), method(3, &amqp091.ChannelClose{ReplyCode: 404})...), now)
	if what, ch, _, ok := w3.oldest(); ok {
		t.Errorf("after channel.close: waiting for %s on %d", what, ch)
	}
	// No-wait methods want nothing.
	var w4 watch
	w4.client(append([]byte(amqp091.ProtocolHeader), method(1, &amqp091.QueueDeclare{Queue: []byte("q"), NoWait: true})...), now)
	w4.server(method(0, &amqp091.ConnectionStart{}), now)
	if what, ch, _, ok := w4.oldest(); ok {
		t.Errorf("no-wait: waiting for %s on %d", what, ch)
	}
}

func TestWatchAllocations(t *testing.T) {
	client, server := watchFrames()
	var w watch
	w.client(client, time.Now())
	w.server(server, time.Now())
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		w.clientOff, w.serverOff = 0, 0
		w.client(client, now)
		w.server(server, now)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per session", allocs)
	}
}

func TestRelayRecordAllocations(t *testing.T) {
	_, server := watchFrames()
	c := &relayConn{}
	c.record(false, server, time.Now())
	allocs := testing.AllocsPerRun(100, func() {
		c.rec.ServerBytes = c.rec.ServerBytes[:0]
		c.watch.serverOff = 0
		c.record(false, server, time.Now())
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record", allocs)
	}
}

func BenchmarkWatch(b *testing.B) {
	client, server := watchFrames()
	var w watch
	now := time.Now()
	b.SetBytes(int64(len(client) + len(server)))
	b.ReportAllocs()
	for b.Loop() {
		w.clientOff, w.serverOff = 0, 0
		w.client(client, now)
		w.server(server, now)
	}
}

// BenchmarkRelay pushes a stream of publishes through the relay to a
// server that discards them.
func BenchmarkRelay(b *testing.B) {
	target := fakeServer(b, func(c net.Conn) { io.Copy(io.Discard, c) })
	r, err := Listen(target)
	if err != nil {
		b.Fatal(err)
	}
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		b.Fatal(err)
	}
	c.Write([]byte(amqp091.ProtocolHeader))
	var chunk []byte
	for len(chunk) < 64<<10 {
		chunk = amqp091.AppendMessage(chunk, 1, &amqp091.BasicPublish{RoutingKey: []byte("q")}, nil, []byte(strings.Repeat("x", 100)), 0)
	}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	r.Close(time.Second)
}
