package broker

import (
	"errors"

	"github.com/wiretap-dev/wiretap/broker/auth"
)

// perm is a permission kind, as RabbitMQ checks them.
type perm = auth.Perm

const (
	permConfigure = auth.Configure
	permWrite     = auth.Write
	permRead      = auth.Read
)

// checkPerm asks the user store; a refusal is 403 ACCESS_REFUSED with
// RabbitMQ's text.
func (b *Broker) checkPerm(user, vhost string, p perm, kind, name string) *amqpError {
	if err := b.users.Check(user, vhost, p, kind, name); err != nil {
		return authError(err, 403)
	}
	return nil
}

// authError turns the user store's error into the broker's, keeping its
// reply code and text.
func authError(err error, code uint16) *amqpError {
	var ae *auth.AMQPError
	if errors.As(err, &ae) {
		return &amqpError{code: ae.Code, text: ae.Text}
	}
	return errorf(code, err.Error())
}
