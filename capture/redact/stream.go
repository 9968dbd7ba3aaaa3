package redact

import "encoding/binary"

// Mask is the byte a secret's bytes are overwritten with.
const Mask = '*'

type opKind uint8

const (
	opSkip       opKind = iota // pass n bytes unchanged
	opMask                     // overwrite n bytes
	opMaskNonNUL               // overwrite n bytes, except NULs
	opRead                     // pass n bytes unchanged, then call then with them
)

type op struct {
	kind opKind
	n    int
	then func(b []byte)
}

// stream follows one direction of a connection: a queue of operations,
// each over the next n bytes, refilled by next when it runs dry.
type stream struct {
	ops  []op
	next func()
	hdr  []byte // what the current opRead has collected
	done bool   // nothing more to overwrite: pass everything
	all  bool   // overwrite everything (lost track before the end of the exchange)
	// left is the bytes left in the current frame or message, for the
	// parsers' bounds checks.
	left int
}

func (s *stream) push(kind opKind, n int) {
	if n > 0 {
		s.ops = append(s.ops, op{kind: kind, n: n})
	}
}

// read queues a read of n bytes (n <= 8).
func (s *stream) read(n int, then func(b []byte)) {
	s.ops = append(s.ops, op{kind: opRead, n: n, then: then})
}

func (s *stream) finish() {
	s.done, s.ops, s.next = true, nil, nil
}

// feed applies the operations to b, in place, and reports whether it
// overwrote anything.
func (s *stream) feed(b []byte) (changed bool) {
	for len(b) > 0 {
		if s.all {
			for i := range b {
				b[i] = Mask
			}
			return true
		}
		if s.done {
			return changed
		}
		if len(s.ops) == 0 {
			if s.next == nil {
				s.finish()
				return changed
			}
			s.next()
			continue
		}
		o := &s.ops[0]
		n := min(o.n, len(b))
		switch o.kind {
		case opMask:
			for i := range b[:n] {
				b[i] = Mask
			}
			changed = true
		case opMaskNonNUL:
			for i := range b[:n] {
				if b[i] != 0 {
					b[i] = Mask
					changed = true
				}
			}
		case opRead:
			s.hdr = append(s.hdr, b[:n]...)
		}
		b = b[n:]
		o.n -= n
		if o.n > 0 {
			continue
		}
		then := o.then
		s.ops = s.ops[1:]
		if then != nil {
			h := s.hdr
			s.hdr = s.hdr[:0]
			// then may queue more operations: they come before those
			// queued already.
			rest := s.ops
			s.ops = nil
			then(h)
			s.ops = append(s.ops, rest...)
		}
	}
	return changed
}

// take reports whether n more bytes fit the current frame, and counts them.
// When they do not, the rest of the frame is overwritten: a secret may be
// in it.
func (s *stream) take(n int) bool {
	if n < 0 || n > s.left {
		s.push(opMask, s.left)
		s.left = 0
		return false
	}
	s.left -= n
	return true
}

func (s *stream) skipRest(extra int) {
	s.push(opSkip, s.left+extra)
	s.left = 0
}

// lost is called when bytes of this direction are missing: unless the
// exchange was over, everything from now on is overwritten.
func (s *stream) lost() {
	if !s.done {
		s.all = true
	}
}

// Conn redacts both directions of one connection, each given in order.
// The zero value is not usable; see [NewConn].
type Conn struct {
	client, server stream
	// pgAuth is the last PostgreSQL Authentication request code the server
	// sent (-1: none), which says what the client's next 'p' message is.
	pgAuth  int32
	scratch []byte
}

// NewConn returns a Conn that finds the protocol in the client's first
// bytes (AMQP 0-9-1, AMQP 1.0 or PostgreSQL; anything else is passed as
// it is).
func NewConn() *Conn {
	c := &Conn{pgAuth: -1}
	c.client.next = c.clientStart
	c.server.done = true // until the client turns out to speak PostgreSQL
	return c
}

// Redact returns b with the secrets in it overwritten: b itself when there
// were none, else a copy that is valid until the next call. fromClient
// says which direction b belongs to.
func (c *Conn) Redact(fromClient bool, b []byte) []byte {
	s := &c.server
	if fromClient {
		s = &c.client
	}
	if s.done && !s.all {
		return b
	}
	c.scratch = append(c.scratch[:0], b...)
	if s.feed(c.scratch) {
		return c.scratch
	}
	return b
}

// RedactInPlace overwrites the secrets in b itself.
func (c *Conn) RedactInPlace(fromClient bool, b []byte) (changed bool) {
	if fromClient {
		return c.client.feed(b)
	}
	return c.server.feed(b)
}

// Lost reports that bytes of one direction are missing.
func (c *Conn) Lost(fromClient bool) {
	if fromClient {
		c.client.lost()
	} else if !c.server.done {
		// The server side only tells PostgreSQL 'p' messages apart: without
		// it, they are overwritten whole but for a trailing NUL.
		c.server.finish()
		c.pgAuth = -1
	}
}

// Done reports that nothing more will be overwritten.
func (c *Conn) Done() bool {
	return c.client.done && !c.client.all && c.server.done
}

func (c *Conn) clientStart() {
	s := &c.client
	s.read(8, func(h []byte) {
		switch {
		case string(h) == "AMQP\x00\x00\x09\x01":
			s.next = c.amqp091Frame
		case string(h) == "AMQP\x03\x01\x00\x00":
			s.next = c.amqp10Frame
		case binary.BigEndian.Uint32(h) >= 8 && binary.BigEndian.Uint32(h) < 1<<20:
			c.server.done = false
			c.server.next = c.pgServerStart
			c.pgUntyped(h)
		default: // AMQP 1.0 without SASL, TLS, another protocol
			s.finish()
		}
	})
}

// AMQP 0-9-1 frames (section 4.2.3): type, channel, size, payload, 0xCE.
func (c *Conn) amqp091Frame() {
	s := &c.client
	s.read(7, func(h []byte) {
		s.left = int(binary.BigEndian.Uint32(h[3:]))
		if h[0] != 1 || s.left < 4 {
			s.skipRest(1)
			return
		}
		s.left -= 4
		s.read(4, func(m []byte) {
			class, method := binary.BigEndian.Uint16(m), binary.BigEndian.Uint16(m[2:])
			if class != 10 {
				s.skipRest(1)
				return
			}
			switch method {
			case 11: // start-ok: client-properties table, mechanism, response, locale
				if !s.take(4) {
					s.push(opSkip, 1)
					return
				}
				s.read(4, func(l []byte) {
					n := int(binary.BigEndian.Uint32(l))
					if !s.take(n) {
						s.push(opSkip, 1)
						return
					}
					s.push(opSkip, n)
					if !s.take(1) {
						s.push(opSkip, 1)
						return
					}
					s.read(1, func(l []byte) {
						if !s.take(int(l[0])) {
							s.push(opSkip, 1)
							return
						}
						s.push(opSkip, int(l[0]))
						c.amqp091Response()
					})
				})
			case 21: // secure-ok: response
				c.amqp091Response()
			case 41: // open: the exchange is over
				s.skipRest(1)
				s.next = nil
			default:
				s.skipRest(1)
			}
		})
	})
}

// amqp091Response overwrites a long string, then passes the rest of the
// frame.
func (c *Conn) amqp091Response() {
	s := &c.client
	if !s.take(4) {
		s.push(opSkip, 1)
		return
	}
	s.read(4, func(l []byte) {
		n := int(binary.BigEndian.Uint32(l))
		if !s.take(n) {
			s.push(opSkip, 1)
			return
		}
		s.push(opMask, n)
		s.skipRest(1)
	})
}

// AMQP 1.0 SASL frames (part 2.3.1 and 5.3): size, doff, type, channel,
// extended header, body. After SASL the client sends the AMQP header.
func (c *Conn) amqp10Frame() {
	s := &c.client
	s.read(8, func(h []byte) {
		if string(h[:4]) == "AMQP" {
			s.finish()
			return
		}
		s.left = int(binary.BigEndian.Uint32(h)) - 8
		doff := int(h[4])*4 - 8
		if s.left < 0 || doff < 0 || h[5] != 1 {
			s.push(opMask, max(s.left, 0)) // not SASL: not ours to read
			s.left = 0
			return
		}
		if !s.take(doff) {
			return
		}
		s.push(opSkip, doff)
		if !s.take(3) {
			return
		}
		s.read(3, func(d []byte) {
			if d[0] != 0 || d[1] != 0x53 || (d[2] != 0x41 && d[2] != 0x43) {
				s.skipRest(0) // sasl-mechanisms, sasl-outcome, ...: no secrets
				return
			}
			init := d[2] == 0x41
			c.amqp10List(func() {
				if init {
					c.amqp10Value(false, func() { c.amqp10Value(true, func() { s.skipRest(0) }) })
				} else {
					c.amqp10Value(true, func() { s.skipRest(0) })
				}
			})
		})
	})
}

// amqp10List reads a list constructor and its size and count.
func (c *Conn) amqp10List(then func()) {
	s := &c.client
	if !s.take(1) {
		return
	}
	s.read(1, func(k []byte) {
		n := 0
		switch k[0] {
		case 0x45: // list0
			s.skipRest(0)
			return
		case 0xc0:
			n = 2
		case 0xd0:
			n = 8
		default:
			s.take(-1)
			return
		}
		if !s.take(n) {
			return
		}
		s.push(opSkip, n)
		then()
	})
}

// amqp10Value passes (or, when secret, overwrites) one symbol, binary or
// null value.
func (c *Conn) amqp10Value(secret bool, then func()) {
	s := &c.client
	if !s.take(1) {
		return
	}
	s.read(1, func(k []byte) {
		var w int
		switch k[0] {
		case 0x40: // null
			then()
			return
		case 0xa0, 0xa3: // vbin8, sym8
			w = 1
		case 0xb0, 0xb3: // vbin32, sym32
			w = 4
		default:
			s.take(-1)
			return
		}
		if !s.take(w) {
			return
		}
		s.read(w, func(l []byte) {
			n := int(l[0])
			if w == 4 {
				n = int(binary.BigEndian.Uint32(l))
			}
			if !s.take(n) {
				return
			}
			if secret {
				s.push(opMask, n)
			} else {
				s.push(opSkip, n)
			}
			then()
		})
	})
}

// PostgreSQL codes of the untyped first messages (section 55.7).
const (
	pgCancel   = 80877102
	pgSSL      = 80877103
	pgGSSENC   = 80877104
	pgProtocol = 3 << 16
)

// pgUntyped handles an untyped client message whose first 8 bytes (length,
// code) are h.
func (c *Conn) pgUntyped(h []byte) {
	s := &c.client
	n, code := int(binary.BigEndian.Uint32(h)), binary.BigEndian.Uint32(h[4:])
	switch {
	case code == pgSSL || code == pgGSSENC:
		s.push(opSkip, n-8)
		// Either the TLS (or GSS) handshake follows, or, refused, the next
		// untyped message.
		s.next = func() {
			s.read(1, func(b []byte) {
				if b[0] != 0 { // a TLS record (0x16), GSS data: not a length under 16 MiB
					s.finish()
					c.server.finish()
					return
				}
				first := b[0]
				s.read(7, func(r []byte) {
					c.pgUntyped(append([]byte{first}, r...))
				})
			})
		}
	case code>>16 == 3:
		s.push(opSkip, n-8)
		s.next = c.pgClientMessage
	default: // CancelRequest, or not PostgreSQL after all
		s.finish()
		c.server.finish()
	}
}

// pgClientMessage handles a typed client message: type, int32 length.
func (c *Conn) pgClientMessage() {
	s := &c.client
	s.read(5, func(h []byte) {
		s.left = int(binary.BigEndian.Uint32(h[1:])) - 4
		if s.left < 0 {
			s.all = true // not a message boundary: lost
			return
		}
		if h[0] != 'p' {
			if c.pgAuth == 0 {
				// Authenticated and talking: no more secrets.
				s.finish()
				c.server.finish()
				return
			}
			s.skipRest(0)
			return
		}
		switch c.pgAuth {
		case 3, 5: // PasswordMessage: a C string
			s.push(opMask, s.left-1)
			s.push(opMaskNonNUL, min(s.left, 1))
			s.left = 0
		case 10: // SASLInitialResponse: mechanism, int32 length, data
			c.pgMechanism()
		case -1: // unknown: all but a trailing NUL
			s.push(opMask, s.left-1)
			s.push(opMaskNonNUL, min(s.left, 1))
			s.left = 0
		default: // SASLResponse, GSSResponse
			s.push(opMask, s.left)
			s.left = 0
		}
	})
}

// pgMechanism passes a SASL mechanism name up to its NUL, a byte at a
// time, then overwrites the response after its length.
func (c *Conn) pgMechanism() {
	s := &c.client
	if !s.take(1) {
		return
	}
	s.read(1, func(b []byte) {
		if b[0] != 0 {
			c.pgMechanism()
			return
		}
		if !s.take(4) {
			return
		}
		s.read(4, func(l []byte) {
			n := int(int32(binary.BigEndian.Uint32(l)))
			if n < 0 {
				n = 0
			}
			if !s.take(n) {
				return
			}
			s.push(opMask, n)
			// Anything past the response is not PostgreSQL's: overwrite.
			s.push(opMask, s.left)
			s.left = 0
		})
	})
}

// pgServerStart reads the server's first byte: the answer to an SSLRequest
// or GSSENCRequest, or the type of its first message.
func (c *Conn) pgServerStart() {
	s := &c.server
	s.read(1, func(b []byte) {
		switch b[0] {
		case 'S', 'G': // encryption follows
			s.finish()
			c.client.finish()
		case 'N':
			s.next = c.pgServerStart
		default:
			s.next = c.pgServerMessage
			c.pgServerBody(b[0])
		}
	})
}

func (c *Conn) pgServerMessage() {
	c.server.read(1, func(b []byte) { c.pgServerBody(b[0]) })
}

// pgServerBody reads the length of a server message of type typ and, for an
// Authentication request, its code.
func (c *Conn) pgServerBody(typ byte) {
	s := &c.server
	s.read(4, func(l []byte) {
		s.left = int(binary.BigEndian.Uint32(l)) - 4
		if s.left < 0 {
			s.finish() // lost: the client side falls back to its default
			c.pgAuth = -1
			return
		}
		if typ != 'R' || s.left < 4 {
			s.skipRest(0)
			return
		}
		s.left -= 4
		s.read(4, func(code []byte) {
			c.pgAuth = int32(binary.BigEndian.Uint32(code))
			s.skipRest(0)
			if c.pgAuth == 0 {
				s.finish()
			}
		})
	})
}
