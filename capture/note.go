package capture

import "time"

// Note kinds: what a source that forwards traffic says about a connection
// besides its bytes.
const (
	// NoteFault is a fault the proxy injected (a delay, a cut, a frame
	// dropped or corrupted).
	NoteFault = "fault"
	// NoteEvent is something the proxy saw happen to a connection: an
	// upstream that refused it, a TLS handshake that failed, a reset.
	NoteEvent = "proxy"
	// NoteBroker is something the embedded broker found in a message it
	// relayed (an AMQP 1.0 checksum that does not match).
	NoteBroker = "broker"
)

// Noter is implemented by handlers that can show a source's notes on a
// connection where they show its units (a "fault" or "proxy" unit, in
// order with the bytes around it).
type Noter interface {
	// Note says msg about flow f, on the direction from A (fromA) or from
	// B, at time t; kind is NoteFault or NoteEvent.
	Note(f *Flow, fromA bool, kind, msg string, t time.Time)
}

// NoteOn calls h.Note when h is a [Noter]; other handlers are not told.
func NoteOn(h Handler, f *Flow, fromA bool, kind, msg string, t time.Time) {
	if n, ok := h.(Noter); ok {
		n.Note(f, fromA, kind, msg, t)
	}
}

// Flusher is implemented by handlers that hold what they are given before
// passing it on (a [relay.Writer] writing to another process). A source
// that feeds its handler from a goroutine of its own ([Decoupled]) calls
// Flush each time it has handed on all it had, so that nothing waits in
// the handler for more traffic to push it out.
//
// [relay.Writer]: https://pkg.go.dev/github.com/wiretap-dev/wiretap/capture/relay#Writer
type Flusher interface {
	Flush()
}
