package decode

import (
	"errors"
	"strconv"
	"time"
)

// Decoder is a stateful, per-connection protocol decoder. The pipeline feeds
// it in-order bytes of one direction at a time; it emits units through the
// Emit function it was built with, in wire order per direction, before the
// call that completed them returns (with Options.Defer, possibly later,
// in the same order: see [Deferred]).
//
// A Decoder never blocks (but for work of its own it left running on
// another goroutine under Options.Defer), never panics on input, and
// bounds what it buffers (see [Options]). Data passed to Feed is only
// valid during the call: a decoder that needs bytes later copies them,
// unless the input is stable (Options.StableInput). Either way, a decoder
// never writes to it.
type Decoder interface {
	// Feed gives the decoder the next bytes of direction dir; t is the
	// capture time of the packet that carried them.
	Feed(dir Dir, data []byte, t time.Time)
	// Gap tells the decoder that n bytes of direction dir were lost (n < 0
	// when unknown). The decoder drops any partial unit and resynchronises.
	Gap(dir Dir, n int, t time.Time)
	// End tells the decoder that direction dir is finished; a partial unit
	// left in its buffer is emitted with an error.
	End(dir Dir, t time.Time)
}

// Emit receives the units a decoder produces. The unit is handed over: the
// decoder does not touch it again.
type Emit func(*Unit)

// Factory builds a Decoder for one connection.
type Factory func(c *Conn, opt *Options, emit Emit) Decoder

// Options are the limits and switches every decoder honours.
type Options struct {
	// ShowSecrets disables redaction of credentials.
	ShowSecrets bool
	// MaxFrame is the largest frame or message accepted (bytes); larger
	// claims are reported as errors without allocating what they claim.
	MaxFrame int
	// MaxBuffered bounds the bytes buffered per direction while waiting for
	// the rest of a unit.
	MaxBuffered int
	// MaxMessage bounds a reassembled message (AMQP 1.0 transfers, AMQP
	// 0-9-1 content bodies kept for display).
	MaxMessage int
	// MaxDecompressed bounds the bytes one compressed container may inflate
	// to (decompression-bomb guard).
	MaxDecompressed int
	// Budget, when set, is the memory budget every decoder charges its
	// buffered and in-progress state against (--max-memory); each
	// decoder opens one [Account] for its connection.
	Budget *Budget
	// PgCompression lets the PostgreSQL decoder know compression was
	// negotiated out of band; normally it is detected from the stream.
	PgCompression bool
	// StableInput says that every byte given to Feed stays valid and
	// unchanged for the life of the run (a capture file mapped in
	// memory: capture.Input.Stable): a unit whose bytes lie wholly in
	// what one Feed call was given then keeps them as they are, in its
	// Raw, its message and what is assembled from it, instead of
	// copying them. Such bytes are not decoder memory and are not
	// charged to the Budget. Bytes a decoder makes itself (a frame
	// gathered across Feed calls, a decompressed message) and a unit
	// whose Raw is redacted in place (credentials) are its own, as
	// without it. The units then refer to the caller's input, which
	// must outlive them: a sink that keeps units for longer (a store
	// that freezes them) leaves it unset.
	StableInput bool
	// LateSummaries has decoders leave to be made later the summaries
	// that depend on nothing but a unit's own bytes (AMQP 0-9-1 methods
	// outside the connection class: their summary is then
	// amqp091.SummaryLater; AMQP 1.0 messages whose bytes are at hand,
	// not read in their pieces, then parsed, checked and summarised by
	// an amqp10.Completer), so
	// that they can be made on another goroutine than the decoding one
	// (pipeline.Config.Staged does, and fills them in before a unit
	// reaches anything that reads it).
	LateSummaries bool
	// Transient says the caller lets go of every unit soon after its
	// sink has it (`read`, which prints a unit and forgets it), rather
	// than keeping some for long (the TUI's store). Decoders then
	// allocate units and their messages in larger slabs: fewer, larger
	// allocations, where a unit kept for long would keep its whole slab
	// in memory with it.
	Transient bool
	// Arena, when set, recycles units and what decoders attach to them
	// once the caller releases them (see Arena): `read` sets it, and
	// releases each batch of units once it is written. Decoders take
	// from it only units that nothing points to once emitted.
	Arena *Arena
	// FieldsSeldom says the caller renders few units' field trees (`read`
	// in text: only a filter asks for them), so that a decoder may keep
	// less of what only a field tree uses and rebuild it when asked: an
	// AMQP 1.0 message then keeps no copy of its sections (see
	// amqp10.CompletedMessage.WithSections). Where every unit's tree is
	// rendered (JSON), rebuilding costs more than the copy.
	FieldsSeldom bool
	// Defer, when set, lets decoders leave a unit's work to finish
	// later, on another goroutine meanwhile, in the order Deferred
	// keeps (see there): `read` sets it for a capture file. The
	// caller must settle it before it numbers or hands on a unit and
	// at the end of input (the pipeline does). Nil: every call
	// finishes its work before it returns.
	Defer *Deferred
}

// transientScale is how many times larger a transient caller's slabs
// grow (Options.Transient): with `read`'s fanout, 14% less CPU at eight.
const transientScale = 8

// Slab returns the largest slab of things a decoder whose own largest is
// n allocates for this caller: n, or transientScale times n for a
// transient one.
func (o *Options) Slab(n int) int {
	if o.Transient {
		return n * transientScale
	}
	return n
}

// Default limits.
const (
	DefaultMaxFrame        = 256 << 20
	DefaultMaxBuffered     = 64 << 20
	DefaultMaxMessage      = 128 << 20
	DefaultMaxDecompressed = 64 << 20
)

// DefaultOptions returns the limits used when a flag does not say otherwise.
func DefaultOptions() *Options {
	return &Options{
		MaxFrame:        DefaultMaxFrame,
		MaxBuffered:     DefaultMaxBuffered,
		MaxMessage:      DefaultMaxMessage,
		MaxDecompressed: DefaultMaxDecompressed,
	}
}

// Redacted is what replaces a secret in every output unless secrets are shown.
const Redacted = "<redacted>"

// ErrTruncated reports input that ended before a complete structure.
var ErrTruncated = errors.New("truncated")

// OffsetError is a decode error at a byte offset of a unit or stream.
type OffsetError struct {
	Proto  string // "amqp0-9-1", ...
	Offset int64
	Msg    string
}

func (e *OffsetError) Error() string {
	return e.Proto + ": " + e.Msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}
