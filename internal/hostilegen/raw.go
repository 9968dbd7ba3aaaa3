package main

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// Raw packets, for shapes Synth does not write (a lone SYN, IP fragments).

const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagPSH = 0x08
	flagACK = 0x10
)

func csum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return ^uint16(acc)
}

// ipv4 appends an Ethernet frame carrying an IPv4 header with the given
// fragment fields and payload (a TCP segment or a piece of one).
func ipv4(dst []byte, src, to netip.Addr, id uint16, moreFrags bool, fragOff int, proto byte, payload []byte) []byte {
	dst = append(dst, 2, 0, 0, 0, 0, 0xb, 2, 0, 0, 0, 0, 0xa, 0x08, 0x00)
	h := len(dst)
	frag := uint16(fragOff / 8)
	if moreFrags {
		frag |= 0x2000
	}
	dst = append(dst, 0x45, 0, 0, 0, byte(id>>8), byte(id), byte(frag>>8), byte(frag), 64, proto, 0, 0)
	s, d := src.As4(), to.As4()
	dst = append(dst, s[:]...)
	dst = append(dst, d[:]...)
	binary.BigEndian.PutUint16(dst[h+2:], uint16(20+len(payload)))
	binary.BigEndian.PutUint16(dst[h+10:], fold(csum(dst[h:h+20], 0)))
	return append(dst, payload...)
}

// tcp returns a TCP segment from src to dst with a correct checksum.
func tcp(src, dst netip.AddrPort, seq, ack uint32, flags byte, payload []byte) []byte {
	b := make([]byte, 20, 20+len(payload))
	binary.BigEndian.PutUint16(b[0:], src.Port())
	binary.BigEndian.PutUint16(b[2:], dst.Port())
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12] = 5 << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], 65535)
	b = append(b, payload...)
	s, d := src.Addr().As4(), dst.Addr().As4()
	acc := csum(s[:], 0)
	acc = csum(d[:], acc)
	acc += 6 + uint32(len(b))
	binary.BigEndian.PutUint16(b[16:], fold(csum(b, acc)))
	return b
}

// raw writes one Ethernet frame.
func (c *capw) raw(frame []byte, t time.Time) {
	p := capture.Packet{Link: capture.LinkTypeEthernet, Time: t, Data: frame, Length: len(frame)}
	if err := c.w.WritePacket(&p); err != nil {
		panic("hostilegen: " + err.Error())
	}
}
