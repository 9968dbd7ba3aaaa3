package proxy

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// Frame boundaries on the forwarding path, for the fault rules with a
// filter (close, drop, corrupt when FILTER). Such a rule must judge a
// frame before any of its bytes leave, so on a route that has one the
// proxy finds each frame with the protocol's own framing (an AMQP 0-9-1
// frame header's size, an AMQP 1.0 frame's size, a PostgreSQL message's
// length), holds a frame until it is whole, hands it to an [Inspector]
// (a decoder of the proxy's own, apart from the output's, which stays
// decoupled) and evaluates the filters on the units it completes. Only
// such routes pay: one more decode of every frame, and a frame's bytes
// wait for its last one. A stream whose framing the proxy does not know
// (another protocol, TLS passed through, bytes that are not a frame) is
// forwarded as it is from there on, and said so once.

// frameProto is the framing of a connection, told by the client's first
// bytes.
type frameProto int

const (
	frameUnknown frameProto = iota
	frameAMQP091
	frameAMQP10
	framePG
	frameNone // not framed: forwarded as it is
)

// maxHeldFrame is the largest frame held whole to be judged; a larger one
// is forwarded as it comes, unjudged (and said so).
const maxHeldFrame = 16 << 20

// PostgreSQL's untyped request codes.
const (
	pgProtocol3   = 196608
	pgCancel      = 80877102
	pgMaxStartLen = 10000
)

// framer finds the frames of one direction.
type framer struct {
	d    *dirFaults
	hold []byte // the start of a frame begun in an earlier read
	skip int64  // bytes of an unjudged large frame still to pass
	off  bool   // framing given up on this direction
}

// frameLen is the length of the frame at the start of b: n > 0 when its
// header is there, 0 when more bytes are needed, -1 when b does not
// start a frame of the connection's protocol. Called with c.mu held.
func (fr *framer) frameLen(b []byte) int {
	c := fr.d.c
	if c.fp == frameUnknown {
		if !fr.d.toServer {
			c.fp = frameNone // the server spoke first: not a protocol we frame
			return -1
		}
		if len(b) == 0 {
			return 0
		}
		switch {
		case b[0] == 'A':
			if len(b) < 8 {
				return 0
			}
			switch string(b[:8]) {
			case "AMQP\x00\x00\x09\x01":
				c.fp = frameAMQP091
			case "AMQP\x00\x01\x00\x00", "AMQP\x03\x01\x00\x00", "AMQP\x02\x01\x00\x00":
				c.fp = frameAMQP10
			default:
				c.fp = frameNone
				return -1
			}
		case b[0] == 0:
			c.fp = framePG
		default:
			c.fp = frameNone
			return -1
		}
	}
	be := binary.BigEndian
	switch c.fp {
	case frameAMQP091:
		if len(b) >= 1 && b[0] == 'A' {
			if len(b) < 8 {
				return 0
			}
			if string(b[:4]) != "AMQP" {
				return -1
			}
			return 8
		}
		if len(b) < 7 {
			return 0
		}
		switch b[0] {
		case 1, 2, 3, 4, 8:
		default:
			return -1
		}
		return 8 + int(be.Uint32(b[3:7]))
	case frameAMQP10:
		if len(b) >= 1 && b[0] == 'A' {
			if len(b) < 8 {
				return 0
			}
			if string(b[:4]) != "AMQP" {
				return -1
			}
			return 8
		}
		if len(b) < 4 {
			return 0
		}
		n := int(be.Uint32(b))
		if n < 8 {
			return -1
		}
		return n
	case framePG:
		if fr.d.toServer && !c.pgStarted {
			if len(b) < 8 {
				return 0
			}
			n := int(be.Uint32(b))
			if n < 8 || n > pgMaxStartLen {
				return -1
			}
			return n
		}
		if !fr.d.toServer && c.pgAnswers > 0 {
			if len(b) == 0 {
				return 0
			}
			return 1
		}
		if len(b) < 5 {
			return 0
		}
		n := int(be.Uint32(b[1:]))
		if n < 4 {
			return -1
		}
		return 1 + n
	}
	return -1
}

// framed updates the connection's framing state after a whole frame: a
// PostgreSQL client's untyped requests and the server's one-byte answers.
// Called with c.mu held.
func (fr *framer) framed(frame []byte) {
	c := fr.d.c
	if c.fp != framePG {
		return
	}
	if fr.d.toServer && !c.pgStarted {
		switch binary.BigEndian.Uint32(frame[4:8]) {
		case pgSSLRequest, pgGSSENCRequest:
			c.pgAnswers++
		case pgCancel:
		default:
			c.pgStarted = true
		}
		return
	}
	if !fr.d.toServer && c.pgAnswers > 0 && len(frame) == 1 {
		c.pgAnswers--
		if frame[0] == 'S' || frame[0] == 'G' {
			c.fp = frameNone // TLS or GSS passed through: nothing to frame
		}
	}
}

// forward is dirFaults.forward for a framed direction: b's whole frames
// are judged and forwarded, dropped or corrupted; a frame's start is held
// until its end comes. The decoder is handed b as it came, split where a
// fault's note goes, so that the note follows the frame it is about.
func (fr *framer) forward(b []byte, in inForce, now time.Time) error {
	d := fr.d
	c := d.c
	decAt := 0 // b[:decAt] was handed to the decoder
	handTo := func(end int) {
		if end > decAt {
			c.p.dec.Data(c.f, d.toServer, b[decAt:end])
			decAt = end
		}
	}
	d.out = d.out[:0]
	flush := func() error {
		if len(d.out) == 0 {
			return nil
		}
		err := d.send(d.out, in, now)
		d.out = d.out[:0]
		return err
	}
	pos := 0 // b[:pos] is taken (forwarded, held or judged)
	for pos < len(b) && !fr.off && !c.cut.Load() {
		if fr.skip > 0 {
			k := int(min(fr.skip, int64(len(b)-pos)))
			d.out = append(d.out, b[pos:pos+k]...)
			fr.skip -= int64(k)
			pos += k
			continue
		}
		// The frame at hand: the held start of one, or b[pos:].
		var frame []byte
		var end int // the frame's end in b
		n := 0
		c.mu.Lock()
		if len(fr.hold) > 0 {
			// Its header first, a byte at a time (at most 8).
			n = fr.frameLen(fr.hold)
			for n == 0 && pos < len(b) {
				fr.hold = append(fr.hold, b[pos])
				pos++
				n = fr.frameLen(fr.hold)
			}
			if n > 0 && n <= maxHeldFrame {
				take := min(n-len(fr.hold), len(b)-pos)
				fr.hold = append(fr.hold, b[pos:pos+take]...)
				pos += take
				if len(fr.hold) < n {
					c.mu.Unlock()
					continue // the rest in a later read
				}
				frame, end = fr.hold, pos
			}
		} else {
			n = fr.frameLen(b[pos:])
			if n == 0 || (n > 0 && n <= maxHeldFrame && n > len(b)-pos) {
				fr.hold = append(fr.hold[:0], b[pos:]...)
				pos = len(b)
				c.mu.Unlock()
				continue
			}
			if n > 0 && n <= maxHeldFrame {
				frame, end = b[pos:pos+n], pos+n
			}
		}
		switch {
		case n == 0:
			c.mu.Unlock()
			continue // a header cut short, held
		case n < 0:
			fr.lost()
			c.mu.Unlock()
			continue
		case n > maxHeldFrame:
			// A frame too large to hold: passed on unjudged.
			c.mu.Unlock()
			d.out = append(d.out, fr.hold...)
			fr.skip = int64(n - len(fr.hold))
			fr.hold = fr.hold[:0]
			handTo(pos)
			c.p.dec.Note(c.f, d.toServer, capture.NoteFault, fmt.Sprintf("fault rules: a frame of %d bytes is too large to hold and judge (more than %d); forwarded as it comes, unjudged", n, maxHeldFrame))
			continue
		}
		fr.framed(frame)
		rule, what := fr.judge(frame, in, now)
		c.mu.Unlock()
		pos = end
		if rule == nil {
			d.out = append(d.out, frame...)
			fr.hold = fr.hold[:0]
			continue
		}
		handTo(end)
		switch rule.Kind {
		case FaultDrop:
			c.note(d.toServer, rule, fmt.Sprintf("%s (%d bytes) not forwarded to %s", what, len(frame), towards(d.toServer)))
		case FaultCorrupt:
			last := frame[len(frame)-1]
			d.out = append(d.out, frame...)
			d.out[len(d.out)-1] = ^last
			c.note(d.toServer, rule, fmt.Sprintf("%s (%d bytes) forwarded to %s with its last byte 0x%02x changed to 0x%02x", what, len(frame), towards(d.toServer), last, ^last))
		case FaultCloseWhen:
			fr.hold = fr.hold[:0]
			if err := flush(); err != nil {
				return err
			}
			d.cutFor(rule, fmt.Sprintf("%s before %s (%d bytes) reached %s", closeHow(rule.Reset), what, len(frame), towards(d.toServer)))
		}
		fr.hold = fr.hold[:0]
	}
	if pos < len(b) && !c.cut.Load() {
		// Framing lost: the rest goes as it is.
		d.out = append(d.out, b[pos:]...)
	}
	handTo(len(b))
	return flush()
}

// lost gives framing up on this direction: what follows is forwarded as
// it is. Called with c.mu held.
func (fr *framer) lost() {
	fr.off = true
	d := fr.d
	if len(fr.hold) > 0 {
		d.out = append(d.out, fr.hold...)
		fr.hold = fr.hold[:0]
	}
	if d.c.fp == frameNone && !d.toServer {
		return // said on the client's direction, or a protocol not framed
	}
	d.c.p.dec.Note(d.c.f, d.toServer, capture.NoteFault, fmt.Sprintf("fault rules with a filter no longer apply to what goes to %s: its frames could not be told apart (not AMQP or PostgreSQL framing, or TLS passed through)", towards(d.toServer)))
}

// judge decodes a whole frame and returns the first rule in force whose
// filter matches one of its units, with that unit's summary. Called with
// c.mu held.
func (fr *framer) judge(frame []byte, in inForce, now time.Time) (*FaultRule, string) {
	c := fr.d.c
	if c.insp == nil {
		return nil, ""
	}
	c.insp.Frame(fr.d.toServer, frame, now)
	for _, r := range in.filtered {
		if (r.Kind == FaultDrop || r.Kind == FaultCorrupt) && !r.All && c.spent[r] {
			continue
		}
		if what, ok := c.insp.Match(r.When); ok {
			if c.spent == nil {
				c.spent = map[*FaultRule]bool{}
			}
			c.spent[r] = true
			return r, what
		}
	}
	return nil, ""
}
