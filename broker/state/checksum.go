package state

import "time"

// ChecksumSource is implemented by a source that verifies AMQP 1.0
// end-to-end checksums (the embedded broker with --verify-checksums).
type ChecksumSource interface {
	Checksums() Checksums
}

// Checksums is what a broker verifying the x-opt-crc-32 / x-opt-adler-32
// footer annotations of the messages it relays found.
type Checksums struct {
	// Verifying says the broker recomputes checksums; Publishing is the
	// algorithm of the footer it adds to messages published without one
	// ("" for none).
	Verifying  bool
	Publishing string
	// Verified counts the checksums recomputed (on arrival and on
	// delivery), Mismatches those that did not match, Added the footers
	// added.
	Verified, Mismatches, Added uint64
	// Recent are the latest mismatches, the newest last.
	Recent []ChecksumMismatch
}

// ChecksumMismatch is one message whose checksum did not match.
type ChecksumMismatch struct {
	At time.Time
	// Where is "arrival" (as a publisher sent it) or "delivery" (as the
	// broker was about to send it to a consumer).
	Where string
	// Connection is the connection's name, Flow its tap's connection
	// number (0 when not tapped); Link the link's name.
	Connection string
	Flow       int
	Link       string
	VHost      string
	// Exchange is where it was published to (arrival), Queue where it was
	// delivered from (delivery).
	Exchange, Queue string
	MessageID       string
	// Algorithm is "crc-32" or "adler-32"; Expected the footer's value,
	// Actual the checksum of the bare message.
	Algorithm        string
	Expected, Actual uint32
}
