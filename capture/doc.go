// Package capture provides wiretap's sources of bytes: capture files (pcap
// and pcapng, read by readers of its own), TCP reassembly, and the
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
// Reassembly is wiretap's own rather than gopacket's reassembly package,
// which it was measured against (BenchmarkAssembler and
// BenchmarkGopacketReassembly, same packets): about three times the packets
// per second and no allocation per packet where gopacket's allocates one,
// and it reports exactly what the pipeline needs: the length of each gap,
// an unknown start once per direction, snap-length cuts as gaps, flow
// numbers in order of first packet, a new flow for a 4-tuple reused after
// FIN or RST, and bounded memory with a warning when a bound is hit. IPv4
// fragments are put back together as a Linux receiver would (defrag.go;
// TestDefragAgreesWithIP4Defrag holds it to gopacket's ip4defrag, which
// it replaced). None of gopacket's layers package is linked: its lookup
// tables, 5 MiB of pointers, were scanned by every garbage collection of
// every wiretap process (see [LinkType]). A source
// feeding a [Budgeted] handler on its goroutine also charges what it
// holds (out-of-order segments, pending fragments, the pcapng interface
// table) to the handler's memory budget, each connection on the account
// its decoder charges (Flow.Account).
//
// The package knows nothing of the protocols carried: it produces bytes,
// times and addresses. Sub-packages hold the other sources and sinks:
// capture/pcapng (writing captures, and synthesising TCP packets from byte
// streams), capture/live (live capture) and capture/proxy (a decoding TCP
// proxy).
package capture
