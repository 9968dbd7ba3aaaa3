package live

import (
	"net"
	"testing"
)

// udpLoopback returns a UDP socket connected to a server on 127.0.0.1,
// both closed when the test ends, and the server's port: traffic on lo
// that the tests send and look for.
func udpLoopback(t *testing.T) (*net.UDPConn, int) {
	t.Helper()
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, srv.LocalAddr().(*net.UDPAddr).Port
}

// UDPLoopback is udpLoopback for the package's external tests.
var UDPLoopback = udpLoopback
