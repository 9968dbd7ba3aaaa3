package main

import (
	"encoding/binary"
)

// ngBlocks splits a little-endian pcapng stream into its blocks.
func ngBlocks(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 12 {
		n := int(binary.LittleEndian.Uint32(b[4:8]))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func ngBlock(typ uint32, body []byte) []byte {
	n := 12 + (len(body)+3)&^3
	b := binary.LittleEndian.AppendUint32(nil, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, body...)
	for len(b) < n-4 {
		b = append(b, 0)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(n))
}

func init() {
	// A million interface description blocks between the packets of an
	// ordinary conversation, then a packet of interface 900000 (issue 14:
	// gopacket's reader kept them all, 494 MB).
	register("pcapng-interfaces-1m.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		amqp091Plain(c, 2)
		blocks := ngBlocks(c.bytes())
		out := append(append([]byte(nil), blocks[0]...), blocks[1]...) // SHB, IDB 0
		for _, b := range blocks[2 : len(blocks)/2] {
			out = append(out, b...)
		}
		idb := ngBlock(1, []byte{1, 0, 0, 0, 0, 0, 4, 0}) // Ethernet, snaplen 262144
		n := int(1000000 * scale)
		for i := 0; i < n; i++ {
			out = append(out, idb...)
		}
		// A packet of an interface past the reader's bound.
		epb := append([]byte(nil), blocks[len(blocks)/2]...)
		binary.LittleEndian.PutUint32(epb[8:], uint32(n-100))
		out = append(out, epb...)
		for _, b := range blocks[len(blocks)/2:] {
			out = append(out, b...)
		}
		return out
	})
	// An ordinary conversation, then a block whose length field is bogus
	// (6: under 12 and not a multiple of 4), then more blocks: the
	// warning must say so, not that the file was cut short.
	register("pcapng-bogus-length.pcapng", false, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		out := c.bytes()
		bad := ngBlock(6, make([]byte, 40))
		binary.LittleEndian.PutUint32(bad[4:], 6)
		out = append(out, bad...)
		c2 := newCapw()
		amqp091Plain(c2, 2)
		for _, b := range ngBlocks(c2.bytes())[2:] {
			out = append(out, b...)
		}
		return out
	})
}
