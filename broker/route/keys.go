package route

import "github.com/wiretap-dev/wiretap/decode/amqp091"

// InvalidMessageError is a publish RabbitMQ refuses for what its headers
// hold: the broker closes the channel with 406 PRECONDITION_FAILED and
// Text.
type InvalidMessageError struct {
	Text string // RabbitMQ's words: `invalid message: {unacceptable_type_in_header,"CC",longstr}`
}

func (e *InvalidMessageError) Error() string { return "route: " + e.Text }

// RoutingKeys appends to dst the keys RabbitMQ routes a message by (its
// rabbit_basic:header_routes): the routing key, then the longstr elements
// of the CC and then the BCC header, which are arrays (elements of other
// types are skipped). A CC or BCC header that is not an array refuses the
// message with an [*InvalidMessageError]. The keys alias key and headers.
// Without CC or BCC it appends just key and allocates nothing.
func RoutingKeys(key []byte, headers amqp091.Table, dst [][]byte) ([][]byte, error) {
	dst = append(dst, key)
	if len(headers) == 0 {
		return dst, nil
	}
	for _, h := range [...]string{"CC", "BCC"} {
		v, ok := headers.Get(h)
		if !ok {
			continue
		}
		if v.Type != amqp091.TypeArray {
			return dst, &InvalidMessageError{Text: `invalid message: {unacceptable_type_in_header,"` + h + `",` + v.Type.RabbitName() + "}"}
		}
		it := v.Array().Iter()
		for it.Next() {
			if it.Value().Type == amqp091.TypeLongstr {
				dst = append(dst, it.Value().Bytes())
			}
		}
	}
	return dst, nil
}
