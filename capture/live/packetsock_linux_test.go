package live

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func openLoopback(t *testing.T, snaplen int, prog []bpf.RawInstruction) *packetSocket {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a packet socket needs root or CAP_NET_RAW")
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	s, err := openPacketSocket(lo.Index, snaplen, 0, prog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPacketSocketClose closes a socket, with a filter that passes
// nothing, while another goroutine waits in read: read returns
// os.ErrClosed at once.
func TestPacketSocketClose(t *testing.T) {
	s := openLoopback(t, 1500, []bpf.RawInstruction{{Op: 0x06, K: 0}}) // ret #0
	done := make(chan error, 1)
	go func() {
		_, _, _, err := s.read()
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("read returned before the close: %v", err)
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("read after close: %v, want os.ErrClosed", err)
		}
	case <-time.After(time.Second):
		t.Fatal("read still waits a second after the close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, _, _, err := s.read(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read on a closed socket: %v, want os.ErrClosed", err)
	}
}

// TestPacketSocketUnfiltered reads with no filter, so that the kernel
// does not cut the frames and recvmsg's MSG_TRUNC length is the whole
// one, and checks that reading allocates nothing.
func TestPacketSocketUnfiltered(t *testing.T) {
	const snap, payload = 64, 500
	s := openLoopback(t, snap, nil)
	c, port := udpLoopback(t)
	// Queue the frames before reading: lo shows each twice, going out and
	// coming in.
	const sent = 40
	before := time.Now()
	for range sent {
		if _, err := c.Write(make([]byte, payload)); err != nil {
			t.Fatal(err)
		}
	}
	mine := 0
	allocs := testing.AllocsPerRun(sent, func() {
		data, length, ts, err := s.read()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 38 || data[23] != 17 || int(data[36])<<8|int(data[37]) != port {
			return // other traffic on lo
		}
		mine++
		if len(data) != snap || length != 14+20+8+payload {
			t.Errorf("captured %d bytes of %d, want %d of %d", len(data), length, snap, 14+20+8+payload)
		}
		if ts.Before(before.Add(-time.Second)) || ts.After(time.Now()) {
			t.Errorf("stamped %v, sent after %v", ts, before)
		}
	})
	if mine == 0 {
		t.Fatal("none of the datagrams was read")
	}
	if allocs != 0 {
		t.Errorf("%v allocations per read, want 0", allocs)
	}
}

// TestPacketSocketDrops fills a socket with a small receive buffer
// without reading it: the frames the kernel could not queue are counted
// as dropped (PACKET_STATISTICS), collected as the socket closes.
func TestPacketSocketDrops(t *testing.T) {
	s := openLoopback(t, 1500, nil)
	if err := s.conn.Control(func(fd uintptr) {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	c, _ := udpLoopback(t)
	const sent = 2000
	p := make([]byte, 1000)
	for range sent {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.dropped(); n != 0 {
		t.Fatalf("%d dropped before the counters were read", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The buffer holds a few frames of the 2000 (4000 with loopback's
	// outgoing copies); the other traffic on lo only adds to the drops.
	if n := s.dropped(); n < sent/2 {
		t.Errorf("%d frames dropped, want at least %d of the %d sent to a 4 KiB buffer", n, sent/2, sent)
	}
}

// TestPacketSocketBuffer: the receive buffer asked for is the one the
// socket gets (the kernel reports twice what it was asked, its
// bookkeeping included).
func TestPacketSocketBuffer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a packet socket needs root or CAP_NET_RAW")
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{64 << 10, 8 << 20} {
		s, err := openPacketSocket(lo.Index, 1500, size, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		s.conn.Control(func(fd uintptr) { got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) })
		s.Close()
		if err != nil || got != size {
			t.Errorf("asked %d bytes, SO_RCVBUF says %d (%v)", size, got, err)
		}
	}
}

// TestPacketSocketRestoresVLAN sends an 802.1Q-tagged frame and an
// untagged one into one end of a veth pair. The kernel's receive path
// takes the tag out of the first at the other end and reports it in the
// auxiliary data; read puts it back, so both frames read as they were
// sent.
func TestPacketSocketRestoresVLAN(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a packet socket and a veth pair need root")
	}
	name := "wtv" + strconv.Itoa(os.Getpid()%100000)
	a, b := name+"a", name+"b"
	if out, err := exec.Command("ip", "link", "add", a, "type", "veth", "peer", "name", b).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no veth pair: ip link add: %v %s", err, out)
		}
		t.Skipf("no veth pair (ip link add: %v %s)", err, out)
	}
	defer exec.Command("ip", "link", "del", a).Run()
	for _, n := range []string{a, b} {
		if out, err := exec.Command("ip", "link", "set", n, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v %s", n, err, out)
		}
	}
	ifA, err := net.InterfaceByName(a)
	if err != nil {
		t.Fatal(err)
	}
	ifB, err := net.InterfaceByName(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openPacketSocket(ifB.Index, 1500, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := make(chan []byte, 64)
	go func() {
		defer close(got)
		for {
			data, length, _, err := s.read()
			if err != nil {
				return
			}
			if length != len(data) {
				data = nil // a cut frame: reported as such
			}
			got <- append([]byte(nil), data...)
		}
	}()

	const etherType = 0x88b5 // IEEE 802 local experimental
	frame := func(tag bool) []byte {
		f := append(append([]byte(nil), ifB.HardwareAddr...), ifA.HardwareAddr...)
		if tag {
			f = append(f, 0x81, 0x00, 0x60, 0x2a) // priority 3, VLAN 42
		}
		f = append(f, etherType>>8, etherType&0xff)
		for i := range 46 {
			f = append(f, byte(i))
		}
		return f
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Ifindex: ifA.Index}
	want := [][]byte{frame(true), frame(false)}
	for _, f := range want {
		if err := unix.Sendto(fd, f, 0, to); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(2 * time.Second)
	for len(want) > 0 {
		select {
		case f := <-got:
			// Other frames (the link's IPv6 neighbour discovery) pass by.
			for i, w := range want {
				if bytes.Equal(f, w) {
					want = append(want[:i], want[i+1:]...)
					break
				}
			}
		case <-deadline:
			t.Fatalf("%d frames not read as they were sent (tagged first): % x", len(want), want)
		}
	}
}
