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
// reset) is closed and logged; the others go on. A reset from either end
// is passed on to the other as a reset (SO_LINGER 0), not turned into an
// orderly FIN.
//
// Forwarding never waits for decoding: each read is copied into a
// bounded [capture.Decoupled] before it is written on, and when the
// handler falls behind by more than [Proxy.DecodeBuffer] it is given a
// gap explained as [capture.GapDecoderBehind] instead of the bytes. Nor
// does the decoder take CPU time from the traffic: unless
// [Proxy.DecodeAnyCPU], it is paced ([capture.PaceDecoder]) to what the
// machine can spare, and on a busy machine it falls behind (gaps, a line
// on [Proxy.Log] when it does and when it has caught up, and
// [Proxy.DecodeStats] for the total). The handler may also be a
// [relay.Writer] to a decoder in another process, as wiretap's command
// does: pacing then comes from that process's lower priority.
//
// [relay.Writer]: https://pkg.go.dev/github.com/wiretap-dev/wiretap/capture/relay#Writer
// [Proxy.Faults] injects faults ([Fault], read by [ParseFault]): delays,
// throttles, cuts after a number of bytes, and, judged frame by frame on
// the forwarding path, cuts, drops and corruptions of the frames a display
// filter matches (see framing.go for how and at what cost: only routes
// with such a rule pay it). What the proxy does and sees (a fault, an
// upstream that refused, a failed handshake, a reset) is handed to the
// decoder as a note ([capture.Noter]) in order with the bytes, so that it
// shows as a unit on its connection, and said on [Proxy.Log].
package proxy
