// Package redact overwrites the credentials in recorded AMQP and
// PostgreSQL traffic with asterisks of the same length, leaving every
// length field and frame boundary as it was, so that a recording meant to
// be shared still decodes, secrets aside.
//
// What is overwritten, client side only:
//
//   - AMQP 0-9-1: the response of connection.start-ok and
//     connection.secure-ok (PLAIN's "\x00user\x00password", AMQPLAIN's
//     table, anything else), AMQP 0-9-1 section 1.4.2.
//   - AMQP 1.0: the initial-response of sasl-init and the response of
//     sasl-response, AMQP 1.0 part 5.3.3.
//   - PostgreSQL: the contents of PasswordMessage (its terminating NUL
//     kept), of SASLInitialResponse (the mechanism name and length kept)
//     and of SASLResponse and GSSResponse, PostgreSQL protocol section
//     55.7. Which one a 'p' message is follows from the server's last
//     Authentication request; without it, everything but a trailing NUL is
//     overwritten.
//
// A [Conn] follows both directions of one connection as plain streams; a
// [Packets] follows TCP segments of a live capture. Both work in place as
// bytes pass, never holding any back, and stop looking once the
// authentication exchange is over (connection.open, the first client
// message after AuthenticationOk, the AMQP 1.0 header after SASL).
// Bytes they cannot place are a limit: after a gap on the client side
// before the exchange is over, every further client byte is overwritten;
// of a captured connection first seen mid-stream, only segments that
// start with a whole credential-carrying message are redacted (a secret
// split across segments of such a connection is written as it was).
package redact
