// Package proxy provides wiretap's decoding TCP proxy: it accepts clients,
// dials the upstream server for each, copies bytes both ways unchanged and
// feeds what passes to a capture.Handler, one flow per client connection
// (SYN true, A the client, B the upstream server), in the order the bytes
// pass through the proxy.
//
// Toward the client the proxy can terminate TLS (a certificate and key),
// so the handler sees the protocol in clear; toward the upstream it speaks
// plain TCP, or TLS when the upstream address is written tls://host:port.
// A connection that fails (upstream unreachable, TLS handshake refused,
// reset) is closed and logged; the others go on.
package proxy
