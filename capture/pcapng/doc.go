// Package pcapng writes captures in the pcapng format
// (draft-ietf-opsawg-pcapng), with one interface per link-layer type, and
// synthesises TCP packets from byte streams for sources that have no
// packets of their own: the proxy, the embedded broker, the export of one
// connection from the TUI.
//
// [Writer] writes packets as captured ([PcapWriter] writes the legacy pcap
// format, for tools that want it). [Synth] is a capture.Handler: it
// turns each flow's bytes back into a valid Ethernet/IPv4 or IPv6/TCP
// exchange (three-way handshake, MSS-sized segments with correct sequence
// and acknowledgement numbers and checksums, FIN exchange) that tshark and
// wiretap read like a capture of the real thing.
package pcapng
