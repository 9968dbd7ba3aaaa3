package main

import (
	"net/netip"
)

// Out-of-order TCP segments whose hole never fills: reassembly holds them
// until a bound or the memory budget (--max-memory) takes them.

// holeFlow writes a lone SYN from client to server and returns the
// sequence number of the client's first byte.
func holeFlow(c *capw, client, server netip.AddrPort, isn uint32) uint32 {
	c.raw(ipv4(nil, client.Addr(), server.Addr(), 1, false, 0, 6, tcp(client, server, isn, 0, flagSYN, nil)), c.tick())
	return isn + 1
}

// holeSegment writes n bytes from client at seq.
func holeSegment(c *capw, client, server netip.AddrPort, seq uint32, n int) {
	c.raw(ipv4(nil, client.Addr(), server.Addr(), 2, false, 0, 6, tcp(client, server, seq, 1, flagACK|flagPSH, make([]byte, n))), c.tick())
}

func init() {
	// One AMQP 0-9-1 connection sends its protocol header, then 12 MiB
	// of segments of 32 KiB, each after a 1000-byte hole that never
	// fills; a plain conversation runs while they are held, and others
	// before and after.
	register("tcp-holes-12m.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		client := netip.MustParseAddrPort("10.5.0.1:41000")
		server := netip.MustParseAddrPort("10.0.0.1:5672")
		seq := holeFlow(c, client, server, 1000)
		c.raw(ipv4(nil, client.Addr(), server.Addr(), 2, false, 0, 6, tcp(client, server, seq, 1, flagACK|flagPSH, []byte("AMQP\x00\x00\x09\x01"))), c.tick())
		seq += 8
		const seg = 32 << 10
		n := int(384 * scale) // 12 MiB
		for i := 0; i < n; i++ {
			seq += 1000 // the hole
			holeSegment(c, client, server, seq, seg)
			seq += seg
			if i == n/2 {
				amqp091Plain(c, 3)
			}
		}
		amqp091Plain(c, 4)
		return c.bytes()
	})
	// 2,000 connections each holding 16 KiB after a 100-byte hole that
	// never fills (32 MiB in all, each connection well under its own
	// bounds); plain conversations before, amid and after them.
	register("tcp-holes-flows-2k.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		server := netip.MustParseAddrPort("10.0.0.1:5672")
		n := int(2000 * scale)
		for i := 0; i < n; i++ {
			client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 6, byte(i >> 8), byte(i)}), 42000)
			seq := holeFlow(c, client, server, 5000)
			holeSegment(c, client, server, seq+100, 16<<10)
			if i == n/2 {
				amqp091Plain(c, n/2+3)
			}
		}
		amqp091Plain(c, n+3)
		return c.bytes()
	})
}
