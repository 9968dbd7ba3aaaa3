package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker"
)

// TestBench10AgainstTheBroker runs the AMQP 1.0 generator against an
// embedded broker, unsettled and settled: everything sent is received,
// the JSON summary has quiver's three rates and latencies in order, and
// the queue it declared is gone afterwards.
func TestBench10AgainstTheBroker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Serve(ctx, ln) }()
	defer func() { cancel(); <-done; b.Close() }()
	uri := "amqp://guest:guest@" + ln.Addr().String() + "/"
	for _, settled := range []bool{false, true} {
		var out bytes.Buffer
		res, err := runBench10(context.Background(), bench10Config{uri: uri, queue: "b10", size: 12, credit: 10000, inflight: 1000,
			duration: 300 * time.Millisecond, settled: settled, json: true, id: "t"}, &out)
		if err != nil {
			t.Fatal(err)
		}
		var line struct{ Summary bench10Result }
		if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &line); err != nil {
			t.Fatalf("summary %q: %v", out.String(), err)
		}
		s, l := line.Summary, line.Summary.Latency
		if s.Sent == 0 || s.Received != s.Sent || s.ReceiveMisses != 0 || s != res || s.SendRate <= 0 || s.ReceiveRate <= 0 ||
			s.EndToEndRate <= 0 || s.EndToEndRate > s.SendRate*1.01 || l.Count != s.Received ||
			!(l.Min <= l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
			t.Errorf("settled %v: summary %+v", settled, s)
		}
	}
	for _, q := range b.Queues() {
		if q.Name == "b10" {
			t.Errorf("queue b10 left behind")
		}
	}
	if _, stderr, code, _ := runWiretap(t, "bench", "--uri", uri, "--protocol", "amqp2"); code != 2 || !strings.Contains(stderr, "bench: ") {
		t.Errorf("--protocol amqp2: exit %d, %q", code, stderr)
	}
}

// TestCoalescingConnKeepsEveryByte writes frames of every size through a
// coalescingConn, from one goroutine as go-amqp does, while the other end
// reads in small pieces: the bytes arrive whole and in order, however
// the writes were gathered, and Close writes what is still pending.
func TestCoalescingConnKeepsEveryByte(t *testing.T) {
	a, b := net.Pipe()
	c := newCoalescingConn(a, time.Second)
	var want bytes.Buffer
	got := make(chan []byte)
	go func() {
		var all []byte
		buf := make([]byte, 700)
		for {
			n, err := b.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				got <- all
				return
			}
		}
	}()
	for i := range 20000 {
		frame := bytes.Repeat([]byte{byte(i)}, 1+i%97)
		frame[0] = byte(i >> 8)
		want.Write(frame)
		if n, err := c.Write(frame); err != nil || n != len(frame) {
			t.Fatalf("write %d: %d, %v", i, n, err)
		}
		if i%200 == 0 {
			// Now and then the writer pauses and the flusher finds
			// nothing to write, as between go-amqp's bursts.
			time.Sleep(100 * time.Microsecond)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if all := <-got; !bytes.Equal(all, want.Bytes()) {
		t.Fatalf("read %d bytes, wrote %d; first difference at %d", len(all), want.Len(), firstDifference(all, want.Bytes()))
	}
	if _, err := c.Write([]byte{1}); err == nil {
		t.Error("a write after Close succeeded")
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
