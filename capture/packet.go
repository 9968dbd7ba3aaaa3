package capture

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// Packet is one captured record.
type Packet struct {
	Link   LinkType  // link-layer header type of Data
	Time   time.Time // capture time
	Data   []byte    // the captured bytes
	Length int       // the packet's length on the wire (>= len(Data))
}

// LinkType is a capture's link-layer header type, a LINKTYPE_ value of
// https://www.tcpdump.org/linktypes.html as pcap and pcapng files record
// it (16 bits: pcap's upper bits of the field say other things).
//
// wiretap names its own rather than use gopacket's layers package: that
// package's lookup tables (5 MiB of pointers) are scanned by every
// garbage collection of every wiretap process and cost `read` some 12 ms
// of page faults at its first one.
type LinkType uint16

// The link-layer header types wiretap decodes and writes.
const (
	LinkTypeNull      LinkType = 0   // LINKTYPE_NULL: BSD loopback, a host-order address family
	LinkTypeEthernet  LinkType = 1   // LINKTYPE_ETHERNET
	LinkTypeRaw       LinkType = 101 // LINKTYPE_RAW: IPv4 or IPv6, by the version nibble
	LinkTypeLinuxSLL  LinkType = 113 // LINKTYPE_LINUX_SLL: Linux "cooked" capture
	linkTypeLoop      LinkType = 108 // LINKTYPE_LOOP: NULL with a big-endian family
	linkTypeLinuxSLL2 LinkType = 276 // LINKTYPE_LINUX_SLL2
	linkTypeRawAlt12  LinkType = 12  // DLT_RAW on most BSDs
	linkTypeRawAlt14  LinkType = 14  // DLT_RAW on OpenBSD
	linkTypeIPv4      LinkType = 228 // LINKTYPE_IPV4
	linkTypeIPv6      LinkType = 229 // LINKTYPE_IPV6
)

// EtherTypes of the network layers decoded, and TCP's IP protocol number.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	ipProtoTCP    = 6
)

// TCP header flags (RFC 9293 section 3.1).
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpACK = 0x10
)

// segment is a decoded TCP segment. payload aliases the packet's bytes.
type segment struct {
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	payload  []byte
	// missing counts payload bytes the IP header declares but the capture
	// does not hold (snap length).
	missing int
	// fragment is the IPv4 packet when decodeSegment found a fragment.
	fragment []byte
}

// decodeResult says what decodeSegment found.
type decodeResult uint8

const (
	decodedTCP decodeResult = iota
	decodedOther
	decodedFragment
)

// decodeSegment decodes a packet of the given link type down to TCP,
// without allocating. Anything that is not TCP over IPv4 or IPv6, or is too
// short to hold the headers it announces, is decodedOther.
func decodeSegment(link LinkType, data []byte, s *segment) decodeResult {
	var etherType uint16
	switch link {
	case LinkTypeEthernet:
		if len(data) < 14 {
			return decodedOther
		}
		etherType = binary.BigEndian.Uint16(data[12:14])
		data = data[14:]
	case LinkTypeLinuxSLL:
		// Packet type, ARPHRD type, address length, 8 address bytes, protocol.
		if len(data) < 16 {
			return decodedOther
		}
		etherType = binary.BigEndian.Uint16(data[14:16])
		data = data[16:]
	case linkTypeLinuxSLL2:
		// Protocol, reserved, interface index, ARPHRD type, packet type,
		// address length, 8 address bytes.
		if len(data) < 20 {
			return decodedOther
		}
		etherType = binary.BigEndian.Uint16(data[0:2])
		data = data[20:]
	case LinkTypeNull, linkTypeLoop:
		// A 4-byte address family: in the writer's byte order for NULL, big
		// endian for LOOP. AF_INET is 2 everywhere; AF_INET6 is 10 (Linux),
		// 24 (NetBSD, OpenBSD), 28 (FreeBSD) or 30 (macOS). Trust the IP
		// version nibble, which the family only confirms.
		if len(data) < 4 {
			return decodedOther
		}
		data = data[4:]
		etherType = etherTypeOfVersion(data)
	case LinkTypeRaw, linkTypeRawAlt12, linkTypeRawAlt14:
		etherType = etherTypeOfVersion(data)
	case linkTypeIPv4:
		etherType = etherTypeIPv4
	case linkTypeIPv6:
		etherType = etherTypeIPv6
	default:
		return decodedOther
	}
	// 802.1Q and 802.1ad tags, any number of them (QinQ).
	for etherType == 0x8100 || etherType == 0x88a8 || etherType == 0x9100 {
		if len(data) < 4 {
			return decodedOther
		}
		etherType = binary.BigEndian.Uint16(data[2:4])
		data = data[4:]
	}
	switch etherType {
	case etherTypeIPv4:
		return decodeIPv4(data, s)
	case etherTypeIPv6:
		return decodeIPv6(data, s)
	}
	return decodedOther
}

func etherTypeOfVersion(data []byte) uint16 {
	if len(data) == 0 {
		return 0
	}
	switch data[0] >> 4 {
	case 4:
		return etherTypeIPv4
	case 6:
		return etherTypeIPv6
	}
	return 0
}

// decodeIPv4 decodes an IPv4 header (RFC 791) and the TCP segment in it.
func decodeIPv4(data []byte, s *segment) decodeResult {
	if len(data) < 20 || data[0]>>4 != 4 {
		return decodedOther
	}
	ihl := int(data[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(data[2:4]))
	if ihl < 20 || len(data) < ihl || (total != 0 && total < ihl) {
		return decodedOther
	}
	if flagsFrag := binary.BigEndian.Uint16(data[6:8]); flagsFrag&0x3fff != 0 {
		// More fragments, or a fragment offset: part of a fragmented datagram.
		s.fragment = data
		return decodedFragment
	}
	if data[9] != ipProtoTCP {
		return decodedOther
	}
	var src, dst [4]byte
	copy(src[:], data[12:16])
	copy(dst[:], data[16:20])
	missing := 0
	switch {
	case total == 0:
		// Segmentation offload on the capturing host left the length unset:
		// take what was captured.
	case total <= len(data):
		data = data[:total] // drop link-layer padding
	default:
		missing = total - len(data)
	}
	return decodeTCP(data[ihl:], netip.AddrFrom4(src), netip.AddrFrom4(dst), missing, s)
}

// decodeIPv6 decodes an IPv6 header (RFC 8200), skips its extension headers
// and decodes the TCP segment after them.
func decodeIPv6(data []byte, s *segment) decodeResult {
	if len(data) < 40 || data[0]>>4 != 6 {
		return decodedOther
	}
	plen := int(binary.BigEndian.Uint16(data[4:6]))
	next := data[6]
	var src, dst [16]byte
	copy(src[:], data[8:24])
	copy(dst[:], data[24:40])
	data = data[40:]
	missing := 0
	if plen != 0 { // 0: a jumbogram, or TSO; take what was captured
		if plen <= len(data) {
			data = data[:plen]
		} else {
			missing = plen - len(data)
		}
	}
	for {
		switch next {
		case ipProtoTCP:
			return decodeTCP(data, netip.AddrFrom16(src), netip.AddrFrom16(dst), missing, s)
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if len(data) < 8 {
				return decodedOther
			}
			n := (int(data[1]) + 1) * 8
			if len(data) < n {
				return decodedOther
			}
			next, data = data[0], data[n:]
		case 44: // fragment
			if len(data) < 8 {
				return decodedOther
			}
			if binary.BigEndian.Uint16(data[2:4])&0xfff9 != 0 {
				s.fragment = nil // IPv6 fragments are not reassembled
				return decodedFragment
			}
			next, data = data[0], data[8:] // an atomic fragment
		case 51: // authentication header
			if len(data) < 8 {
				return decodedOther
			}
			n := (int(data[1]) + 2) * 4
			if len(data) < n {
				return decodedOther
			}
			next, data = data[0], data[n:]
		default: // ESP, no next header, anything else
			return decodedOther
		}
	}
}

// decodeTCP decodes a TCP header (RFC 9293 section 3.1).
func decodeTCP(data []byte, src, dst netip.Addr, missing int, s *segment) decodeResult {
	if len(data) < 20 {
		return decodedOther
	}
	off := int(data[12]>>4) * 4
	if off < 20 || len(data) < off {
		return decodedOther
	}
	s.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(data[0:2]))
	s.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(data[2:4]))
	s.seq = binary.BigEndian.Uint32(data[4:8])
	s.ack = binary.BigEndian.Uint32(data[8:12])
	s.flags = data[13]
	s.payload = data[off:]
	s.missing = missing
	return decodedTCP
}
