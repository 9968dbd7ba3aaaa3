package main

import (
	"bytes"
	"net/netip"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// t0 is every corpus file's first packet time.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// capw writes whole conversations as TCP packets with [pcapng.Synth].
type capw struct {
	buf  bytes.Buffer
	w    *pcapng.Writer
	s    *pcapng.Synth
	t    time.Time
	next int
}

func newCapw() *capw {
	c := &capw{t: t0}
	c.w = pcapng.NewWriter(&c.buf)
	c.s = pcapng.NewSynth(c.w)
	return c
}

// flow opens a connection from client port cport on host h to server port
// sport (the SYN is written with its first bytes).
func (c *capw) flow(h int, cport, sport uint16) *capture.Flow {
	c.next++
	a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(h >> 8), byte(h)}), cport)
	b := netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), sport)
	return &capture.Flow{ID: c.next, A: a, B: b, SYN: true, First: c.t}
}

func (c *capw) tick() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// send writes data from the client (fromClient) or the server.
func (c *capw) send(f *capture.Flow, fromClient bool, data []byte) {
	c.s.Data(f, fromClient, data, c.tick())
}

func (c *capw) close(f *capture.Flow) { c.s.Close(f, c.tick()) }

func (c *capw) bytes() []byte {
	if err := c.s.Err(); err != nil {
		panic("hostilegen: " + err.Error())
	}
	if err := c.w.Close(); err != nil {
		panic("hostilegen: " + err.Error())
	}
	return c.buf.Bytes()
}

func itoa(i int) string { return strconv.Itoa(i) }
