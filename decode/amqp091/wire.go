package amqp091

import (
	"encoding/binary"
	"math"
	"strconv"
)

// FormatError reports malformed or truncated AMQP data. Offset is relative
// to the start of what was being decoded (a frame, a method's arguments, a
// table); Op names it ("basic.publish", "content header", "table").
type FormatError struct {
	Op     string
	Offset int
	Msg    string
}

func (e *FormatError) Error() string {
	return "amqp091: " + e.Op + ": " + e.Msg + " at offset " + strconv.Itoa(e.Offset)
}

// Is lets errors.Is(err, ErrTruncated) find truncation.
func (e *FormatError) Is(target error) bool {
	return target == ErrTruncated && e.Msg == msgTruncated
}

const msgTruncated = "truncated"

func truncatedAt(op string, off int) error {
	return &FormatError{Op: op, Offset: off, Msg: msgTruncated}
}

// reader reads AMQP primitive domains (spec §4.2.5) from a byte slice. A read
// past the end sets short and returns a zero value, so generated decoders
// check once at the end. Slices it returns alias b and are capped so an
// append by the caller cannot overwrite what follows.
type reader struct {
	b     []byte
	off   int
	short bool
	bad   string // first format problem other than truncation
	badAt int
}

func (r *reader) octet() uint8 {
	if r.off+1 > len(r.b) {
		r.short = true
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) short16() uint16 {
	if r.off+2 > len(r.b) {
		r.short = true
		return 0
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) long32() uint32 {
	if r.off+4 > len(r.b) {
		r.short = true
		return 0
	}
	v := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) longlong() uint64 {
	if r.off+8 > len(r.b) {
		r.short = true
		return 0
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) take(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.short = true
		r.off = len(r.b)
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

func (r *reader) shortstr() []byte {
	if r.off+1 > len(r.b) {
		r.short = true
		return nil
	}
	n := int(r.b[r.off])
	r.off++
	return r.take(n)
}

func (r *reader) longstr() []byte {
	if r.off+4 > len(r.b) {
		r.short = true
		return nil
	}
	n := binary.BigEndian.Uint32(r.b[r.off:])
	r.off += 4
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.short = true
		r.off = len(r.b)
		return nil
	}
	return r.take(int(n))
}

func (r *reader) table() Table {
	at := r.off
	b := r.longstr()
	if b == nil || r.short {
		return nil
	}
	if err := validateFields(b, true, 0); err != nil && r.bad == "" {
		r.bad, r.badAt = err.Msg, at+4+err.Offset
	}
	return Table(b)
}

// finish reports what went wrong, if anything, for the structure op.
func (r *reader) finish(op string) error {
	if r.short {
		return truncatedAt(op, len(r.b))
	}
	if r.bad != "" {
		return &FormatError{Op: op, Offset: r.badAt, Msg: r.bad}
	}
	if r.off != len(r.b) {
		return &FormatError{Op: op, Offset: r.off, Msg: strconv.Itoa(len(r.b)-r.off) + " trailing bytes"}
	}
	return nil
}

func appendOctet(dst []byte, v uint8) []byte { return append(dst, v) }

func appendShort(dst []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(dst, v) }

func appendLong(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

func appendLonglong(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// appendShortstr appends s, cut to 255 bytes (the domain's limit).
func appendShortstr(dst []byte, s []byte) []byte {
	if len(s) > math.MaxUint8 {
		s = s[:math.MaxUint8]
	}
	dst = append(dst, byte(len(s)))
	return append(dst, s...)
}

func appendLongstr(dst []byte, s []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

func appendTable(dst []byte, t Table) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(t)))
	return append(dst, t...)
}

func boolBit(b bool, bit uint8) uint8 {
	if b {
		return bit
	}
	return 0
}
