package proxy_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture/proxy"
)

// TestInterceptStarts: each protocol's TLS start is taken over with a
// certificate from the proxy's CA, and what passes is seen in clear: a
// PostgreSQL client's GSSENCRequest (answered N) then SSLRequest (answered
// S), and a client that starts TLS at once offering PostgreSQL 17's ALPN.
func TestInterceptStarts(t *testing.T) {
	up := listen(t)
	defer up.Close()
	go echoUpper(t, up)
	caDir := t.TempDir()
	col := newCollector()
	front := listen(t)
	p := &proxy.Proxy{Routes: []proxy.Route{{Listen: front.Addr().String(), Upstream: up.Addr().String(), UpstreamTLS: "disable"}},
		Handler: col, CADir: caDir}
	startProxy(t, p, front)
	ca, err := proxy.LoadOrCreateCA(caDir) // made now; the proxy loads it on first use
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())

	request := func(code uint32) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint32(b, 8)
		binary.BigEndian.PutUint32(b[4:], code)
		return b
	}
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	answer := make([]byte, 1)
	c.Write(request(80877104)) // GSSENCRequest
	if _, err := io.ReadFull(c, answer); err != nil || answer[0] != 'N' {
		t.Fatalf("GSSENCRequest answered %q %v, want N", answer, err)
	}
	c.Write(request(80877103)) // SSLRequest
	if _, err := io.ReadFull(c, answer); err != nil || answer[0] != 'S' {
		t.Fatalf("SSLRequest answered %q %v, want S", answer, err)
	}
	// The certificate verifies against the CA, for the name asked for.
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "db.example"})
	if got := talk(t, tc, "select 1"); got != "SELECT 1" {
		t.Fatalf("through the intercepted TLS: %q", got)
	}
	direct, err := tls.Dial("tcp", front.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"postgresql"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := direct.ConnectionState().NegotiatedProtocol; got != "postgresql" {
		t.Errorf("direct TLS negotiated ALPN %q, want postgresql", got)
	}
	if got := talk(t, direct, "direct"); got != "DIRECT" {
		t.Fatalf("through direct TLS: %q", got)
	}
	// The handler saw clear text, and not the negotiation.
	for range 2 {
		id := <-col.closed
		col.busy.Lock()
		b := col.data[id]
		if bytes.Contains(b[0].Bytes(), request(80877103)) || !(bytes.HasPrefix(b[0].Bytes(), []byte("select 1")) || bytes.HasPrefix(b[0].Bytes(), []byte("direct"))) {
			t.Errorf("flow %d: the handler saw %q", id, b[0].Bytes())
		}
		col.busy.Unlock()
	}
}

// TestNoInterceptSaysSo: under NoIntercept an SSLRequest reaches the server
// untouched, and the proxy says the session will not be decoded.
func TestNoInterceptSaysSo(t *testing.T) {
	up := listen(t)
	defer up.Close()
	go echoUpper(t, up)
	logs := make(chan string, 16)
	front := listen(t)
	p := &proxy.Proxy{Routes: []proxy.Route{{Listen: front.Addr().String(), Upstream: up.Addr().String()}},
		Handler: newCollector(), NoIntercept: true, Log: func(m string) { logs <- m }}
	startProxy(t, p, front)
	c, err := net.Dial("tcp", front.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}
	c.Write(req)
	// (The echo upper-cases as UTF-8: compare the bytes it keeps.)
	echo := make([]byte, 5)
	if _, err := io.ReadFull(c, echo); err != nil || !bytes.Equal(echo, req[:5]) {
		t.Fatalf("the server got %q %v, want the SSLRequest untouched", echo, err)
	}
	for {
		select {
		case m := <-logs:
			if bytes.Contains([]byte(m), []byte("a PostgreSQL SSLRequest, passed through (--no-intercept)")) {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no line saying the TLS passes undecoded")
		}
	}
}

// TestServerSpeaksFirst: a client that waits for the server's greeting is
// forwarded once the look at its first bytes gives up, and its session
// then goes on as any other.
func TestServerSpeaksFirst(t *testing.T) {
	up := listen(t)
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("HELLO\n"))
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				c.Write(bytes.ToUpper(buf[:n]))
			}()
		}
	}()
	for _, noIntercept := range []bool{false, true} {
		front := listen(t)
		startProxy(t, &proxy.Proxy{Routes: []proxy.Route{{Listen: front.Addr().String(), Upstream: up.Addr().String()}},
			Handler: newCollector(), CADir: t.TempDir(), NoIntercept: noIntercept}, front)
		c, err := net.Dial("tcp", front.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(15 * time.Second))
		greeting := make([]byte, 6)
		if _, err := io.ReadFull(c, greeting); err != nil || string(greeting) != "HELLO\n" {
			t.Fatalf("no-intercept=%v: greeting %q %v", noIntercept, greeting, err)
		}
		c.Write([]byte("then me"))
		answer := make([]byte, 7)
		if _, err := io.ReadFull(c, answer); err != nil || string(answer) != "THEN ME" {
			t.Fatalf("no-intercept=%v: after the greeting %q %v", noIntercept, answer, err)
		}
		c.Close()
	}
}
