package proxy_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
)

// collector records what the proxy feeds it; calls must come one at a
// time, which it checks.
type collector struct {
	inCall atomic.Int32
	busy   sync.Mutex // guards the fields below
	data   map[int]*[2]bytes.Buffer
	flows  map[int]capture.Flow
	closed chan int
	order  []string
}

func newCollector() *collector {
	return &collector{data: map[int]*[2]bytes.Buffer{}, flows: map[int]capture.Flow{}, closed: make(chan int, 100)}
}

func (c *collector) enter(f *capture.Flow) *[2]bytes.Buffer {
	if c.inCall.Add(1) != 1 {
		panic("concurrent handler calls")
	}
	c.busy.Lock()
	c.flows[f.ID] = *f
	b := c.data[f.ID]
	if b == nil {
		b = new([2]bytes.Buffer)
		c.data[f.ID] = b
	}
	return b
}

func (c *collector) leave() {
	c.busy.Unlock()
	c.inCall.Add(-1)
}

func (c *collector) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	b := c.enter(f)
	defer c.leave()
	d := 1
	if fromA {
		d = 0
	}
	b[d].Write(data)
	c.order = append(c.order, string(data))
}

func (c *collector) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	c.enter(f)
	c.leave()
	panic("the proxy never loses bytes")
}

func (c *collector) Close(f *capture.Flow, t time.Time) {
	c.enter(f)
	c.leave()
	c.closed <- f.ID
}

// echoUpper serves connections by answering each read uppercased, until
// the client half-closes.
func echoUpper(t *testing.T, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					c.Write(bytes.ToUpper(buf[:n]))
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// talk sends each message, waits for its answer, half-closes and reads to
// the end; it returns what came back.
func talk(t *testing.T, c net.Conn, msgs ...string) string {
	t.Helper()
	defer c.Close()
	var got strings.Builder
	for _, m := range msgs {
		if _, err := c.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(m))
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		got.Write(buf)
	}
	switch c := c.(type) {
	case *net.TCPConn:
		c.CloseWrite()
	case *tls.Conn:
		c.CloseWrite()
	}
	rest, _ := io.ReadAll(c)
	got.Write(rest)
	return got.String()
}

func startProxy(t *testing.T, p *proxy.Proxy, lns ...net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.ServeListeners(ctx, lns) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func TestProxy(t *testing.T) {
	up := listen(t)
	defer up.Close()
	go echoUpper(t, up)
	dead := listen(t)
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there any more

	col := newCollector()
	var logMu sync.Mutex
	var logs []string
	p := &proxy.Proxy{
		Routes:  []proxy.Route{{Upstream: up.Addr().String()}, {Upstream: deadAddr}},
		Handler: col,
		Log: func(msg string) {
			logMu.Lock()
			logs = append(logs, msg)
			logMu.Unlock()
		},
	}
	front, broken := listen(t), listen(t)
	startProxy(t, p, front, broken)

	// A client of the broken route, and one that leaves at once, do not
	// disturb the others.
	if c, err := net.Dial("tcp", broken.Addr().String()); err == nil {
		io.ReadAll(c)
		c.Close()
	}
	if c, err := net.Dial("tcp", front.Addr().String()); err == nil {
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // a reset
	}

	const clients = 8
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", front.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			msg := strings.Repeat(string(rune('a'+i)), 100+i)
			if got := talk(t, c, msg, "second"); got != strings.ToUpper(msg)+"SECOND" {
				t.Errorf("client %d got %q", i, got)
			}
		})
	}
	wg.Wait()
	// The flows of the 8 clients, and maybe of the one that reset.
	seen := 0
	for seen < clients {
		id := <-col.closed
		col.busy.Lock()
		empty := col.data[id] == nil || col.data[id][0].Len() == 0
		col.busy.Unlock()
		if empty {
			continue // the client that reset, or the broken route's
		}
		seen++
	}
	col.busy.Lock()
	defer col.busy.Unlock()
	failed := 0
	for id, f := range col.flows {
		if f.B.String() == deadAddr {
			// The client of the broken route: a flow of its own, with
			// nothing forwarded (its note says why, for a Noter).
			failed++
			if b := col.data[id]; b[0].Len()+b[1].Len() != 0 {
				t.Errorf("flow %d of the broken route carried bytes", id)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d flows for the broken route's client, want 1", failed)
	}
	for id, b := range col.data {
		f := col.flows[id]
		if f.B.String() == deadAddr {
			continue
		}
		if !f.SYN || f.B.String() != up.Addr().String() || !f.A.Addr().IsLoopback() {
			t.Errorf("flow %d = %+v", id, f)
		}
		if b[0].Len() == 0 {
			continue
		}
		if got, want := b[1].String(), strings.ToUpper(b[0].String()); got != want {
			t.Errorf("flow %d: server sent %q for %q", id, got, b[0].String())
		}
		if !strings.HasSuffix(b[0].String(), "second") {
			t.Errorf("flow %d: client sent %q", id, b[0].String())
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if len(logs) == 0 || !strings.Contains(strings.Join(logs, "\n"), "upstream "+deadAddr) {
		t.Errorf("logs %q", logs)
	}
	// Each listener says it is ready, and each client that got through
	// is reported with its upstream.
	all := strings.Join(logs, "\n")
	for _, want := range []string{
		"proxy: listening on " + front.Addr().String() + " -> " + up.Addr().String(),
		"proxy: listening on " + broken.Addr().String() + " -> " + deadAddr,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("logs lack %q:\n%s", want, all)
		}
	}
	if n := strings.Count(all, "connected to upstream "+up.Addr().String()); n < clients {
		t.Errorf("%d clients reported connected, want at least %d:\n%s", n, clients, all)
	}
}

func TestProxyTLS(t *testing.T) {
	certPEM, keyPEM, pool := selfSigned(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}

	// A TLS upstream, reached through tls://.
	up := tls.NewListener(listen(t), &tls.Config{Certificates: []tls.Certificate{cert}})
	defer up.Close()
	go echoUpper(t, up)

	front := listen(t)
	frontAddr := front.Addr().String()
	front.Close() // Serve opens it again, with the certificate
	col := newCollector()
	p := &proxy.Proxy{
		Routes:            []proxy.Route{{Listen: frontAddr, Upstream: "tls://" + up.Addr().String(), TLSCert: certFile, TLSKey: keyFile}},
		Handler:           col,
		UpstreamTLSConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	var c *tls.Conn
	for c == nil { // Serve may not be listening yet
		c, err = tls.Dial("tcp", frontAddr, &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil && !strings.Contains(err.Error(), "refused") {
			t.Fatal(err)
		}
	}
	// A plain-text client on the same port is forwarded as it is: each
	// protocol starts TLS its own way, and this one did not.
	if pc, err := net.Dial("tcp", frontAddr); err == nil {
		pc.Write([]byte("plain client"))
		pc.(*net.TCPConn).CloseWrite()
		pc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if got, _ := io.ReadAll(pc); string(got) != "PLAIN CLIENT" {
			t.Errorf("plain client got %q", got)
		}
		pc.Close()
		<-col.closed
	}
	if got := talk(t, c, "secret"); got != "SECRET" {
		t.Errorf("got %q", got)
	}
	id := <-col.closed
	col.busy.Lock()
	defer col.busy.Unlock()
	if col.data[id][0].String() != "secret" || col.data[id][1].String() != "SECRET" {
		t.Errorf("handler saw %q / %q, want the clear text", col.data[id][0].String(), col.data[id][1].String())
	}
}

func TestServeErrors(t *testing.T) {
	ctx := context.Background()
	if err := proxy.Serve(ctx, "127.0.0.1:0", "127.0.0.1:1", "cert.pem", "", newCollector()); err == nil || !strings.Contains(err.Error(), "both a certificate and a key") {
		t.Errorf("err = %v", err)
	}
	if err := proxy.Serve(ctx, "127.0.0.1:0", "127.0.0.1:1", "/nonexistent/cert.pem", "/nonexistent/key.pem", newCollector()); err == nil || !strings.HasPrefix(err.Error(), "proxy: 127.0.0.1:0: loading the TLS certificate") {
		t.Errorf("err = %v", err)
	}
	if err := proxy.Serve(ctx, "256.0.0.1:0", "127.0.0.1:1", "", "", newCollector()); err == nil || !strings.HasPrefix(err.Error(), "proxy: ") {
		t.Errorf("err = %v", err)
	}
}

func selfSigned(t *testing.T) (certPEM, keyPEM []byte, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), pool
}

// stuckHandler holds every call until released: a decoder as slow as can
// be.
type stuckHandler struct {
	release  chan struct{}
	mu       sync.Mutex
	seen     [2]int // bytes per direction, data and gaps together
	gaps     int
	gapBytes int64
}

func (h *stuckHandler) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	<-h.release
	h.mu.Lock()
	h.seen[side(fromA)] += len(data)
	h.mu.Unlock()
}

func (h *stuckHandler) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	<-h.release
	h.mu.Lock()
	h.seen[side(fromA)] += n
	h.gaps++
	h.gapBytes += int64(n)
	h.mu.Unlock()
}

func (h *stuckHandler) Close(*capture.Flow, time.Time) {}

func side(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// countingRecorder counts what a recorder is given; safe for concurrent
// use, as a recorder must be.
type countingRecorder struct {
	mu   sync.Mutex
	seen [2]int
	gaps int
}

func (r *countingRecorder) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	r.mu.Lock()
	r.seen[side(fromA)] += len(data)
	r.mu.Unlock()
}

func (r *countingRecorder) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	r.mu.Lock()
	r.gaps++
	r.mu.Unlock()
}

func (r *countingRecorder) Close(*capture.Flow, time.Time) {}

func (r *countingRecorder) counts() ([2]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen, r.gaps
}

// TestForwardingNeverWaitsForDecoding: with a handler that does not
// return, clients still talk through the proxy, and the recorder (the -w
// file) gets every byte while the handler is stuck; the proxy says on its
// log that the decoder fell behind; the handler, released, is given every
// byte, as data or as gaps, and DecodeStats counts them.
func TestForwardingNeverWaitsForDecoding(t *testing.T) {
	up := listen(t)
	defer up.Close()
	go echoUpper(t, up)
	h := &stuckHandler{release: make(chan struct{})}
	rec := &countingRecorder{}
	s := capture.NewSerial(h)
	s.SetRecorder(rec)
	ln := listen(t)
	var logMu sync.Mutex
	var logged []string
	p := &proxy.Proxy{Routes: []proxy.Route{{Listen: ln.Addr().String(), Upstream: up.Addr().String()}},
		Serial: s, DecodeBuffer: 16 << 10, Log: func(msg string) {
			logMu.Lock()
			logged = append(logged, msg)
			logMu.Unlock()
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.ServeListeners(ctx, []net.Listener{ln}) }()
	msg := strings.Repeat("wiretap ", 128) // 1 KiB
	var msgs []string
	for range 200 {
		msgs = append(msgs, msg)
	}
	for range 3 { // several clients, one after another, all served
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, it is not a speed limit
		if got := talk(t, c, msgs...); got != strings.ToUpper(strings.Join(msgs, "")) {
			t.Fatalf("client got %d bytes back, want %d", len(got), 200*len(msg))
		}
	}
	want := 3 * 200 * len(msg)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		seen, gaps := rec.counts()
		if gaps > 0 {
			t.Fatalf("the recorder was given %d gaps while the decoder was stuck", gaps)
		}
		if seen[0] == want && seen[1] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recorder saw %v bytes while the decoder was stuck, want %d each way", seen, want)
		}
	}
	const behind = "proxy: the decoder fell behind the traffic: "
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		logMu.Lock()
		found := slices.ContainsFunc(logged, func(l string) bool { return strings.HasPrefix(l, behind) })
		logMu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q: %q", behind, logged)
		}
	}
	close(h.release)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if h.seen[0] != want || h.seen[1] != want {
		t.Fatalf("handler saw %v bytes (data and gaps), want %d each way", h.seen, want)
	}
	if h.gaps == 0 {
		t.Fatal("the stuck handler was given no gap: the buffer was not bounded")
	}
	handed, dropped := p.DecodeStats()
	if handed != 2*int64(want) || dropped != h.gapBytes {
		t.Fatalf("DecodeStats %d handed, %d dropped; want %d, %d (the gaps' bytes)", handed, dropped, 2*want, h.gapBytes)
	}
}

// TestResetPassedOn: a reset from either end reaches the other end as a
// reset (ECONNRESET), not as an orderly end of stream, and is logged.
func TestResetPassedOn(t *testing.T) {
	for _, upstreamResets := range []bool{true, false} {
		name := "client resets"
		if upstreamResets {
			name = "upstream resets"
		}
		t.Run(name, func(t *testing.T) {
			up := listen(t)
			defer up.Close()
			got := make(chan struct{}) // the client has the upstream's answer
			upErr := make(chan error, 1)
			go func() {
				c, err := up.Accept()
				if err != nil {
					upErr <- err
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, it is not a speed limit
				buf := make([]byte, 2)
				if _, err := io.ReadFull(c, buf); err != nil {
					upErr <- err
					return
				}
				c.Write([]byte("ok"))
				<-got
				if upstreamResets {
					c.(*net.TCPConn).SetLinger(0)
					c.Close()
					upErr <- nil
					return
				}
				_, err = c.Read(buf)
				upErr <- err
			}()
			var logs []string
			var logMu sync.Mutex
			h := newCollector()
			ln := listen(t)
			startProxy(t, &proxy.Proxy{Routes: []proxy.Route{{Listen: ln.Addr().String(), Upstream: up.Addr().String()}}, Handler: h,
				Log: func(msg string) { logMu.Lock(); logs = append(logs, msg); logMu.Unlock() }}, ln)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 2)
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
			if !upstreamResets {
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
			close(got)
			var end error
			if upstreamResets {
				_, end = c.Read(buf)
				if err := <-upErr; err != nil {
					t.Fatal(err)
				}
			} else {
				end = <-upErr
			}
			if !errors.Is(end, syscall.ECONNRESET) {
				t.Fatalf("the other end saw %v, want a reset (ECONNRESET)", end)
			}
			<-h.closed
			logMu.Lock()
			defer logMu.Unlock()
			var resets []string
			for _, l := range logs {
				if strings.Contains(l, "reset the connection") {
					resets = append(resets, l)
				}
			}
			if len(resets) != 1 {
				t.Fatalf("logged %q, want one line about the reset", logs)
			}
		})
	}
}
