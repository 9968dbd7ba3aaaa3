package main

import (
	"net/netip"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// fragmented writes a connection whose one data segment (a protocol header
// and a heartbeat) comes as two IPv4 fragments: it decodes only if
// reassembly still works.
func fragmented(c *capw, client netip.AddrPort, id uint16) {
	server := netip.MustParseAddrPort("10.0.0.1:5672")
	c.raw(ipv4(nil, client.Addr(), server.Addr(), id, false, 0, 6, tcp(client, server, 5000, 0, flagSYN, nil)), c.tick())
	payload := append([]byte("AMQP\x00\x00\x09\x01"), amqp091.AppendHeartbeatFrame(nil)...)
	seg := tcp(client, server, 5001, 0, flagACK|flagPSH, payload)
	t := c.tick()
	c.raw(ipv4(nil, client.Addr(), server.Addr(), id+1, true, 0, 6, seg[:24]), t)
	c.raw(ipv4(nil, client.Addr(), server.Addr(), id+1, false, 24, 6, seg[24:]), t)
}

func init() {
	// First fragments of 100k IPv4 datagrams whose other fragments never
	// come (issue 14: 400k of them took 800 MB, without a warning).
	register("ip-fragments-100k.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp091Plain(c, 1)
		fragmented(c, netip.MustParseAddrPort("10.3.0.1:40001"), 1)
		server := netip.MustParseAddrPort("10.0.0.1:5672")
		n := int(100000 * scale)
		t := c.tick()
		for i := 0; i < n; i++ {
			client := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 4, byte(i >> 16), 1}), 40000)
			seg := tcp(client, server, 1, 0, flagACK|flagPSH, make([]byte, 1480))
			c.raw(ipv4(nil, client.Addr(), server.Addr(), uint16(i), true, 0, 6, seg[:1024]), t)
		}
		fragmented(c, netip.MustParseAddrPort("10.3.0.2:40002"), 7)
		amqp091Plain(c, 3)
		return c.bytes()
	})
}
