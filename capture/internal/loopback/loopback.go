// Package loopback runs small TCP conversations on the loopback interface
// for the capture tests that record real traffic.
package loopback

import (
	"io"
	"net"
	"testing"
)

// Exchange runs one TCP conversation through ln: the client sends request,
// the server answers reply, both close; it returns when both ends are done.
func Exchange(t testing.TB, ln net.Listener, request, reply string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, len(request))
		io.ReadFull(c, buf)
		c.Write([]byte(reply))
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(request))
	io.ReadAll(c)
	c.Close()
	<-done
}
