// Package capture provides wiretap's sources of bytes: capture files (pcap
// and pcapng, read with gopacket's pcapgo), TCP reassembly, and the
// contract every source feeds, [Handler].
//
// A source turns packets, or accepted sockets in the case of the proxy, into
// per-connection, per-direction, in-order bytes. [Assembler] does the TCP
// part: it orders segments by sequence number, drops the bytes a
// retransmission repeats, buffers out-of-order segments within a memory
// budget and reports what was lost as a gap (RFC 9293 section 3.4 gives the
// sequence-space arithmetic). Packets are decoded by hand from the link
// layer down to TCP, so steady-state reading allocates nothing per packet.
//
// The package knows nothing of the protocols carried: it produces bytes,
// times and addresses. Sub-packages hold the other sources and sinks:
// capture/pcapng (writing captures, and synthesising TCP packets from byte
// streams), capture/live (live capture) and capture/proxy (a decoding TCP
// proxy).
package capture
