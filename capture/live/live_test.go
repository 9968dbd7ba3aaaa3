package live_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/internal/loopback"
	"github.com/wiretap-dev/wiretap/capture/live"
)

// watcher collects the flows to one port and signals when one closes.
type watcher struct {
	port   uint16
	mu     sync.Mutex
	data   map[int]*[2]bytes.Buffer
	flows  map[int]capture.Flow
	closed chan int
}

func (w *watcher) mine(f *capture.Flow) bool { return f.A.Port() == w.port || f.B.Port() == w.port }

func (w *watcher) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	if !w.mine(f) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flows[f.ID] = *f
	if w.data[f.ID] == nil {
		w.data[f.ID] = new([2]bytes.Buffer)
	}
	d := 1
	if fromA {
		d = 0
	}
	w.data[f.ID][d].Write(data)
}

func (w *watcher) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {}

func (w *watcher) Close(f *capture.Flow, t time.Time) {
	if w.mine(f) {
		w.closed <- f.ID
	}
}

func requireRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("live capture tests need root or CAP_NET_RAW")
		}
		t.Skip("live capture needs root or CAP_NET_RAW")
	}
}

func testEngine(t *testing.T, engine, iface string, filter bool) {
	requireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	w := &watcher{port: port, data: map[int]*[2]bytes.Buffer{}, flows: map[int]capture.Flow{}, closed: make(chan int, 10)}
	// Every packet of the exchange's data as captured: on loopback none
	// may be seen twice (engines that see a packet leave and arrive must
	// keep one). Other traffic on lo (other tests, services) is left out:
	// its retransmissions and repeated acks are not the engine's doing.
	seen := map[string]int{}
	cfg := &live.Config{Interface: iface, Engine: engine, Options: &capture.Options{
		Tap: func(p *capture.Packet) {
			if bytes.Contains(p.Data, []byte("qqqqqqqqqqqqqqqq")) || bytes.Contains(p.Data, []byte("RRRRRRRRRRRRRRRR")) {
				seen[string(p.Data)]++
			}
		},
	}}
	if filter {
		cfg.Filter = "tcp port " + ln.Addr().String()[strings.LastIndex(ln.Addr().String(), ":")+1:]
	}
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		stats *capture.Stats
		err   error
	}
	res := make(chan result)
	go func() {
		s, err := live.Run(ctx, cfg, w)
		res <- result{s, err}
	}()
	select {
	case <-ready:
	case r := <-res:
		cancel()
		t.Fatalf("capture did not start: %v", r.err)
	}
	request, reply := strings.Repeat("q", 3000), strings.Repeat("R", 70000)
	loopback.Exchange(t, ln, request, reply)
	var id int
	select {
	case id = <-w.closed: // the capture saw both FINs
	case r := <-res:
		if r.err == nil {
			r.err = errors.New(strings.Join(r.stats.Warnings, "; "))
		}
		t.Fatalf("the capture ended before the exchange was seen: %v", r.err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("the capture did not see the exchange end")
	}
	cancel()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.flows[id]
	if !f.SYN || f.B.Port() != port {
		t.Errorf("flow %+v", f)
	}
	if got := w.data[id]; got[0].String() != request || got[1].String() != reply {
		t.Errorf("captured %d/%d bytes, want %d/%d", got[0].Len(), got[1].Len(), len(request), len(reply))
	}
	for _, n := range seen {
		if n > 1 {
			t.Errorf("a packet was captured %d times", n)
			break
		}
	}
	t.Logf("%s on %s: %d packets, %d TCP segments, %d skipped", engine, iface, r.stats.Packets, r.stats.TCP, r.stats.Skipped)
	if filter && r.stats.Skipped != 0 {
		t.Errorf("the filter let through %d packets that are not TCP", r.stats.Skipped)
	}
}

func TestDumpcapLoopback(t *testing.T) {
	needDumpcap(t)
	testEngine(t, live.EngineDumpcap, "lo", true)
}

func TestDumpcapAny(t *testing.T) {
	needDumpcap(t)
	testEngine(t, live.EngineDumpcap, "any", true)
}

func TestAFPacketLoopback(t *testing.T) {
	testEngine(t, live.EngineAFPacket, "lo", false)
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := live.Run(ctx, &live.Config{Interface: "any", Engine: live.EngineAFPacket}, nil); err == nil || !strings.Contains(err.Error(), "needs dumpcap") {
		t.Errorf("any with afpacket: %v", err)
	}
	if _, err := live.Run(ctx, &live.Config{Interface: "lo", Engine: "pcap"}, nil); err == nil || !strings.Contains(err.Error(), "unknown engine") {
		t.Errorf("unknown engine: %v", err)
	}
	if _, err := exec.LookPath("dumpcap"); err == nil {
		_, err := live.Run(ctx, &live.Config{Interface: "nosuchif0", Engine: live.EngineDumpcap}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "capture: nosuchif0: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("no such interface: %v", err)
		}
		_, err = live.Run(ctx, &live.Config{Interface: "lo", Filter: "tcp port banana", Engine: live.EngineDumpcap}, nil)
		if err == nil || !strings.Contains(err.Error(), "banana") {
			t.Errorf("bad filter: %v", err)
		}
	}
	if _, err := live.Run(ctx, &live.Config{Interface: "nosuchif0", Engine: live.EngineAFPacket}, nil); err == nil || !strings.HasPrefix(err.Error(), "capture: nosuchif0: ") {
		t.Errorf("afpacket, no such interface: %v", err)
	}
}

func needDumpcap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dumpcap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dumpcap is needed (Debian package wireshark-common)")
		}
		t.Skip("dumpcap not installed")
	}
}
