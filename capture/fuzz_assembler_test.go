package capture_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// streamByte is the byte at sequence number seq of direction d in the
// checked streams, so a Handler can tell whether a byte is the right one.
func streamByte(d int, seq uint32) byte { return byte(seq*7 + uint32(d)*101 + seq>>8) }

// checker is a Handler that knows where each direction's stream starts and
// checks that every byte delivered is the one at its sequence number: no
// byte twice, none out of order, gaps of the right length.
type checker struct {
	next    [2]uint32
	gaps    [2]int
	bytes   [2]int
	closed  int
	failure string
}

func (c *checker) fail(format string, args ...any) {
	if c.failure == "" {
		c.failure = fmt.Sprintf(format, args...)
	}
}

func (c *checker) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	d := side(fromA)
	if c.closed > 0 {
		c.fail("Data after Close")
	}
	if len(data) == 0 {
		c.fail("empty Data")
	}
	for i, b := range data {
		if want := streamByte(d, c.next[d]); b != want {
			c.fail("direction %d byte %d at seq %d: %#x, want %#x", d, i, c.next[d], b, want)
			return
		}
		c.next[d]++
	}
	c.bytes[d] += len(data)
}

func (c *checker) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	if n <= 0 {
		c.fail("gap of %d in a flow whose start was seen", n)
		return
	}
	c.next[side(fromA)] += uint32(n)
	c.gaps[side(fromA)] += n
}

func (c *checker) Close(f *capture.Flow, t time.Time) { c.closed++ }

// segmentsFromBytes turns fuzz input into segments of one connection whose
// handshake the first 8 bytes choose (initial sequence numbers, so wrap
// around is reached): then 4 bytes per segment: direction and flags, a
// 16-bit offset from the start of the direction's stream, a length.
func segmentsFromBytes(data []byte) (isn [2]uint32, segs []tcp) {
	if len(data) < 8 {
		return isn, nil
	}
	isn = [2]uint32{binary.BigEndian.Uint32(data), binary.BigEndian.Uint32(data[4:])}
	ends := [2]string{cli, srv}
	segs = append(segs,
		tcp{src: cli, dst: srv, seq: isn[0], flags: syn},
		tcp{src: srv, dst: cli, seq: isn[1], ack: isn[0] + 1, flags: syn | ack},
	)
	for data = data[8:]; len(data) >= 4 && len(segs) < 400; data = data[4:] {
		d := int(data[0] & 1)
		off := uint32(binary.BigEndian.Uint16(data[1:3]))
		n := int(data[3])
		s := tcp{src: ends[d], dst: ends[1-d], seq: isn[d] + 1 + off, flags: ack}
		if data[0]&0x02 != 0 {
			s.flags |= fin
		}
		if data[0]&0xfc == 0xfc {
			s.flags |= rst
		}
		p := make([]byte, n)
		for i := range p {
			p[i] = streamByte(d, s.seq+uint32(i))
		}
		s.payload = string(p)
		if data[0]&0x04 != 0 && n > 1 {
			s.cut = n / 2 // snap length
		}
		segs = append(segs, s)
	}
	return isn, segs
}

func checkAssembly(t *testing.T, data []byte, opt *capture.Options) *checker {
	isn, segs := segmentsFromBytes(data)
	c := &checker{next: [2]uint32{isn[0] + 1, isn[1] + 1}}
	a := capture.NewAssembler(c, opt, nil)
	for _, s := range segs {
		ip := s.ip(0)
		a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Data: ip, Length: len(ip) + s.cut})
	}
	a.Flush()
	if c.failure != "" {
		t.Fatal(c.failure)
	}
	if len(segs) > 0 && c.closed != 1 {
		t.Fatalf("closed %d times", c.closed)
	}
	return c
}

// FuzzAssembler checks reassembly of arbitrary segment sequences of one
// connection against the byte each sequence number must carry.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte{0, 0, 0, 100, 0, 0, 1, 0, 0, 0, 0, 10, 1, 0, 0, 20, 0, 0, 20, 10, 0, 0, 10, 10, 2, 0, 30, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xf0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 5, 200, 0, 0, 0, 100, 4, 0, 100, 100, 0, 0, 0, 250})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 50, 0, 0, 25, 50, 0, 0, 10, 5, 0xfc, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAssembly(t, data, &capture.Options{MaxBufferedPerFlow: 600})
	})
}

// TestReassemblyRandom sends two streams in segments that are reordered,
// duplicated and overlapping, and expects them back whole, byte for byte.
func TestReassemblyRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var in []byte
		in = binary.BigEndian.AppendUint32(in, rng.Uint32())
		in = binary.BigEndian.AppendUint32(in, uint32(0xffffff00+round)) // wraps for some rounds
		const length = 3000
		var covered [2]int
		for covered[0] < length || covered[1] < length {
			d := rng.IntN(2)
			off := max(0, covered[d]-rng.IntN(300)) // sometimes behind: retransmission
			n := 1 + rng.IntN(200)
			if off+n > length {
				n = length - off
			}
			if n <= 0 {
				continue
			}
			in = append(in, byte(d), byte(off>>8), byte(off), byte(n))
			covered[d] = max(covered[d], off+n)
		}
		// Shuffle segments a little: swap neighbours.
		for i := 8; i+8 <= len(in); i += 4 {
			if rng.IntN(3) == 0 {
				for k := range 4 {
					in[i+k], in[i+4+k] = in[i+4+k], in[i+k]
				}
			}
		}
		c := checkAssembly(t, in, nil)
		if c.bytes != [2]int{length, length} || c.gaps != [2]int{} {
			t.Fatalf("round %d: delivered %v bytes with gaps %v, want %d each and none", round, c.bytes, c.gaps, length)
		}
	}
}
