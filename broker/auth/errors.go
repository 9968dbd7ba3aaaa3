package auth

import (
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// SilentCloseDelay is how long RabbitMQ waits before closing a connection
// that failed before connection.open without telling the client why
// (rabbit_reader's SILENT_CLOSE_DELAY): it does not trust the client yet,
// and the pause slows down password guessing.
const SilentCloseDelay = 3 * time.Second

// AMQPError is a refusal the broker reports with connection.close or
// channel.close, Code and Text verbatim ("NOT_ALLOWED - vhost nope not
// found"). Check and CheckVHostAccess return it; Authenticate returns it
// for an unknown mechanism or a response that cannot be parsed.
type AMQPError struct {
	Code uint16
	Text string
	// Silent marks errors RabbitMQ never sends: it logs Text, waits
	// SilentCloseDelay and closes the socket. It is set on the
	// errors of the start-ok step other than a refused login.
	Silent bool
}

func (e *AMQPError) Error() string { return "auth: " + e.Text }

// LoginError is a refused login. The client is told only
// [LoginError.AMQPError]'s text, which names the mechanism; Detail, for
// the broker's log, says why, in RabbitMQ's words ("user 'u' - invalid
// credentials").
type LoginError struct {
	Mechanism string
	User      string // the name the client gave, "" if none could be read
	Detail    string
}

func (e *LoginError) Error() string {
	return "auth: " + e.Mechanism + " login refused: " + e.Detail
}

// AMQPError returns what RabbitMQ sends for a refused login: connection.close
// 403, but only to a client whose capabilities include
// authentication_failure_close; others see the socket close.
func (e *LoginError) AMQPError() *AMQPError {
	return &AMQPError{
		Code: amqp091.AccessRefused,
		Text: "ACCESS_REFUSED - Login was refused using authentication mechanism " + e.Mechanism +
			". For details see the broker logfile.",
	}
}

func refused(mech, user, detail string) *LoginError {
	return &LoginError{Mechanism: mech, User: user, Detail: detail}
}

func invalidCredentials(mech, user string) *LoginError {
	return refused(mech, user, "user '"+user+"' - invalid credentials")
}

func accessRefused(kind, name, vhost, user string) *AMQPError {
	return &AMQPError{
		Code: amqp091.AccessRefused,
		Text: "ACCESS_REFUSED - access to " + kind + " '" + name + "' in vhost '" + vhost + "' refused for user '" + user + "'",
	}
}
