package live_test

import (
	"context"
	"encoding/binary"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/live"
)

func TestAFPacketLoopbackFilter(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump, which compiles the filter, is not installed")
	}
	testEngine(t, live.EngineAFPacket, "lo", true)
}

// udpTo reports whether an Ethernet frame holds an IPv4 UDP datagram to
// port (no IP options).
func udpTo(data []byte, port int) bool {
	return len(data) >= 42 && binary.BigEndian.Uint16(data[12:14]) == 0x0800 && data[14] == 0x45 &&
		data[23] == 17 && int(binary.BigEndian.Uint16(data[36:38])) == port
}

// TestAFPacketSnaplenAndTime captures on lo with a snap length shorter
// than the datagrams sent: each keeps snaplen bytes and its whole length.
// The capture is held in its Tap by a datagram H while a datagram S is
// sent, so that S's time shows when the kernel received it, not when it
// was read. The kernel turns its receive stamps on for the whole system
// only some moments after the first socket asks for them (the deferred
// work of net_enable_timestamp): until then it stamps a frame when it is
// read. So the test tries some rounds, and wants S stamped on time in one.
func TestAFPacketSnaplenAndTime(t *testing.T) {
	requireRoot(t)
	const snap, payload, rounds = 100, 1000, 8
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	port := srv.LocalAddr().(*net.UDPAddr).Port
	type seen struct {
		captured, length int
		time             time.Time
	}
	// Datagrams are marked by their first two bytes: 'H' or 'S', round.
	type round struct {
		held, stamped, release chan struct{}
		released               bool
		h, s                   seen
	}
	var mu sync.Mutex
	r := make([]*round, rounds)
	for i := range r {
		r[i] = &round{held: make(chan struct{}), stamped: make(chan struct{}), release: make(chan struct{})}
	}
	defer func() { // a capture held by a failed round goes on
		for _, ro := range r {
			if !ro.released {
				close(ro.release)
			}
		}
	}()
	ready := make(chan struct{})
	cfg := &live.Config{Interface: "lo", Engine: live.EngineAFPacket, Snaplen: snap, Ready: func() { close(ready) },
		Options: &capture.Options{Tap: func(p *capture.Packet) {
			if !udpTo(p.Data, port) || len(p.Data) < 44 || int(p.Data[43]) >= rounds {
				return
			}
			ro := r[p.Data[43]]
			mu.Lock()
			defer mu.Unlock()
			// note records the datagram in at and closes done, once.
			note := func(at *seen, done chan struct{}) bool {
				if at.length != 0 {
					t.Errorf("datagram %c%d captured twice", p.Data[42], p.Data[43])
					return false
				}
				*at = seen{len(p.Data), p.Length, p.Time}
				close(done)
				return true
			}
			switch p.Data[42] {
			case 'H':
				if note(&ro.h, ro.held) {
					mu.Unlock()
					<-ro.release
					mu.Lock()
				}
			case 'S':
				note(&ro.s, ro.stamped)
			}
		}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan error, 1)
	go func() {
		_, err := live.Run(ctx, cfg, discard{})
		res <- err
	}()
	select {
	case <-ready:
	case err := <-res:
		t.Fatalf("capture did not start: %v", err)
	}
	c, err := net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(kind byte, round int) {
		b := make([]byte, payload)
		b[0], b[1] = kind, byte(round)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(ch chan struct{}, what string, i int) {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("datagram %s%d was not captured", what, i)
		}
	}
	const slack = 20 * time.Millisecond
	onTime := -1
	for i, ro := range r {
		send('H', i)
		wait(ro.held, "H", i)
		before := time.Now()
		send('S', i)
		after := time.Now()
		time.Sleep(200 * time.Millisecond)
		close(ro.release)
		ro.released = true
		wait(ro.stamped, "S", i)
		mu.Lock()
		st := ro.s.time
		mu.Unlock()
		if st.Before(before.Add(-slack)) || st.After(after.Add(slack)) {
			t.Logf("round %d: datagram S stamped %v, sent between %v and %v (read %v later)", i,
				st.Format(time.StampMicro), before.Format(time.StampMicro), after.Format(time.StampMicro), time.Since(after))
			continue
		}
		onTime = i
		break
	}
	cancel()
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if onTime < 0 {
		t.Errorf("in %d rounds, no datagram was stamped when sent rather than when read", rounds)
	} else {
		t.Logf("stamped on time in round %d", onTime)
	}
	for i, ro := range r[:max(onTime, 0)+1] {
		for kind, s := range map[string]seen{"H": ro.h, "S": ro.s} {
			if s.captured != snap || s.length != 14+20+8+payload {
				t.Errorf("datagram %s%d: captured %d bytes of %d, want %d of %d", kind, i, s.captured, s.length, snap, 14+20+8+payload)
			}
		}
	}
}

// TestAFPacketCancel cancels a capture that sees no packet: Run must
// return promptly, without a warning.
func TestAFPacketCancel(t *testing.T) {
	requireRoot(t)
	cfg := &live.Config{Interface: "lo", Engine: live.EngineAFPacket}
	if _, err := exec.LookPath("tcpdump"); err == nil {
		cfg.Filter = "udp port 9 and udp port 7" // nothing
	}
	res, cancel := startCapture(t, cfg)
	time.Sleep(50 * time.Millisecond) // let the capture wait in its read
	cancel()
	select {
	case r := <-res:
		if r.err != nil || len(r.stats.Warnings) != 0 {
			t.Errorf("after cancel: %v, warnings %q", r.err, r.stats.Warnings)
		}
	case <-time.After(time.Second):
		t.Fatal("the capture did not end within a second of the cancel")
	}
}

// result is what live.Run returned.
type result struct {
	stats *capture.Stats
	err   error
}

// startCapture runs cfg into discard until cancel, or the end of the
// test; it returns once the capture has started.
func startCapture(t *testing.T, cfg *live.Config) (<-chan result, context.CancelFunc) {
	t.Helper()
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	res := make(chan result, 1)
	go func() {
		s, err := live.Run(ctx, cfg, discard{})
		res <- result{s, err}
	}()
	select {
	case <-ready:
	case r := <-res:
		t.Fatalf("capture did not start: %v", r.err)
	}
	return res, cancel
}

type discard struct{}

func (discard) Data(*capture.Flow, bool, []byte, time.Time) {}
func (discard) Gap(*capture.Flow, bool, int, time.Time)     {}
func (discard) Close(*capture.Flow, time.Time)              {}

// TestAFPacketDroppedWhileRunning: a capture whose reader is held up
// while a burst fills its small buffer reports the kernel's drops in
// Config.Dropped while it still runs, then in its Stats with a warning.
func TestAFPacketDroppedWhileRunning(t *testing.T) {
	requireRoot(t)
	var dropped atomic.Int64
	var once sync.Once
	hold := make(chan struct{})
	cfg := &live.Config{Interface: "lo", Engine: live.EngineAFPacket, Buffer: 64 << 10, Dropped: &dropped,
		Options: &capture.Options{Tap: func(*capture.Packet) { once.Do(func() { <-hold }) }}}
	res, cancel := startCapture(t, cfg)
	c, _ := live.UDPLoopback(t)
	p := make([]byte, 1000)
	for range 3000 {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for dropped.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	during := dropped.Load()
	close(hold)
	if during == 0 {
		t.Error("no drops reported while the capture ran, 3 s after a burst of 3,000 packets into a 64 KiB buffer")
	}
	cancel()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.stats.Dropped < during || dropped.Load() != r.stats.Dropped {
		t.Errorf("Stats.Dropped %d, Config.Dropped %d at the end, %d while running", r.stats.Dropped, dropped.Load(), during)
	}
	warned := false
	for _, w := range r.stats.Warnings {
		warned = warned || strings.Contains(w, "the kernel dropped "+strconv.FormatInt(r.stats.Dropped, 10)+" packets")
	}
	if !warned {
		t.Errorf("no warning of the drops: %q", r.stats.Warnings)
	}
}
