package proxy

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// How a client began: each protocol has its own TLS start.
type clientStartKind int

const (
	startPlain     clientStartKind = iota // no TLS, or TLS passed through
	startPGSSL                            // PostgreSQL SSLRequest, answered S, then TLS
	startDirectTLS                        // a TLS ClientHello first (AMQPS, PostgreSQL 17's direct TLS)
)

// PostgreSQL's negotiation requests: a length of 8 and a code.
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
)

// peekTimeout bounds the wait for a client's first bytes, which tell its
// TLS start; a client that sends fewer is forwarded as it is.
const peekTimeout = 3 * time.Second

// bufConn is a client connection whose first bytes were read ahead (to
// tell its TLS start) and are served again, before the rest, by Read.
// Unlike a bufio.Reader it keeps no error from the look ahead: a client
// that was silent past the peek's deadline is then forwarded as it is.
type bufConn struct {
	net.Conn
	pre []byte
}

func (c *bufConn) Read(b []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(b, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// peek returns the first n bytes, reading more as needed; fewer when the
// client ends, fails or is silent past the deadline (then err says so).
func (c *bufConn) peek(n int) ([]byte, error) {
	var buf [512]byte
	for len(c.pre) < n {
		k, err := c.Conn.Read(buf[:])
		c.pre = append(c.pre, buf[:k]...)
		if err != nil {
			return c.pre, err
		}
	}
	return c.pre[:n], nil
}

func (c *bufConn) discard(n int) { c.pre = c.pre[n:] }

func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// clientStart reads the client's first bytes and, when they start TLS in
// its protocol's way, takes the TLS over: PostgreSQL's SSLRequest is
// answered S and the handshake follows; a GSSENCRequest is answered N (the
// client then asks for TLS or starts plain); a ClientHello is answered at
// once. The certificate is the route's (cert) or one issued by the CA.
// Anything else is forwarded untouched, the bytes read ahead included.
func (p *Proxy) clientStart(r Route, cert *tls.Config, client net.Conn) (net.Conn, clientStartKind, error) {
	bc := &bufConn{Conn: client}
	client.SetReadDeadline(time.Now().Add(min(peekTimeout, orDefault(p.HandshakeTimeout))))
	defer client.SetReadDeadline(time.Time{})
	for {
		switch bc.opening() {
		case openClientHello:
			tc, err := p.serverTLS(r, cert, bc)
			if err != nil {
				return nil, 0, err
			}
			p.logf("proxy: %s: client %s: TLS from the first byte intercepted%s", r.Listen, client.RemoteAddr(), p.certNote(cert))
			return tc, startDirectTLS, nil
		case openGSSENCRequest:
			bc.discard(8)
			if _, err := client.Write([]byte{'N'}); err != nil {
				return nil, 0, err
			}
			continue // the client asks for TLS next, or starts plain
		case openSSLRequest:
			bc.discard(8)
			if _, err := client.Write([]byte{'S'}); err != nil {
				return nil, 0, err
			}
			tc, err := p.serverTLS(r, cert, bc)
			if err != nil {
				return nil, 0, err
			}
			p.logf("proxy: %s: client %s: PostgreSQL TLS intercepted (SSLRequest answered S)%s", r.Listen, client.RemoteAddr(), p.certNote(cert))
			return tc, startPGSSL, nil
		}
		return bc, startPlain, nil
	}
}

// What a client's first bytes open with.
type opening int

const (
	openOther         opening = iota // no TLS start: forwarded as it is
	openClientHello                  // a TLS handshake record
	openSSLRequest                   // PostgreSQL's SSLRequest
	openGSSENCRequest                // PostgreSQL's GSSENCRequest
)

// opening looks at the client's first bytes, consuming none. Only a first
// byte of 0 (a PostgreSQL length) waits for eight: AMQP's header and other
// protocols are told at once.
func (c *bufConn) opening() opening {
	first, err := c.peek(1)
	switch {
	case err != nil:
		return openOther // the forwarding sees the end
	case first[0] == 0x16:
		return openClientHello
	case first[0] != 0:
		return openOther
	}
	hdr, err := c.peek(8)
	if err != nil || binary.BigEndian.Uint32(hdr) != 8 {
		return openOther
	}
	switch binary.BigEndian.Uint32(hdr[4:]) {
	case pgSSLRequest:
		return openSSLRequest
	case pgGSSENCRequest:
		return openGSSENCRequest
	}
	return openOther
}

func (p *Proxy) certNote(cert *tls.Config) string {
	if cert != nil {
		return " with the given certificate"
	}
	return " with a certificate from wiretap's CA"
}

// serverTLS runs the TLS handshake toward the client.
func (p *Proxy) serverTLS(r Route, cert *tls.Config, c net.Conn) (*tls.Conn, error) {
	if cert == nil {
		ca, err := p.loadCA()
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(r.Listen)
		if host == "" {
			host = "localhost"
		}
		cert = ca.ServerConfig(host)
	}
	tc := tls.Server(c, withALPN(cert))
	ctx, cancel := context.WithTimeout(context.Background(), orDefault(p.HandshakeTimeout))
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// loadCA loads (or makes) the interception CA once.
func (p *Proxy) loadCA() (*CA, error) {
	p.caOnce.Do(func() {
		dir := p.CADir
		if dir == "" {
			if dir, p.caErr = DefaultCADir(); p.caErr != nil {
				return
			}
		}
		p.ca, p.caErr = LoadOrCreateCA(dir)
		if p.caErr == nil {
			p.logf("proxy: intercepting TLS with wiretap's CA %s (SHA-256 %s); trust it to verify, or run with --no-intercept", p.ca.CertFile, p.ca.Fingerprint())
		}
	})
	return p.ca, p.caErr
}

// upstreamStart brings the upstream connection to the client's footing:
// for a PostgreSQL client that asked for TLS, the proxy asks the server in
// turn (UpstreamTLS auto or require); a client that started TLS at once
// gets TLS upstream only under require (a tls:// upstream is TLS already).
func (p *Proxy) upstreamStart(ctx context.Context, r Route, start clientStartKind, up net.Conn) (net.Conn, error) {
	mode := r.UpstreamTLS
	if _, isTLS := up.(*tls.Conn); isTLS || mode == "disable" || start == startPlain {
		return up, nil
	}
	if start == startDirectTLS {
		if mode != "require" {
			return up, nil
		}
		return p.clientTLS(ctx, r, up)
	}
	// PostgreSQL: the proxy's own SSLRequest.
	req := make([]byte, 8)
	binary.BigEndian.PutUint32(req, 8)
	binary.BigEndian.PutUint32(req[4:], pgSSLRequest)
	if d, ok := ctx.Deadline(); ok {
		up.SetDeadline(d)
		defer up.SetDeadline(time.Time{})
	}
	if _, err := up.Write(req); err != nil {
		up.Close()
		return nil, fmt.Errorf("upstream %s: SSLRequest: %w", r.Upstream, err)
	}
	var answer [1]byte
	if _, err := io.ReadFull(up, answer[:]); err != nil {
		up.Close()
		return nil, fmt.Errorf("upstream %s: SSLRequest: %w", r.Upstream, err)
	}
	switch answer[0] {
	case 'S':
		return p.clientTLS(ctx, r, up)
	case 'N':
		if mode == "require" {
			up.Close()
			return nil, errors.New("upstream " + r.Upstream + " refused TLS (SSLRequest answered N) and --upstream-tls is require")
		}
		return up, nil
	default:
		up.Close()
		return nil, fmt.Errorf("upstream %s: SSLRequest answered %q, not S or N", r.Upstream, answer[0])
	}
}

func (p *Proxy) clientTLS(ctx context.Context, r Route, up net.Conn) (net.Conn, error) {
	cfg := p.UpstreamTLSConfig
	if cfg == nil {
		host, _, _ := net.SplitHostPort(r.Upstream)
		cfg = &tls.Config{ServerName: host, InsecureSkipVerify: true} // as libpq's sslmode=require
	}
	tc := tls.Client(up, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		up.Close()
		return nil, fmt.Errorf("upstream %s: TLS handshake: %w", r.Upstream, err)
	}
	return tc, nil
}

// withALPN answers the ALPN protocols the proxy's protocols use:
// PostgreSQL 17's direct TLS requires the server to select "postgresql";
// a client that offers no ALPN, or others, is served without.
func withALPN(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if slices.Contains(hello.SupportedProtos, "postgresql") {
			c := base.Clone()
			c.NextProtos = []string{"postgresql"}
			return c, nil
		}
		return nil, nil
	}
	return cfg
}

// noteTLS, under NoIntercept, looks at the client's first bytes without
// taking anything: when they start TLS, the proxy says the session passes
// encrypted and how to have it decoded.
func (p *Proxy) noteTLS(r Route, client net.Conn) net.Conn {
	bc := &bufConn{Conn: client}
	client.SetReadDeadline(time.Now().Add(min(peekTimeout, orDefault(p.HandshakeTimeout))))
	defer client.SetReadDeadline(time.Time{})
	what := ""
	switch bc.opening() {
	case openClientHello:
		what = "TLS from the first byte"
	case openSSLRequest:
		what = "a PostgreSQL SSLRequest"
	}
	if what != "" {
		p.logf("proxy: %s: client %s: %s, passed through (--no-intercept): what is encrypted will not be decoded; without --no-intercept the proxy terminates the TLS and decodes it", r.Listen, client.RemoteAddr(), what)
	}
	return bc
}
