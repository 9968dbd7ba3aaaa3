package queue

import (
	"math"
	"sync/atomic"

	"github.com/wiretap-dev/wiretap/broker/latency"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Message is one published message, shared (immutable) by every queue it
// was routed to. The broker's come from [AllocMessage] and are reference
// counted ([Message.Hold], [Message.Release]).
type Message struct {
	Exchange   string
	RoutingKey string
	// Format says what Header and Body hold: FormatAMQP091 (0, the zero
	// value) or FormatAMQP10.
	Format uint8
	// Header is the content header frame payload exactly as published
	// (class-id, weight, body-size, property flags and list): delivery
	// copies it to the wire unchanged. Body is the whole body.
	//
	// For FormatAMQP10, Header is the message's header and
	// message-annotations sections exactly as received (delivery-
	// annotations, which are for one hop, are dropped), and Body is the
	// rest exactly as received: the bare message (properties,
	// application-properties, body) and the footer. Delivery writes both
	// back unchanged: the bare message is never decoded and re-encoded.
	Header []byte
	Body   []byte
	// Expiration is the per-message TTL in milliseconds from the
	// expiration property, -1 for none (0 is a TTL: expire unless
	// delivered at once); Priority is the priority property (0 when
	// absent); Persistent says delivery-mode is 2. ParseProperties sets
	// all three, as NewMessage does.
	Expiration int64
	Priority   uint8
	Persistent bool
	// PublishedAt is when the broker had the whole message, on
	// latency.Now's clock; Via is the latency of the exchange it was
	// published to (nil for none). The broker's latency histograms read
	// them.
	PublishedAt int64
	Via         *latency.Pair

	// refs counts the references the broker holds (see pool.go): the
	// message goes back to its pool at the last release, and counts
	// once against the memory watermark while held, however many queues
	// hold it.
	refs    atomic.Int32
	class   int8 // size class + 1 of buf; 0 not pooled, unpooled a record only
	counted bool // allocated while poisoning was on: in LiveMessages
	buf     []byte
	parent  *Message
}

// Message formats (Message.Format).
const (
	FormatAMQP091 uint8 = 0
	FormatAMQP10  uint8 = 1
)

// NewMessage returns the message published to exchange with routingKey,
// its properties parsed and checked by ParseProperties. header and body
// are kept, not copied.
func NewMessage(exchange, routingKey string, header, body []byte) (*Message, error) {
	m := &Message{Exchange: exchange, RoutingKey: routingKey, Header: header, Body: body}
	if err := m.ParseProperties(); err != nil {
		return nil, err
	}
	return m, nil
}

// Size is what the message counts against x-max-length-bytes: RabbitMQ
// counts the body only, not the properties.
func (m *Message) Size() int64 { return int64(len(m.Body)) }

// MaxExpiry is the longest TTL RabbitMQ accepts, in milliseconds (ten
// years), for the expiration property, x-message-ttl and x-expires.
const MaxExpiry = 315_360_000_000

// ParseProperties sets Expiration, Priority and Persistent from Header,
// checking them as RabbitMQ 3.10's channel does before it routes a
// publish: the expiration first, then the types of the CC and BCC headers,
// then delivery-mode (absent, 1 or 2). A refusal is a [*PublishError].
// It does not allocate unless it fails.
func (m *Message) ParseProperties() error {
	var h amqp091.ContentHeader
	if err := h.DecodeFromBytes(m.Header); err != nil {
		return &FormatError{What: "content header", Err: err}
	}
	return m.SetProperties(&h.Properties)
}

// SetProperties is ParseProperties for a caller that has decoded the
// content header already (the broker, which reads user-id and headers
// from it too): the properties are read once per publish.
func (m *Message) SetProperties(p *amqp091.Properties) error {
	m.Expiration = -1
	if p.Flags&amqp091.FlagExpiration != 0 {
		ttl, err := ParseExpiration(p.Expiration)
		if err != nil {
			return err
		}
		m.Expiration = ttl
	}
	if p.Flags&amqp091.FlagHeaders != 0 {
		for _, key := range [...]string{"CC", "BCC"} {
			if v, ok := p.Headers.Get(key); ok && v.Type != amqp091.TypeArray {
				return &PublishError{reason: tupleTerm(atomTerm("unacceptable_type_in_header"), stringTerm(key), atomTerm(v.Type.RabbitName()))}
			}
		}
	}
	m.Persistent = false
	if p.Flags&amqp091.FlagDeliveryMode != 0 {
		switch p.DeliveryMode {
		case 1:
		case 2:
			m.Persistent = true
		default:
			return &PublishError{reason: tagTerm("delivery_mode_unknown", intTerm(int64(p.DeliveryMode)))}
		}
	}
	m.Priority = 0
	if p.Flags&amqp091.FlagPriority != 0 {
		m.Priority = p.Priority
	}
	return nil
}

// ParseExpiration parses an expiration property as RabbitMQ does (Erlang's
// string:to_integer): an optional sign and decimal digits, nothing else,
// from 0 to [MaxExpiry]. A refusal is a [*PublishError] worded as
// RabbitMQ's: invalid expiration '10x': {leftover_string,"x"}.
func ParseExpiration(b []byte) (int64, error) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var v int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v <= math.MaxInt64/10 {
			v = v*10 + int64(b[i]-'0')
		} else {
			v = math.MaxInt64 // beyond MaxExpiry either way
		}
	}
	switch {
	case i == start:
		return 0, expirationError(b, atomTerm("no_integer"))
	case i < len(b):
		return 0, expirationError(b, tagTerm("leftover_string", stringTerm(string(b[i:]))))
	case neg && v != 0:
		return 0, expirationError(b, tagTerm("value_negative", digitsTerm(b[start:], true)))
	case v > MaxExpiry:
		return 0, expirationError(b, tagTerm("value_too_large", digitsTerm(b[start:], false)))
	}
	return v, nil
}

// digitsTerm is the integer Erlang prints for the digits, which may be
// beyond 64 bits.
func digitsTerm(d []byte, neg bool) term {
	for len(d) > 1 && d[0] == '0' {
		d = d[1:]
	}
	s := string(d)
	if neg {
		s = "-" + s
	}
	return term{kind: termInteger, text: s}
}

// PublishError is a publish RabbitMQ refuses for its properties; it
// answers 406 PRECONDITION_FAILED and closes the channel.
type PublishError struct {
	// Expiration is the refused expiration property; it is "" when the
	// refusal is not about the expiration ("invalid message: ...").
	Expiration    string
	badExpiration bool
	reason        term
}

func expirationError(b []byte, reason term) *PublishError {
	return &PublishError{Expiration: string(b), badExpiration: true, reason: reason}
}

// Reason is RabbitMQ's reason on one line: no_integer,
// {leftover_string,"x"}, {delivery_mode_unknown,3}.
func (e *PublishError) Reason() string { return string(e.reason.appendFlat(nil)) }

// Error returns the reply text without its code name.
func (e *PublishError) Error() string { return "queue: " + e.text() }

// ReplyText is the channel.close reply-text RabbitMQ sends, e.g.
// "PRECONDITION_FAILED - invalid expiration 'abc': no_integer", laid out
// as Erlang's "~p" lays out the reason (a long one is broken over lines)
// and cut to 255 bytes as RabbitMQ cuts it.
func (e *PublishError) ReplyText() string { return replyText(e.text()) }

func (e *PublishError) text() string {
	prefix := "invalid message: "
	if e.badExpiration {
		prefix = "invalid expiration '" + e.Expiration + "': "
	}
	return string(appendPretty([]byte(prefix), e.reason, column(prefix), 80))
}

// FormatError is input that is not well-formed AMQP: a content header or
// a field table the codec refuses.
type FormatError struct {
	What string // "content header", "arguments"
	Err  error
}

func (e *FormatError) Error() string { return "queue: " + e.What + ": " + e.Err.Error() }
func (e *FormatError) Unwrap() error { return e.Err }
