package decode

import "encoding/binary"

// Protocol header prefixes (AMQP 0-9-1 §4.2.2, AMQP 1.0 §2.2).
var (
	headerAMQP091 = []byte("AMQP\x00\x00\x09\x01")
	headerAMQP10  = []byte("AMQP\x00\x01\x00\x00")
	headerAMQPTLS = []byte("AMQP\x02\x01\x00\x00")
	headerSASL    = []byte("AMQP\x03\x01\x00\x00")
)

// PostgreSQL startup-phase request codes (protocol.sgml, "Message Formats").
const (
	PgProtocol30    = 196608   // 3.0
	PgProtocol32    = 196610   // 3.2
	PgCancel        = 80877102 // CancelRequest
	PgSSLRequest    = 80877103
	PgGSSENCRequest = 80877104
)

// DetectHeader looks at the first bytes a peer sent on a connection and
// says which protocol it speaks, and whether those bytes are the kind only a
// client sends first (a protocol header or a startup packet). It needs at
// most 8 bytes; with fewer it may return ProtoUnknown.
func DetectHeader(b []byte) (p Proto, clientHello bool) {
	if len(b) >= 8 && string(b[:4]) == "AMQP" {
		switch {
		case string(b[:8]) == string(headerAMQP091):
			return ProtoAMQP091, true
		case string(b[:8]) == string(headerAMQP10), string(b[:8]) == string(headerSASL),
			string(b[:8]) == string(headerAMQPTLS):
			return ProtoAMQP10, true
		}
		// Other AMQP versions (0-8, 0-9, 0-10): the 0-9-1 decoder shows the
		// header and the server's answer.
		return ProtoAMQP091, true
	}
	if len(b) >= 8 {
		n := binary.BigEndian.Uint32(b)
		code := binary.BigEndian.Uint32(b[4:])
		switch code {
		case PgProtocol30, PgProtocol32:
			if n >= 8 && n <= 10000 {
				return ProtoPgSQL, true
			}
		case PgSSLRequest, PgGSSENCRequest:
			if n == 8 {
				return ProtoPgSQL, true
			}
		case PgCancel:
			if n >= 16 && n <= 264 {
				return ProtoPgSQL, true
			}
		}
		if code>>16 == 3 && n >= 8 && n <= 10000 {
			return ProtoPgSQL, true // 3.x minor versions
		}
	}
	return ProtoUnknown, false
}

// Well-known server ports.
var wellKnown = map[uint16]Proto{
	5672: ProtoAMQP091, // also AMQP 1.0 on RabbitMQ; the header decides
	5671: ProtoAMQP091,
	5432: ProtoPgSQL,
}

// ProtoByPort returns the protocol usually served on port.
func ProtoByPort(port uint16) (Proto, bool) {
	p, ok := wellKnown[port]
	return p, ok
}

// IsWellKnownPort reports whether port is one wiretap knows a server on.
func IsWellKnownPort(port uint16) bool { _, ok := wellKnown[port]; return ok }

// LooksAMQP10Frame reports whether b, the first bytes seen one way on a
// connection whose protocol header was not captured (a capture started
// mid-stream), start an AMQP 1.0 frame (§2.3.1: a 4-byte size of at
// least 8, a data offset of at least 2 words, type 0 for AMQP or 1 for
// SASL) rather than an AMQP 0-9-1 one, whose first byte is its type (1,
// 2, 3 or 8) where a 1.0 frame under 16 MiB has 0. It needs 8 bytes.
func LooksAMQP10Frame(b []byte) bool {
	if len(b) < 8 || b[0] != 0 {
		return false
	}
	size := binary.BigEndian.Uint32(b)
	doff := uint32(b[4]) * 4
	return size >= 8 && doff >= 8 && doff <= size && (b[5] == 0 || b[5] == 1)
}
