package main

import (
	"github.com/wiretap-dev/wiretap/capture"
	a "github.com/wiretap-dev/wiretap/decode/amqp10"
)

func amqp10Frame(ch uint16, perf []byte, payload ...[]byte) []byte {
	return a.AppendFrame(nil, a.FrameTypeAMQP, ch, append([][]byte{perf}, payload...)...)
}

// amqp10Session writes an AMQP 1.0 session on f (no SASL): open, begin,
// attach, one transfer per message, detach, end, close.
func amqp10Session(c *capw, f *capture.Flow, msgs ...[]byte) {
	hdr := []byte("AMQP\x00\x01\x00\x00")
	open := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorOpen, a.AppendString(nil, "hostilegen"), a.AppendString(nil, "localhost"), a.AppendUint(nil, 0xffffffff)))
	begin := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorBegin, a.AppendNull(nil), a.AppendUint(nil, 0), a.AppendUint(nil, 1000), a.AppendUint(nil, 1000)))
	attach := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorAttach, a.AppendString(nil, "sender"), a.AppendUint(nil, 0), a.AppendBool(nil, false)))
	c.send(f, true, append(append(append(append([]byte(nil), hdr...), open...), begin...), attach...))
	c.send(f, false, append(append(append(append([]byte(nil), hdr...), open...), begin...), attach...))
	for i, m := range msgs {
		tr := a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, 0), a.AppendUint(nil, uint32(i)), a.AppendBinary(nil, []byte{byte(i)}), a.AppendUint(nil, 0), a.AppendBool(nil, true))
		c.send(f, true, amqp10Frame(0, tr, m))
	}
	detach := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorDetach, a.AppendUint(nil, 0), a.AppendBool(nil, true)))
	end := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorEnd))
	cl := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorClose))
	c.send(f, true, append(append(append([]byte(nil), detach...), end...), cl...))
	c.send(f, false, append(append(append([]byte(nil), detach...), end...), cl...))
	c.close(f)
}

func amqp10Value(s string) []byte {
	return a.AppendDescribed(nil, a.DescriptorAMQPValue, a.AppendString(nil, s))
}

func amqp10Plain(c *capw, h int) {
	amqp10Session(c, c.flow(h, 41000+uint16(h%20000), 5672), amqp10Value("hello"), amqp10Value("world"))
}

// bigMap encodes a map32 of n symbol keys to small uints. Keys repeat
// every 1000 entries, which keeps the file small under gzip and makes
// most of them duplicates (which JSON output must number, in linear time).
func bigMap(n int) []byte {
	kv := make([][]byte, 0, 2*n)
	for i := 0; i < n; i++ {
		kv = append(kv, a.AppendSymbol(nil, "k"+itoa(i%1000)), a.AppendUint(nil, uint32(i%1000)))
	}
	return a.AppendMap(nil, kv...)
}

func init() {
	// An AMQP 1.0 message whose application-properties and footer are maps
	// of 1M keys (issue 14: quadratic, like the 0-9-1 headers table).
	register("amqp10-map-1m.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp10Plain(c, 1)
		n := int(1000000 * scale)
		msg := a.AppendDescribed(nil, a.DescriptorApplicationProperties, bigMap(n/2))
		msg = append(msg, amqp10Value("body")...)
		msg = append(msg, a.AppendDescribed(nil, a.DescriptorFooter, bigMap(n/2))...)
		amqp10Session(c, c.flow(2, 41002, 5672), msg)
		amqp10Plain(c, 3)
		return c.bytes()
	})
	// One connection with 8 deliveries in progress at once, 24 MiB each,
	// never completed (issue 14: AMQP 1.0 had no connection-wide cap on
	// what it reassembles; 0-9-1 has one).
	register("amqp10-partial-8x24m.pcapng", true, func(scale float64) []byte {
		c := newCapw()
		amqp10Plain(c, 1)
		c.s.MSS = 65415 // jumbo segments: a 200 KB file, not 2.5 MB
		f := c.flow(2, 41002, 5672)
		hdr := []byte("AMQP\x00\x01\x00\x00")
		open := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorOpen, a.AppendString(nil, "hostilegen"), a.AppendString(nil, "localhost"), a.AppendUint(nil, 0xffffffff)))
		begin := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorBegin, a.AppendNull(nil), a.AppendUint(nil, 0), a.AppendUint(nil, 1000), a.AppendUint(nil, 1000)))
		c.send(f, true, append(append(append([]byte(nil), hdr...), open...), begin...))
		c.send(f, false, append(append(append([]byte(nil), hdr...), open...), begin...))
		for h := 0; h < 8; h++ {
			c.send(f, true, amqp10Frame(0, a.AppendComposite(nil, a.DescriptorAttach, a.AppendString(nil, "sender-"+itoa(h)), a.AppendUint(nil, uint32(h)), a.AppendBool(nil, false))))
		}
		chunk := make([]byte, 1<<20)
		frames := int(24 * scale)
		for k := 0; k < frames; k++ {
			for h := 0; h < 8; h++ {
				var tr []byte
				if k == 0 {
					tr = a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, uint32(h)), a.AppendUint(nil, uint32(h)), a.AppendBinary(nil, []byte{byte(h)}), a.AppendUint(nil, 0), a.AppendBool(nil, false), a.AppendBool(nil, true))
				} else {
					tr = a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, uint32(h)), a.AppendNull(nil), a.AppendNull(nil), a.AppendNull(nil), a.AppendNull(nil), a.AppendBool(nil, true))
				}
				c.send(f, true, amqp10Frame(0, tr, chunk))
			}
		}
		cl := amqp10Frame(0, a.AppendComposite(nil, a.DescriptorClose))
		c.send(f, true, cl)
		c.send(f, false, cl)
		c.close(f)
		c.s.MSS = 0
		amqp10Plain(c, 3)
		return c.bytes()
	})
	// A value nested past the decoders' depth limit (lists in lists): it
	// must say so, not show null.
	register("amqp10-deep.pcapng", false, func(scale float64) []byte {
		c := newCapw()
		amqp10Plain(c, 1)
		v := a.AppendString(nil, "bottom")
		for i := 0; i < 200; i++ {
			v = a.AppendList(nil, v)
		}
		amqp10Session(c, c.flow(2, 41002, 5672), a.AppendDescribed(nil, a.DescriptorAMQPValue, v), amqp10Value("after"))
		amqp10Plain(c, 3)
		return c.bytes()
	})
}
