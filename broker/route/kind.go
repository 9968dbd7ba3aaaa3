package route

import (
	"strconv"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Kind is an exchange type.
type Kind uint8

// Exchange types, named as exchange.declare names them.
const (
	Direct Kind = iota + 1
	Fanout
	Topic
	Headers
)

var kindNames = [...]string{Direct: "direct", Fanout: "fanout", Topic: "topic", Headers: "headers"}

// ParseKind returns the Kind exchange.declare's type names ("topic").
func ParseKind(s string) (Kind, bool) {
	for k, name := range kindNames {
		if name != "" && name == s {
			return Kind(k), true
		}
	}
	return 0, false
}

// String returns the type's name ("topic"), or "Kind(N)" for an unknown one.
func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// DestKind says what a binding's destination is.
type DestKind uint8

// Destination kinds, as RabbitMQ's destination_kind names them.
const (
	Queue DestKind = iota
	Exchange
)

// String returns "queue" or "exchange".
func (k DestKind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Exchange:
		return "exchange"
	}
	return "DestKind(" + strconv.Itoa(int(k)) + ")"
}

// Dest is a binding's destination: a queue, or an exchange for an
// exchange-to-exchange binding.
type Dest struct {
	Kind DestKind
	Name string
}

// String names the destination as RabbitMQ's messages do ("queue 'q'").
func (d Dest) String() string { return d.Kind.String() + " '" + d.Name + "'" }

// Binding is one binding of an exchange. RabbitMQ identifies a binding by
// its destination, key and arguments, so two bindings differing only in
// their arguments are two bindings. Arguments are equal when their entries
// are, whatever their order (RabbitMQ sorts them by key before comparing),
// with RabbitMQ's term equality for the values: an int8 1 and an int32 1
// are two bindings, a double 0.0 and -0.0 one.
type Binding struct {
	Dest Dest
	Key  string        // routing key (direct), binding key (topic); ignored by fanout and headers but part of the identity
	Args amqp091.Table // binding arguments as encoded
}
