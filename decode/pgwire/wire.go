package pgwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
)

// HeaderLen is the size of a typed message header: Byte1 type, Int32 length.
const HeaderLen = 5

// ReadHeader reads a typed message header from b. length is the message's
// length field (which counts itself but not the type byte); the message
// occupies 1+length bytes. ok is false when b holds fewer than 5 bytes.
func ReadHeader(b []byte) (typ byte, length int64, ok bool) {
	if len(b) < HeaderLen {
		return 0, 0, false
	}
	return b[0], int64(int32(binary.BigEndian.Uint32(b[1:]))), true
}

// ErrMalformed is wrapped by every error a typed message decoder returns:
// errors.Is(err, ErrMalformed) tells a malformed body from other failures.
var ErrMalformed = errors.New("pgsql: malformed message")

// bodyError builds an error naming the message and the lengths involved:
// "pgsql: DataRow: column 3 length 50 exceeds the 12 bytes left at offset 40".
func bodyError(msg, what string, off int) error {
	return &bodyErr{msg: msg, what: what, off: off}
}

type bodyErr struct {
	msg, what string
	off       int
}

func (e *bodyErr) Error() string {
	return "pgsql: " + e.msg + ": " + e.what + " at body offset " + strconv.Itoa(e.off)
}

func (e *bodyErr) Unwrap() error { return ErrMalformed }

// cursor reads a message body with bounds checks. The first failure sticks:
// later reads return zero values and err explains the first problem.
type cursor struct {
	b   []byte
	off int
	msg string // message name for errors
	err error
}

func (c *cursor) fail(what string) {
	if c.err == nil {
		c.err = bodyError(c.msg, what, c.off)
	}
}

func (c *cursor) left() int { return len(c.b) - c.off }

func (c *cursor) need(n int, what string) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || c.left() < n {
		c.fail(what + " needs " + strconv.Itoa(n) + " bytes but " + strconv.Itoa(c.left()) + " are left")
		return false
	}
	return true
}

func (c *cursor) byte1(what string) byte {
	if !c.need(1, what) {
		return 0
	}
	v := c.b[c.off]
	c.off++
	return v
}

func (c *cursor) int16(what string) int16 {
	if !c.need(2, what) {
		return 0
	}
	v := int16(binary.BigEndian.Uint16(c.b[c.off:]))
	c.off += 2
	return v
}

func (c *cursor) int32(what string) int32 {
	if !c.need(4, what) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(c.b[c.off:]))
	c.off += 4
	return v
}

func (c *cursor) int64(what string) int64 {
	if !c.need(8, what) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(c.b[c.off:]))
	c.off += 8
	return v
}

// cstring returns a NUL-terminated string without its terminator.
func (c *cursor) cstring(what string) []byte {
	if c.err != nil {
		return nil
	}
	i := bytes.IndexByte(c.b[c.off:], 0)
	if i < 0 {
		c.fail(what + " is not NUL-terminated (" + strconv.Itoa(c.left()) + " bytes left)")
		return nil
	}
	v := c.b[c.off : c.off+i]
	c.off += i + 1
	return v
}

func (c *cursor) bytes(n int, what string) []byte {
	if !c.need(n, what) {
		return nil
	}
	v := c.b[c.off : c.off+n]
	c.off += n
	return v
}

// rest returns the unread bytes.
func (c *cursor) rest() []byte {
	if c.err != nil {
		return nil
	}
	v := c.b[c.off:]
	c.off = len(c.b)
	return v
}

// end checks that the whole body was consumed.
func (c *cursor) end() error {
	if c.err == nil && c.off != len(c.b) {
		c.fail(strconv.Itoa(c.left()) + " unexpected trailing bytes")
	}
	return c.err
}

// Append helpers for encoders.

// AppendHeader appends a message header with a placeholder length and
// returns the new slice and the position to pass to [FinishMessage].
func AppendHeader(dst []byte, typ byte) ([]byte, int) {
	pos := len(dst)
	return append(dst, typ, 0, 0, 0, 0), pos
}

// FinishMessage writes the length field of the message begun at pos.
func FinishMessage(dst []byte, pos int) []byte {
	binary.BigEndian.PutUint32(dst[pos+1:], uint32(len(dst)-pos-1))
	return dst
}

// AppendMessage appends a whole typed message with the given body.
func AppendMessage(dst []byte, typ byte, body []byte) []byte {
	dst = append(dst, typ)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)+4))
	return append(dst, body...)
}

func appendCString(dst []byte, s string) []byte { return append(append(dst, s...), 0) }

func appendInt16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }

func appendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }
