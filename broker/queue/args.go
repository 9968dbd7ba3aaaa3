package queue

import (
	"strconv"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Overflow is what a full queue does with a publish (x-overflow).
type Overflow uint8

const (
	// DropHead drops (dead-letters as "maxlen") the oldest messages to
	// make room: RabbitMQ's default.
	DropHead Overflow = iota
	// RejectPublish refuses the publish (basic.nack in confirm mode).
	RejectPublish
	// RejectPublishDLX refuses it and dead-letters it as "maxlen".
	RejectPublishDLX
)

// String returns the x-overflow value.
func (o Overflow) String() string {
	switch o {
	case RejectPublish:
		return "reject-publish"
	case RejectPublishDLX:
		return "reject-publish-dlx"
	}
	return "drop-head"
}

// Config is what the message store of one queue obeys. Its zero value is
// not "no limits": use [NoLimits] or [ParseArgs].
type Config struct {
	MaxLength      int64    // -1: none (x-max-length)
	MaxLengthBytes int64    // -1: none (x-max-length-bytes), body bytes
	Overflow       Overflow // x-overflow
	MessageTTL     int64    // ms, -1: none (x-message-ttl)
	MaxPriority    uint8    // 0: no priorities (x-max-priority, up to 255)
}

// NoLimits is the Config of a queue declared without arguments.
var NoLimits = Config{MaxLength: -1, MaxLengthBytes: -1, MessageTTL: -1}

// Args are the declare arguments that concern the broker rather than the
// message store.
type Args struct {
	Expires int64 // ms, -1: none (x-expires)
	// DeadLetterExchange is x-dead-letter-exchange; "" names the default
	// exchange, so HasDeadLetterExchange says whether there is one.
	DeadLetterExchange    string
	HasDeadLetterExchange bool
	// DeadLetterRoutingKey is x-dead-letter-routing-key: dead-lettered
	// copies are routed with it instead of their own routing keys (and
	// lose their CC header).
	DeadLetterRoutingKey    string
	HasDeadLetterRoutingKey bool
	SingleActiveConsumer    bool // x-single-active-consumer
	Lazy                    bool // x-queue-mode "lazy": accepted, changes nothing here
	Version                 int  // x-queue-version, 1 or 2 (0: not given)
}

// ReplyPreconditionFailed is the reply code of every refusal here.
const ReplyPreconditionFailed = 406

// ArgErrorForm says which of RabbitMQ's three texts an [ArgError] takes.
type ArgErrorForm uint8

const (
	// InvalidArg: invalid arg 'x-max-length' for queue 'q' in vhost '/': {value_negative,-1}
	InvalidArg ArgErrorForm = iota
	// InvalidType, from RabbitMQ's channel before anything else, for a
	// dead-letter exchange that is not a string: invalid type 'signedint'
	// for arg 'x-dead-letter-exchange' in queue 'q' in vhost '/'
	InvalidType
	// WrongQueueType, for arguments of quorum queues and streams: invalid
	// arg 'x-max-age' for queue 'q' in vhost '/' of queue type rabbit_classic_queue
	WrongQueueType
)

// ArgError is a queue.declare argument RabbitMQ 3.10 refuses; it answers
// 406 PRECONDITION_FAILED and closes the channel. Use ReplyText for the
// exact text.
type ArgError struct {
	Arg  string // the argument: "x-max-length"
	Form ArgErrorForm
	// Type is the refused value's type as RabbitMQ names it ("signedint")
	// for InvalidType.
	Type   string
	reason term
}

// Reason is RabbitMQ's reason on one line, for InvalidArg:
// {value_negative,-1}, "expected integer, got longstr", invalid_overflow.
func (e *ArgError) Reason() string {
	if e.Form != InvalidArg {
		return ""
	}
	return string(e.reason.appendFlat(nil))
}

// Error names the argument and the reason, without a queue.
func (e *ArgError) Error() string {
	switch e.Form {
	case InvalidType:
		return "queue: invalid type '" + e.Type + "' for arg '" + e.Arg + "'"
	case WrongQueueType:
		return "queue: invalid arg '" + e.Arg + "' of queue type rabbit_classic_queue"
	}
	return "queue: invalid arg '" + e.Arg + "': " + e.Reason()
}

// ReplyText is the channel.close reply-text RabbitMQ sends for a declare of
// queue in vhost, e.g. "PRECONDITION_FAILED - invalid arg 'x-max-length'
// for queue 'q' in vhost '/': {value_negative,-1}", the reason laid out as
// Erlang's "~255p" lays it out, and cut as RabbitMQ cuts reply texts
// longer than 255 bytes (252 and "...").
func (e *ArgError) ReplyText(queue, vhost string) string {
	res := "queue '" + queue + "' in vhost '" + vhost + "'"
	switch e.Form {
	case InvalidType:
		return replyText("invalid type '" + e.Type + "' for arg '" + e.Arg + "' in " + res)
	case WrongQueueType:
		return replyText("invalid arg '" + e.Arg + "' for " + res + " of queue type rabbit_classic_queue")
	}
	prefix := "invalid arg '" + e.Arg + "' for " + res + ": "
	return replyText(string(appendPretty([]byte(prefix), e.reason, column(prefix), 255)))
}

// replyText is RabbitMQ's reply-text for a 406 with explanation expl: the
// code's name, " - ", the explanation, cut to 252 bytes and "..." when the
// whole would not fit the 255 bytes of a shortstr.
func replyText(expl string) string {
	s := "PRECONDITION_FAILED - " + expl
	if len(s) > 255 {
		s = s[:252] + "..."
	}
	return s
}

// notClassic are the arguments of RabbitMQ 3.10's other queue types, which
// a classic queue refuses.
var notClassic = [...]string{
	"x-dead-letter-strategy", "x-max-in-memory-length", "x-max-in-memory-bytes",
	"x-quorum-initial-group-size", "x-delivery-limit", "x-queue-leader-locator",
	"x-max-age", "x-stream-max-segment-size-bytes", "x-initial-cluster-size",
}

// ParseArgs validates queue.declare arguments as RabbitMQ 3.10 does for a
// new queue, in its order, so the first refusal is the one RabbitMQ
// reports: the dead-letter exchange's type (checked by its channel), then
// x-queue-type, then each argument of a classic queue in RabbitMQ's list
// order, then arguments that belong to other queue types, in table order.
// Only the first occurrence of a key counts, as in RabbitMQ. Unknown
// arguments are accepted and ignored. Quorum queues and streams are not
// implemented: x-queue-type "quorum" or "stream" is refused with the
// reason RabbitMQ gives for unknown types ("unsupported queue type
// 'quorum'"). Refusals are [*ArgError]s.
func ParseArgs(args amqp091.Table) (Config, Args, error) {
	cfg := NoLimits
	a := Args{Expires: -1}
	if err := args.Validate(); err != nil {
		return cfg, a, &FormatError{What: "arguments", Err: err}
	}
	if v, ok := args.Get("x-dead-letter-exchange"); ok && v.Type != amqp091.TypeLongstr {
		return cfg, a, &ArgError{Arg: "x-dead-letter-exchange", Form: InvalidType, Type: v.Type.RabbitName()}
	}
	if v, ok := args.Get("x-queue-type"); ok {
		if v.Type != amqp091.TypeLongstr {
			return cfg, a, unacceptable("x-queue-type", v)
		}
		if s := string(v.Bytes()); s != "classic" {
			return cfg, a, &ArgError{Arg: "x-queue-type", reason: stringTerm("unsupported queue type '" + s + "'")}
		}
	}
	if v, ok := args.Get("x-expires"); ok {
		n, err := expiryArg("x-expires", v)
		if err != nil {
			return cfg, a, err
		}
		if n == 0 {
			return cfg, a, &ArgError{Arg: "x-expires", reason: tagTerm("value_zero", intTerm(0))}
		}
		a.Expires = n
	}
	if v, ok := args.Get("x-message-ttl"); ok {
		n, err := expiryArg("x-message-ttl", v)
		if err != nil {
			return cfg, a, err
		}
		cfg.MessageTTL = n
	}
	if v, ok := args.Get("x-dead-letter-exchange"); ok {
		a.DeadLetterExchange, a.HasDeadLetterExchange = string(v.Bytes()), true
	}
	if v, ok := args.Get("x-dead-letter-routing-key"); ok {
		if v.Type != amqp091.TypeLongstr {
			return cfg, a, unacceptable("x-dead-letter-routing-key", v)
		}
		if !a.HasDeadLetterExchange {
			return cfg, a, &ArgError{Arg: "x-dead-letter-routing-key", reason: atomTerm("routing_key_but_no_dlx_defined")}
		}
		a.DeadLetterRoutingKey, a.HasDeadLetterRoutingKey = string(v.Bytes()), true
	}
	if v, ok := args.Get("x-max-length"); ok {
		n, err := nonNegArg("x-max-length", v)
		if err != nil {
			return cfg, a, err
		}
		cfg.MaxLength = n
	}
	if v, ok := args.Get("x-max-length-bytes"); ok {
		n, err := nonNegArg("x-max-length-bytes", v)
		if err != nil {
			return cfg, a, err
		}
		cfg.MaxLengthBytes = n
	}
	if v, ok := args.Get("x-max-priority"); ok {
		n, err := nonNegArg("x-max-priority", v)
		if err != nil {
			return cfg, a, err
		}
		if n > 255 {
			return cfg, a, &ArgError{Arg: "x-max-priority", reason: tagTerm("max_value_exceeded", intTerm(n))}
		}
		cfg.MaxPriority = uint8(n)
	}
	if v, ok := args.Get("x-overflow"); ok {
		if v.Type != amqp091.TypeLongstr {
			return cfg, a, unacceptable("x-overflow", v)
		}
		switch string(v.Bytes()) {
		case "drop-head":
			cfg.Overflow = DropHead
		case "reject-publish":
			cfg.Overflow = RejectPublish
		case "reject-publish-dlx":
			cfg.Overflow = RejectPublishDLX
		default:
			return cfg, a, &ArgError{Arg: "x-overflow", reason: atomTerm("invalid_overflow")}
		}
	}
	if v, ok := args.Get("x-queue-mode"); ok {
		if v.Type != amqp091.TypeLongstr {
			return cfg, a, unacceptable("x-queue-mode", v)
		}
		switch s := string(v.Bytes()); s {
		case "default", "lazy":
			a.Lazy = s == "lazy"
		default:
			return cfg, a, &ArgError{Arg: "x-queue-mode", reason: stringTerm("unsupported queue mode '" + s + "'")}
		}
	}
	if v, ok := args.Get("x-queue-version"); ok {
		n, err := nonNegArg("x-queue-version", v)
		if err != nil {
			return cfg, a, err
		}
		if n != 1 && n != 2 {
			return cfg, a, &ArgError{Arg: "x-queue-version", reason: stringTerm("unsupported queue version '" + strconv.FormatInt(n, 10) + "'")}
		}
		a.Version = int(n)
	}
	if v, ok := args.Get("x-single-active-consumer"); ok {
		if v.Type != amqp091.TypeBool {
			return cfg, a, unacceptable("x-single-active-consumer", v)
		}
		a.SingleActiveConsumer = v.Bool()
	}
	it := args.Iter()
	for it.Next() {
		for _, k := range notClassic {
			if string(it.Key()) == k {
				return cfg, a, &ArgError{Arg: k, Form: WrongQueueType}
			}
		}
	}
	return cfg, a, nil
}

func unacceptable(arg string, v amqp091.Value) *ArgError {
	return &ArgError{Arg: arg, reason: tagTerm("unacceptable_type", atomTerm(v.Type.RabbitName()))}
}

// intArg is RabbitMQ's check_int_arg: the integer types its parser
// produces ('L' reads as a signed long).
func intArg(arg string, v amqp091.Value) (int64, error) {
	switch v.Type {
	case amqp091.TypeInt8, amqp091.TypeUint8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeUint16,
		amqp091.TypeInt32, amqp091.TypeUint32, amqp091.TypeInt64, amqp091.TypeUint64:
		return v.Int(), nil
	}
	return 0, &ArgError{Arg: arg, reason: stringTerm("expected integer, got " + v.Type.RabbitName())}
}

func nonNegArg(arg string, v amqp091.Value) (int64, error) {
	n, err := intArg(arg, v)
	if err == nil && n < 0 {
		err = &ArgError{Arg: arg, reason: tagTerm("value_negative", intTerm(n))}
	}
	return n, err
}

// expiryArg is an integer TTL (RabbitMQ's check_expiry).
func expiryArg(arg string, v amqp091.Value) (int64, error) {
	n, err := intArg(arg, v)
	switch {
	case err != nil:
	case n < 0:
		err = &ArgError{Arg: arg, reason: tagTerm("value_negative", intTerm(n))}
	case n > MaxExpiry:
		err = &ArgError{Arg: arg, reason: tagTerm("value_too_large", intTerm(n))}
	}
	return n, err
}
