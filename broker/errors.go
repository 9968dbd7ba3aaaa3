package broker

import (
	"strconv"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// amqpError is an error the broker answers with a channel.close (soft
// errors: 403, 404, 405, 406) or a connection.close (hard errors: 320,
// 501-506, 530, 540, 541), with RabbitMQ's reply text and the class and
// method ids of the method that caused it.
type amqpError struct {
	code     uint16
	text     string // "NOT_FOUND - no queue 'q' in vhost '/'"
	classID  uint16
	methodID uint16
	noIDs    bool // sent with class and method 0, as RabbitMQ's login refusal
}

func (e *amqpError) Error() string {
	return "broker: " + strconv.Itoa(int(e.code)) + " " + e.text
}

// hard reports whether the error closes the connection (spec §1.2 of the
// 0-9-1 constants: the hard-error class).
func (e *amqpError) hard() bool {
	switch e.code {
	case amqp091.ContentTooLarge, amqp091.NoConsumers, amqp091.AccessRefused,
		amqp091.NotFound, amqp091.ResourceLocked, amqp091.PreconditionFailed:
		return false
	}
	return true
}

// codeName is RabbitMQ's prefix of a reply text for a code.
func codeName(code uint16) string {
	switch code {
	case 311:
		return "CONTENT_TOO_LARGE"
	case 312:
		return "NO_ROUTE"
	case 313:
		return "NO_CONSUMERS"
	case 320:
		return "CONNECTION_FORCED"
	case 402:
		return "INVALID_PATH"
	case 403:
		return "ACCESS_REFUSED"
	case 404:
		return "NOT_FOUND"
	case 405:
		return "RESOURCE_LOCKED"
	case 406:
		return "PRECONDITION_FAILED"
	case 501:
		return "FRAME_ERROR"
	case 502:
		return "SYNTAX_ERROR"
	case 503:
		return "COMMAND_INVALID"
	case 504:
		return "CHANNEL_ERROR"
	case 505:
		return "UNEXPECTED_FRAME"
	case 506:
		return "RESOURCE_ERROR"
	case 530:
		return "NOT_ALLOWED"
	case 540:
		return "NOT_IMPLEMENTED"
	case 541:
		return "INTERNAL_ERROR"
	}
	return "UNKNOWN"
}

// errorf builds an amqpError whose text is RabbitMQ's "NAME - detail". The
// class and method ids are filled in by the dispatcher.
func errorf(code uint16, detail string) *amqpError {
	return &amqpError{code: code, text: codeName(code) + " - " + detail}
}

// Resource names as RabbitMQ's rabbit_misc:rs/1 prints them.
func rsQueue(name, vhost string) string {
	return "queue '" + name + "' in vhost '" + vhost + "'"
}

func rsExchange(name, vhost string) string {
	return "exchange '" + name + "' in vhost '" + vhost + "'"
}

func errNoQueue(name, vhost string) *amqpError {
	return errorf(amqp091.NotFound, "no "+rsQueue(name, vhost))
}

func errNoExchange(name, vhost string) *amqpError {
	return errorf(amqp091.NotFound, "no "+rsExchange(name, vhost))
}

func errLocked(name, vhost string) *amqpError {
	return errorf(amqp091.ResourceLocked, "cannot obtain exclusive access to locked "+rsQueue(name, vhost)+
		". It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.")
}

func errInequivalent(arg, kind, name, vhost, received, current string) *amqpError {
	var rs string
	if kind == "queue" {
		rs = rsQueue(name, vhost)
	} else {
		rs = rsExchange(name, vhost)
	}
	return errorf(amqp091.PreconditionFailed, "inequivalent arg '"+arg+"' for "+rs+
		": received "+received+" but current is "+current)
}

// replyText is a reply text as it fits a shortstr: RabbitMQ cuts a longer
// one to 252 bytes and "...".
func replyText(s string) []byte {
	if len(s) > 255 {
		return []byte(s[:252] + "...")
	}
	return []byte(s)
}
