package proxy_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
)

// TestParseFault: the grammar's forms, and what it refuses.
func TestParseFault(t *testing.T) {
	good := map[string]proxy.Fault{
		"delay 50ms":                        {Kind: proxy.FaultDelay, Delay: 50 * time.Millisecond},
		"delay 50ms jitter 20ms to-client":  {Kind: proxy.FaultDelay, Delay: 50 * time.Millisecond, Jitter: 20 * time.Millisecond, Dir: proxy.FaultToClient},
		"throttle 64KiB/s up":               {Kind: proxy.FaultThrottle, Rate: 64 << 10, Dir: proxy.FaultToServer},
		"close after 10KiB":                 {Kind: proxy.FaultCloseAfter, Bytes: 10 << 10},
		"reset after 1MB server->client":    {Kind: proxy.FaultCloseAfter, Bytes: 1e6, Reset: true, Dir: proxy.FaultToClient},
		`close when amqp.method == "a b"`:   {Kind: proxy.FaultCloseWhen, When: `amqp.method == "a b"`},
		"drop all to-server when x":         {Kind: proxy.FaultDrop, All: true, Dir: proxy.FaultToServer, When: "x"},
		"on 2 corrupt when frame.len > 100": {Kind: proxy.FaultCorrupt, Route: "2", When: "frame.len > 100"},
		"on 127.0.0.1:1 delay 1s both":      {Kind: proxy.FaultDelay, Delay: time.Second, Route: "127.0.0.1:1"},
	}
	for s, want := range good {
		got, err := proxy.ParseFault(s)
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		want.Text = got.Text
		if got != want {
			t.Errorf("%q: got %+v, want %+v", s, got, want)
		}
	}
	for _, s := range []string{"", "delay", "delay x", "throttle 1KiB", "close", "close after", "drop", "drop x", "corrupt when", "delay 1s when x", "fly away", "delay 1ms jitter 2ms", "throttle 0/s"} {
		if _, err := proxy.ParseFault(s); err == nil || !strings.HasPrefix(err.Error(), "fault ") {
			t.Errorf("%q: error %v", s, err)
		}
	}
}

// byteInspector matches a frame whose bytes contain the filter's text.
type byteInspector struct {
	mu     *sync.Mutex
	frames *[]string
	last   []byte
}

func (b *byteInspector) Frame(toServer bool, frame []byte, t time.Time) {
	b.last = append(b.last[:0], frame...)
	b.mu.Lock()
	*b.frames = append(*b.frames, string(frame))
	b.mu.Unlock()
}

func (b *byteInspector) Match(when string) (string, bool) {
	return "frame " + when, bytes.Contains(b.last, []byte(when))
}

func (b *byteInspector) Close() {}

// noteCollector is a collector that keeps notes in order with the bytes.
type noteCollector struct {
	*collector
	notes []string
}

func (n *noteCollector) Note(f *capture.Flow, fromA bool, kind, msg string, t time.Time) {
	n.enter(f)
	defer n.leave()
	n.notes = append(n.notes, kind+": "+msg)
	n.order = append(n.order, "NOTE "+msg)
}

func amqpFrame(payload string) []byte {
	b := []byte{1, 0, 1, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[3:], uint32(len(payload)))
	return append(append(b, payload...), 0xce)
}

// TestFaultDropFramed: a drop rule judges whole AMQP frames even when the
// client writes them a byte at a time; the dropped frame never reaches
// the server (an echo), the others do, unchanged and in order, and the
// decoder gets every byte the client sent with the fault's note after the
// dropped frame.
func TestFaultDropFramed(t *testing.T) {
	up := listen(t)
	defer up.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := up.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
		c.Close()
	}()
	col := &noteCollector{collector: newCollector()}
	var mu sync.Mutex
	var frames []string
	set := proxy.NewFaultSet()
	if _, err := set.Add("drop to-server when two"); err != nil {
		t.Fatal(err)
	}
	p := &proxy.Proxy{
		Routes:  []proxy.Route{{Upstream: up.Addr().String()}},
		Handler: col,
		Faults:  set,
		Inspect: func(client, server netip.AddrPort) proxy.Inspector {
			return &byteInspector{mu: &mu, frames: &frames}
		},
		NoIntercept: true,
	}
	front := listen(t)
	startProxy(t, p, front)
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	header := []byte("AMQP\x00\x00\x09\x01")
	one, two, three := amqpFrame("one"), amqpFrame("two"), amqpFrame("three!")
	sent := bytes.Join([][]byte{header, one, two, three}, nil)
	for i := range sent {
		if _, err := c.Write(sent[i : i+1]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // separate reads, most of the time
	}
	c.(*net.TCPConn).CloseWrite()
	var server []byte
	select {
	case server = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the server never saw the client's end")
	}
	c.Close()
	if want := bytes.Join([][]byte{header, one, three}, nil); !bytes.Equal(server, want) {
		t.Fatalf("server got %q, want %q", server, want)
	}
	<-col.closed
	col.busy.Lock()
	defer col.busy.Unlock()
	for _, b := range col.data {
		if !bytes.Equal(b[0].Bytes(), sent) {
			t.Errorf("the decoder got %q, want every byte sent %q", b[0].Bytes(), sent)
		}
	}
	if len(col.notes) != 1 || !strings.Contains(col.notes[0], "fault 1 (drop to-server when two): frame two (11 bytes) not forwarded to the server") {
		t.Fatalf("notes %q", col.notes)
	}
	// The note comes right after the dropped frame's last byte.
	var before strings.Builder
	for _, s := range col.order {
		if strings.HasPrefix(s, "NOTE ") {
			break
		}
		before.WriteString(s)
	}
	if want := string(bytes.Join([][]byte{header, one, two}, nil)); before.String() != want {
		t.Errorf("the decoder had %q before the note, want %q", before.String(), want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(frames) != 4 || frames[2] != string(two) {
		t.Errorf("frames judged %q", frames)
	}
}
