package capture

import "net/netip"

// TCPSegment is what [DecodeTCP] finds in a packet.
type TCPSegment struct {
	Src, Dst netip.AddrPort
	Seq      uint32
	SYN, ACK bool
	FIN, RST bool
	// Payload aliases the packet's bytes, so a caller may overwrite them
	// in place.
	Payload []byte
}

// DecodeTCP decodes p down to its TCP segment, as the reassembly does. It
// reports false for anything else (other protocols, IP fragments, damaged
// headers).
func DecodeTCP(p *Packet) (TCPSegment, bool) {
	var s segment
	if decodeSegment(p.Link, p.Data, &s) != decodedTCP {
		return TCPSegment{}, false
	}
	return TCPSegment{
		Src: s.src, Dst: s.dst, Seq: s.seq,
		SYN: s.flags&tcpSYN != 0, ACK: s.flags&tcpACK != 0,
		FIN: s.flags&tcpFIN != 0, RST: s.flags&tcpRST != 0,
		Payload: s.payload,
	}, true
}
