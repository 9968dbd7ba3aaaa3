package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// Route is one listening address and the upstream it forwards to.
type Route struct {
	// Listen is the address to accept clients on ("127.0.0.1:5673").
	Listen string
	// Upstream is the server to dial for each client: "host:port" for
	// plain TCP, "tls://host:port" for TLS (verified against the system's
	// roots, server name host).
	Upstream string
	// TLSCert and TLSKey, when both set, are PEM files of the certificate
	// and key with which the proxy terminates TLS toward its clients; when
	// not, it issues one from its CA (see Proxy.NoIntercept).
	TLSCert, TLSKey string
	// UpstreamTLS is how a PostgreSQL session whose client asked for TLS
	// reaches the server: "auto" (or ""): the proxy sends its own
	// SSLRequest and uses TLS when the server accepts, plain when it
	// answers N; "require": TLS or nothing; "disable": plain. A client
	// that starts TLS at once (AMQPS, PostgreSQL 17's direct TLS) reaches
	// the server over TLS when Upstream is tls://, or under "require".
	// The server's certificate is not verified unless Proxy.UpstreamTLSConfig
	// says how, as libpq's sslmode=require does not.
	UpstreamTLS string
}

// Proxy forwards connections on its Routes and feeds what passes to
// Handler. Fields must not change after Serve is called.
type Proxy struct {
	Routes []Route
	// Handler receives the bytes; calls are made one at a time.
	Handler capture.Handler
	// Log, when set, receives one line when each listener is ready, one
	// per client accepted and connected upstream, and one per failure
	// (upstream dial, TLS handshake, a reset from either end).
	Log func(msg string)
	// DialTimeout bounds the dial to the upstream (default 10s).
	DialTimeout time.Duration
	// HandshakeTimeout bounds a client's TLS handshake (default 10s).
	HandshakeTimeout time.Duration
	// UpstreamTLSConfig, when set, is the configuration for TLS toward
	// upstreams (for a private CA or a client certificate).
	UpstreamTLSConfig *tls.Config
	// NoIntercept passes TLS through untouched for routes without a
	// certificate: the proxy then sees only encrypted bytes. Otherwise it
	// terminates TLS with certificates issued by the CA kept in CADir
	// (DefaultCADir when empty), made on first use.
	NoIntercept bool
	CADir       string
	// DecodeBuffer bounds the bytes waiting for the handler (0:
	// capture.DefaultDecoupledBuffer); past it the handler is given gaps
	// and the traffic goes on unchanged.
	DecodeBuffer int
	// DecodeAnyCPU lets the decoder take CPU time as the traffic does. By
	// default it is paced to what the machine can spare
	// ([capture.PaceDecoder]): on a machine the server, its clients and
	// the proxy keep busy it falls behind (gaps) instead of taking CPU
	// time from them.
	DecodeAnyCPU bool
	// BehindHint, when set, is said after the line on Log that the
	// decoder fell behind: why it can, and what to do about it (by
	// default, when the decoder is paced, that it is).
	BehindHint string
	// Serial, when set, numbers the flows and serialises the calls instead
	// of a Serial of the proxy's own (and Handler is then unused): share one
	// with other sources (more proxies, the broker) that feed the same
	// pipeline, so flow numbers stay unique.
	Serial *capture.Serial
	// Faults, when set, are the fault-injection rules (see [Fault]); they
	// may be changed while the proxy runs. Each fault injected is said in
	// the output as a "fault" unit on its connection (see [capture.Noter])
	// and on Log.
	Faults *FaultSet
	// Inspect makes the decoder with which a connection's frames are
	// judged by the rules with a filter; without it such rules never
	// match. It is called for each connection accepted on a route that has
	// such a rule, on or off (a rule added later applies to the
	// connections accepted after it).
	Inspect func(client, server netip.AddrPort) Inspector

	caOnce sync.Once
	ca     *CA
	caErr  error

	serial *capture.Serial // Serial, or the proxy's own
	// dec feeds serial from a goroutine of its own: forwarding never
	// waits for decoding (a decoder behind loses bytes, as gaps).
	dec *capture.Decoupled
	// stats is dec, for DecodeStats from other goroutines.
	stats atomic.Pointer[capture.Decoupled]
}

// Serve runs a proxy from listen to upstream until ctx is done; tlsCert and
// tlsKey (both or neither) terminate TLS toward clients. See [Route].
func Serve(ctx context.Context, listen, upstream string, tlsCert, tlsKey string, h capture.Handler) error {
	p := &Proxy{Routes: []Route{{Listen: listen, Upstream: upstream, TLSCert: tlsCert, TLSKey: tlsKey}}, Handler: h}
	return p.Serve(ctx)
}

// Serve listens on every route and forwards until ctx is done, then closes
// the listeners and the connections in flight and returns nil. It returns
// an error, having started nothing, when a route's listener or certificate
// cannot be set up.
func (p *Proxy) Serve(ctx context.Context) error {
	if len(p.Routes) == 0 {
		return errors.New("proxy: no route")
	}
	// Certificates first: a route that cannot serve starts nothing.
	certs, err := p.routeCerts()
	if err != nil {
		return err
	}
	listeners := make([]net.Listener, 0, len(p.Routes))
	for _, r := range p.Routes {
		ln, err := net.Listen("tcp", r.Listen)
		if err != nil {
			for _, ln := range listeners {
				ln.Close()
			}
			return fmt.Errorf("proxy: %w", err)
		}
		listeners = append(listeners, ln)
	}
	return p.serve(ctx, listeners, certs)
}

// routeCerts loads each route's own certificate, nil for a route without.
func (p *Proxy) routeCerts() ([]*tls.Config, error) {
	certs := make([]*tls.Config, len(p.Routes))
	for i, r := range p.Routes {
		cfg, err := routeCert(r)
		if err != nil {
			return nil, err
		}
		certs[i] = cfg
	}
	return certs, nil
}

// routeCert is the TLS configuration of a route's own certificate, nil
// without one.
func routeCert(r Route) (*tls.Config, error) {
	var cfg *tls.Config
	switch {
	case r.TLSCert != "" && r.TLSKey != "":
		cert, err := tls.LoadX509KeyPair(r.TLSCert, r.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("proxy: %s: loading the TLS certificate: %w", r.Listen, err)
		}
		cfg = &tls.Config{Certificates: []tls.Certificate{cert}}
	case r.TLSCert != "" || r.TLSKey != "":
		return nil, fmt.Errorf("proxy: %s: TLS needs both a certificate and a key", r.Listen)
	}
	return cfg, nil
}

// ServeListeners is Serve on listeners already open, one per route, in
// order (a listener may be a tls.Listener). It closes them when ctx is
// done.
func (p *Proxy) ServeListeners(ctx context.Context, listeners []net.Listener) error {
	if len(listeners) != len(p.Routes) {
		return errors.New("proxy: one listener per route is needed")
	}
	certs, err := p.routeCerts()
	if err != nil {
		return err
	}
	return p.serve(ctx, listeners, certs)
}

func (p *Proxy) serve(ctx context.Context, listeners []net.Listener, certs []*tls.Config) error {
	p.serial = p.Serial
	if p.serial == nil {
		p.serial = capture.NewSerial(p.Handler)
	}
	opts := []capture.DecoupledOption{capture.CoalesceWakeups(decodeCoalesce)}
	if !p.DecodeAnyCPU {
		opts = append(opts, capture.PaceDecoder())
	}
	p.dec = capture.NewDecoupled(p.serial, p.DecodeBuffer, opts...)
	p.stats.Store(p.dec)
	defer p.dec.Shutdown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { p.watchDecoder(ctx) })
	var mu sync.Mutex
	active := make(map[net.Conn]struct{})
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add {
			if ctx.Err() != nil {
				return false
			}
			active[c] = struct{}{}
		} else {
			delete(active, c)
		}
		return true
	}
	for i, ln := range listeners {
		tlsNote := ""
		switch {
		case certs[i] != nil:
			tlsNote = " (TLS toward clients with the given certificate)"
		case p.NoIntercept:
			tlsNote = " (TLS passed through undecoded)"
		default:
			tlsNote = " (TLS intercepted with wiretap's CA: 'wiretap ca' shows it)"
		}
		p.logf("proxy: listening on %s -> %s%s", ln.Addr(), p.Routes[i].Upstream, tlsNote)
		wg.Go(func() {
			<-ctx.Done()
			ln.Close()
		})
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						continue
					}
					p.logf("proxy: %s: accept: %v", p.Routes[i].Listen, err)
					select {
					case <-ctx.Done():
						return
					case <-time.After(100 * time.Millisecond): // e.g. out of file descriptors
					}
					continue
				}
				if !track(c, true) {
					c.Close()
					return
				}
				wg.Go(func() {
					defer track(c, false)
					p.handle(ctx, i, certs[i], c, track)
				})
			}
		})
	}
	<-ctx.Done()
	mu.Lock()
	for c := range active {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	return nil
}

// decodeCoalesce is how long the decoder, woken by a read after it was
// idle, waits for more before it decodes (see [capture.CoalesceWakeups]):
// at 10,000 small messages a second it is woken a thousand times a second
// instead of twice a message.
const decodeCoalesce = time.Millisecond

// decoderWatch is how often the proxy looks whether its decoder is
// behind, to say so on Log.
const decoderWatch = time.Second

// watchDecoder says on Log when the decoder falls behind the traffic (a
// look finds bytes dropped since the one before) and when it has caught
// up (none since), so that a decoder behind is seen while it happens as
// well as in the units' gaps.
func (p *Proxy) watchDecoder(ctx context.Context) {
	t := time.NewTicker(decoderWatch)
	defer t.Stop()
	var last int64
	behind := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		dropped := p.dec.Dropped()
		switch {
		case dropped > last && !behind:
			why := p.BehindHint
			if why == "" && !p.DecodeAnyCPU {
				why = "it is paced to the CPU the machine can spare; --decode-cpu all has it compete with the traffic"
			}
			if why != "" {
				why = " (" + why + ")"
			}
			p.logf("proxy: the decoder fell behind the traffic: %s not decoded so far, shown as gaps; forwarding goes on%s",
				plural(dropped, "byte"), why)
		case dropped == last && behind:
			p.logf("proxy: the decoder caught up: %s of %s not decoded so far", plural(dropped, "byte"), plural(p.dec.Handed(), "byte"))
		}
		behind = dropped > last
		last = dropped
	}
}

// DecodeStats returns the bytes handed to the decoder since Serve began
// and, of those, the bytes it was too far behind to take (each a gap in
// the units, "N bytes not decoded: decoder behind"). It may be called
// while the proxy runs.
func (p *Proxy) DecodeStats() (handed, dropped int64) {
	dec := p.stats.Load()
	if dec == nil {
		return 0, 0
	}
	return dec.Handed(), dec.Dropped()
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (p *Proxy) logf(format string, args ...any) {
	if p.Log != nil {
		p.Log(fmt.Sprintf(format, args...))
	}
}

// handle forwards one client connection.
func (p *Proxy) handle(ctx context.Context, ri int, cert *tls.Config, client net.Conn, track func(net.Conn, bool) bool) {
	defer client.Close()
	r := p.Routes[ri]
	peer := client.RemoteAddr()
	start := startPlain
	if tc, ok := client.(*tls.Conn); ok {
		// A TLS listener of the caller's (ServeListeners).
		hctx, cancel := context.WithTimeout(ctx, orDefault(p.HandshakeTimeout))
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			p.logf("proxy: %s: client %s: TLS handshake: %v", r.Listen, peer, err)
			p.failed(r, peer, true, fmt.Sprintf("TLS handshake with the client failed: %v", err))
			return
		}
	} else if cert != nil || !p.NoIntercept {
		c, s, err := p.clientStart(r, cert, client)
		if err != nil {
			p.logf("proxy: %s: client %s: %v", r.Listen, peer, err)
			p.failed(r, peer, true, fmt.Sprintf("the client's TLS start failed: %v", err))
			return
		}
		client, start = c, s
	} else {
		client = p.noteTLS(r, client)
	}
	dctx, cancel := context.WithTimeout(ctx, orDefault(p.DialTimeout))
	up, err := p.dial(dctx, r.Upstream)
	if err == nil {
		up, err = p.upstreamStart(dctx, r, start, up)
	}
	cancel()
	if err != nil {
		p.logf("proxy: %s: client %s: %v", r.Listen, peer, err)
		if ctx.Err() == nil { // not the proxy's own shutdown
			p.failed(r, peer, false, fmt.Sprintf("connection to the upstream failed: %v; the client was closed", err))
		}
		return
	}
	defer up.Close()
	if !track(up, true) {
		return
	}
	defer track(up, false)
	p.logf("proxy: %s: client %s connected to upstream %s", r.Listen, client.RemoteAddr(), up.RemoteAddr())

	f := p.dec.NewFlow(addrPort(client.RemoteAddr()), addrPort(up.RemoteAddr()), time.Now())
	cf := p.newConnFaults(ri, r, f, client, up)
	defer cf.close()
	var wg sync.WaitGroup
	var resetBy [2]bool // [0]: the client reset, [1]: the upstream
	var tails [2]tail   // the last bytes each way: [0] from the client
	wg.Go(func() { resetBy[0] = p.pipe(f, true, client, up, cf.dir(true, client, up), &tails[0]) })
	resetBy[1] = p.pipe(f, false, up, client, cf.dir(false, up, client), &tails[1])
	wg.Wait()
	// A reset after the protocol's own close handshake is how some servers
	// end every session (RabbitMQ closes its sockets with linger 0): said
	// as the normal end it is, not as a fault.
	after := ""
	if ended, amqp := closeHandshake(&tails[0], &tails[1]); ended != "" {
		after = " after the session's " + ended + ", a normal end"
		if amqp && resetBy[1] {
			after += " (RabbitMQ closes its sockets with a reset)"
		}
	} else if resetBy[1] && tails[0].eof {
		after = " after the client closed its side, a normal end for a server that closes with a reset"
	}
	switch {
	case resetBy[1]:
		p.logf("proxy: %s: client %s: upstream %s reset the connection%s; reset passed on to the client", r.Listen, client.RemoteAddr(), r.Upstream, after)
		p.dec.Note(f, false, capture.NoteEvent, "the upstream reset the connection"+after+"; the reset was passed on to the client")
	case resetBy[0]:
		p.logf("proxy: %s: client %s reset the connection%s; reset passed on to upstream %s", r.Listen, client.RemoteAddr(), after, r.Upstream)
		p.dec.Note(f, true, capture.NoteEvent, "the client reset the connection"+after+"; the reset was passed on to the upstream")
	}
	p.dec.Close(f)
}

// failed shows a client connection that never reached forwarding as a
// connection of its own whose one unit says why (fromClient: the client's
// side failed, else the upstream's).
func (p *Proxy) failed(r Route, peer net.Addr, fromClient bool, why string) {
	f := p.dec.NewFlow(addrPort(peer), upstreamAddr(r.Upstream), time.Now())
	p.dec.Note(f, fromClient, capture.NoteEvent, why)
	p.dec.Close(f)
}

// pipe copies src to dst, handing each read to the decoupled handler
// before writing it on, so the handler sees bytes in the order they pass
// without the copy waiting for it. At the end of src it half-closes dst.
// A reset of src is passed on as a reset of dst (and one of dst back to
// src), so each end sees the fault the other saw, not an orderly FIN;
// other errors close both. It reports whether src was reset; t keeps
// the last bytes read from src.
//
// With fault rules (d not nil), a read takes the fault path while a rule
// is in force: see dirFaults.forward.
func (p *Proxy) pipe(f *capture.DecoupledFlow, fromA bool, src, dst net.Conn, d *dirFaults, t *tail) (srcReset bool) {
	buf := make([]byte, pipeBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			t.add(buf[:n])
			var werr error
			if d.slow() {
				werr = d.forward(buf[:n], time.Now())
			} else {
				p.dec.Data(f, fromA, buf[:n])
				_, werr = dst.Write(buf[:n])
			}
			if werr != nil {
				d.finish(func() {})
				if !d.cutByFault() && !errors.Is(werr, net.ErrClosed) {
					p.writeFailed(f, !fromA, werr)
				}
				if isReset(werr) {
					abort(src)
				} else {
					src.Close()
				}
				dst.Close()
				return false
			}
		}
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				t.eof = true
				d.finish(func() { closeWrite(dst) })
			case isReset(err) && !d.cutByFault():
				d.finish(func() { abort(dst) })
				src.Close()
				return true
			default:
				d.finish(func() {})
				src.Close()
				dst.Close()
			}
			return false
		}
	}
}

// writeFailed says that the end the proxy was writing to (the server when
// toServer) went away abruptly, with data still on its way to it.
func (p *Proxy) writeFailed(f *capture.DecoupledFlow, toServer bool, err error) {
	who := "the client"
	if toServer {
		who = "the upstream"
	}
	msg := fmt.Sprintf("%s went away while the proxy was writing to it (%v); the connection was closed", who, err)
	p.dec.Note(f, toServer, capture.NoteEvent, msg)
	fl := f.Flow()
	p.logf("proxy: conn %d, client %s: %s", fl.ID, fl.A, msg)
}

// pipeBuffer is the size of each direction's read buffer.
const pipeBuffer = 64 << 10

// isReset reports a connection reset by its peer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// abort closes c with a TCP RST (SO_LINGER 0) instead of a FIN; a TLS
// connection is cut under its TLS layer, without a close_notify.
func abort(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if bc, ok := c.(*bufConn); ok {
		c = bc.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func closeWrite(c net.Conn) {
	switch c := c.(type) {
	case interface{ CloseWrite() error }: // *net.TCPConn, *tls.Conn
		if c.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}

func (p *Proxy) dial(ctx context.Context, upstream string) (net.Conn, error) {
	if addr, ok := strings.CutPrefix(upstream, "tls://"); ok {
		cfg := p.UpstreamTLSConfig
		if cfg == nil {
			host, _, _ := net.SplitHostPort(addr)
			cfg = &tls.Config{ServerName: host}
		}
		d := &tls.Dialer{Config: cfg}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: %w", upstream, err)
		}
		return c, nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", upstream, err)
	}
	return c, nil
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func orDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return 10 * time.Second
	}
	return d
}
