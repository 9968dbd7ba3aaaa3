package amqp091

import (
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// FrameType is a frame's type octet (spec §4.2.3).
type FrameType uint8

// String returns the type as the spec names it ("method", "header", "body",
// "heartbeat") or "unknown(N)".
func (t FrameType) String() string {
	switch t {
	case FrameMethod:
		return "method"
	case FrameHeader:
		return "header"
	case FrameBody:
		return "body"
	case FrameHeartbeat:
		return "heartbeat"
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// Valid reports whether the spec defines the type.
func (t FrameType) Valid() bool {
	return t == FrameMethod || t == FrameHeader || t == FrameBody || t == FrameHeartbeat
}

// Frame layout: type (1), channel (2), size (4), payload (size), frame-end.
const (
	FrameHeaderSize = 7
	// FrameOverhead is the bytes a frame adds around its payload.
	FrameOverhead = FrameHeaderSize + 1
)

// ProtocolHeader is what a 0-9-1 client sends first (spec §4.2.2).
const ProtocolHeader = "AMQP\x00\x00\x09\x01"

// ErrTruncated is returned (wrapped in a [FormatError]) for input that ends
// before a complete structure. It is [decode.ErrTruncated].
var ErrTruncated = decode.ErrTruncated

// ErrShortBuffer is returned by ParseFrame when buf does not yet hold a whole
// frame: read more and call again.
var ErrShortBuffer = errors.New("amqp091: short buffer")

// Frame is one frame. Payload aliases the buffer it was parsed from.
type Frame struct {
	Type    FrameType
	Channel uint16
	Payload []byte
}

// FrameHead is the fixed part of a frame.
type FrameHead struct {
	Type    FrameType
	Channel uint16
	Size    uint32
}

// PeekFrameHead reads a frame header from the front of buf without
// checking it; ok is false when buf holds fewer than 7 bytes.
func PeekFrameHead(buf []byte) (h FrameHead, ok bool) {
	if len(buf) < FrameHeaderSize {
		return h, false
	}
	return FrameHead{
		Type:    FrameType(buf[0]),
		Channel: binary.BigEndian.Uint16(buf[1:]),
		Size:    binary.BigEndian.Uint32(buf[3:]),
	}, true
}

// ParseFrame parses the frame at the front of buf and returns it with the
// number of bytes it used. When buf holds only part of a frame it returns
// [ErrShortBuffer]; maxSize (0 for no limit) bounds the payload so a
// corrupt size is reported before anyone waits for, or allocates, that much.
// It does not check the type octet beyond what is needed to find the frame's
// end; see [FrameType.Valid].
func ParseFrame(buf []byte, maxSize int) (Frame, int, error) {
	h, ok := PeekFrameHead(buf)
	if !ok {
		return Frame{}, 0, ErrShortBuffer
	}
	if maxSize > 0 && uint64(h.Size) > uint64(maxSize) {
		return Frame{}, 0, &FormatError{Op: "frame", Offset: 3,
			Msg: "frame size " + strconv.FormatUint(uint64(h.Size), 10) + " exceeds the limit of " + strconv.Itoa(maxSize)}
	}
	if uint64(len(buf)) < uint64(h.Size)+FrameOverhead {
		return Frame{}, 0, ErrShortBuffer
	}
	end := FrameHeaderSize + int(h.Size)
	if buf[end] != FrameEnd {
		return Frame{}, 0, &FormatError{Op: "frame", Offset: end, Msg: "frame-end octet is 0x" + hexByte(buf[end]) + ", not 0xce"}
	}
	return Frame{Type: h.Type, Channel: h.Channel, Payload: buf[FrameHeaderSize:end:end]}, end + 1, nil
}

// AppendFrame appends a frame with the given payload.
func AppendFrame(dst []byte, t FrameType, channel uint16, payload []byte) []byte {
	dst = append(dst, byte(t), byte(channel>>8), byte(channel))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = append(dst, payload...)
	return append(dst, FrameEnd)
}

// beginFrame appends a frame header with a size to be patched by endFrame.
func beginFrame(dst []byte, t FrameType, channel uint16) ([]byte, int) {
	start := len(dst)
	return append(dst, byte(t), byte(channel>>8), byte(channel), 0, 0, 0, 0), start
}

func endFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start+3:], uint32(len(dst)-start-FrameHeaderSize))
	return append(dst, FrameEnd)
}

// AppendMethodFrame appends a method frame carrying m on channel.
func AppendMethodFrame(dst []byte, channel uint16, m Method) []byte {
	dst, start := beginFrame(dst, FrameMethod, channel)
	dst = m.AppendTo(dst)
	return endFrame(dst, start)
}

// AppendHeaderFrame appends a content header frame.
func AppendHeaderFrame(dst []byte, channel uint16, h *ContentHeader) []byte {
	dst, start := beginFrame(dst, FrameHeader, channel)
	dst = h.AppendTo(dst)
	return endFrame(dst, start)
}

// AppendBodyFrames appends body as body frames of at most frameMax bytes
// each, frame overhead included (the negotiated frame-max; 0 means one
// frame). An empty body appends nothing (spec §4.2.6.2).
func AppendBodyFrames(dst []byte, channel uint16, body []byte, frameMax int) []byte {
	chunk := len(body)
	if frameMax > FrameOverhead {
		chunk = frameMax - FrameOverhead
	}
	for len(body) > 0 {
		n := min(chunk, len(body))
		dst = AppendFrame(dst, FrameBody, channel, body[:n])
		body = body[n:]
	}
	return dst
}

// AppendHeartbeatFrame appends a heartbeat frame (channel 0, no payload).
func AppendHeartbeatFrame(dst []byte) []byte {
	return append(dst, byte(FrameHeartbeat), 0, 0, 0, 0, 0, 0, FrameEnd)
}

// AppendMessage appends a method, its content header and body frames: what
// a publisher or a broker delivering a message writes.
func AppendMessage(dst []byte, channel uint16, m Method, props *Properties, body []byte, frameMax int) []byte {
	dst = AppendMethodFrame(dst, channel, m)
	class, _ := m.IDs()
	h := ContentHeader{ClassID: class, BodySize: uint64(len(body))}
	if props != nil {
		h.Properties = *props
	}
	dst = AppendHeaderFrame(dst, channel, &h)
	return AppendBodyFrames(dst, channel, body, frameMax)
}

// ContentHeader is a content header frame's payload (spec §4.2.6.1).
type ContentHeader struct {
	ClassID    uint16
	Weight     uint16 // always 0
	BodySize   uint64
	Properties Properties
}

// DecodeFromBytes decodes a content header payload in place; byte slices in
// the properties alias payload. Property flag words after the first (bit 0
// set) are accepted only if they flag nothing, since basic has 14
// properties.
func (h *ContentHeader) DecodeFromBytes(payload []byte) error {
	r := reader{b: payload}
	h.ClassID = r.short16()
	h.Weight = r.short16()
	h.BodySize = r.longlong()
	h.Properties.Flags = r.short16()
	for f := h.Properties.Flags; f&1 != 0 && !r.short; {
		at := r.off
		f = r.short16()
		if f&^1 != 0 {
			return &FormatError{Op: "content header", Offset: at, Msg: "property flags beyond the 14 basic properties"}
		}
	}
	if r.short {
		return truncatedAt("content header", len(payload))
	}
	if h.ClassID != ClassBasic {
		return &FormatError{Op: "content header", Offset: 0, Msg: "class " + strconv.Itoa(int(h.ClassID)) + " has no content"}
	}
	h.Properties.decode(&r)
	return r.finish("content header")
}

// AppendTo appends the content header payload.
func (h *ContentHeader) AppendTo(dst []byte) []byte {
	dst = appendShort(dst, h.ClassID)
	dst = appendShort(dst, h.Weight)
	dst = appendLonglong(dst, h.BodySize)
	dst = appendShort(dst, h.Properties.Flags&^1)
	return h.Properties.appendList(dst)
}

// FrameReader reads frames from a stream (a broker's or client's
// connection) through one reusable buffer.
type FrameReader struct {
	r   io.Reader
	buf []byte
	beg int // start of unread bytes
	end int // end of buffered bytes
	// MaxFrameSize bounds a frame's payload; larger frames are an error. 0
	// means [decode.DefaultMaxFrame].
	MaxFrameSize int
	// MaxBuffer, when larger than the buffer, lets it double, up to
	// MaxBuffer bytes, each time a read fills all the room it had (more
	// is waiting in the stream: 4 KiB messages fill 64 KiB with 15), and
	// go back to its first size once readFew reads in a row took less
	// than an eighth of that. 0: the buffer keeps its size.
	MaxBuffer int
	base      int // the buffer's first size
	few       int // reads in a row that took under base/8
}

// readFew is how many small reads in a row shrink a grown buffer back.
const readFew = 64

// DefaultReadBuffer is the size of a [NewFrameReader]'s buffer, and so
// the most one read from the stream takes.
const DefaultReadBuffer = 64 << 10

// NewFrameReader returns a FrameReader on r with a buffer of
// DefaultReadBuffer bytes.
func NewFrameReader(r io.Reader) *FrameReader { return NewFrameReaderSize(r, DefaultReadBuffer) }

// NewFrameReaderSize returns a FrameReader on r whose buffer holds size
// bytes (at least 4 KiB): a larger one reads more frames per call to r.
// The buffer grows for a frame larger than it.
func NewFrameReaderSize(r io.Reader, size int) *FrameReader {
	size = max(size, 4<<10)
	return &FrameReader{r: r, buf: make([]byte, size), base: size}
}

// ReadProtocolHeader reads the 8-byte protocol header a client sends first.
func (fr *FrameReader) ReadProtocolHeader() ([8]byte, error) {
	var h [8]byte
	if err := fr.fill(8); err != nil {
		return h, err
	}
	copy(h[:], fr.buf[fr.beg:])
	fr.beg += 8
	return h, nil
}

// ReadFrame reads the next frame. Its payload is valid until the next call.
func (fr *FrameReader) ReadFrame() (Frame, error) {
	limit := fr.MaxFrameSize
	if limit <= 0 {
		limit = decode.DefaultMaxFrame
	}
	for {
		f, n, err := ParseFrame(fr.buf[fr.beg:fr.end], limit)
		if err == nil {
			fr.beg += n
			return f, nil
		}
		if err != ErrShortBuffer {
			return Frame{}, err
		}
		need := FrameOverhead
		if h, ok := PeekFrameHead(fr.buf[fr.beg:fr.end]); ok {
			need += int(h.Size)
		}
		if err := fr.fill(need); err != nil {
			return Frame{}, err
		}
	}
}

// Buffered returns the bytes read from the stream and not yet returned as
// frames: a broker answers what it has read once no whole frame is left
// (publisher confirms coalesced per batch, say).
func (fr *FrameReader) Buffered() int { return fr.end - fr.beg }

// Pending returns the buffered bytes not yet returned as frames, valid
// until the next read: after a framing error, the frame that caused it
// starts there.
func (fr *FrameReader) Pending() []byte { return fr.buf[fr.beg:fr.end] }

// BufferedFrame reports whether a whole frame is buffered, so the next
// ReadFrame will not wait for the stream.
func (fr *FrameReader) BufferedFrame() bool {
	h, ok := PeekFrameHead(fr.buf[fr.beg:fr.end])
	return ok && uint64(fr.end-fr.beg) >= uint64(h.Size)+FrameOverhead
}

// adapt grows the buffer after a read of m bytes that filled its room,
// and counts the small reads that shrink it back (see MaxBuffer).
func (fr *FrameReader) adapt(m, room int) {
	if m < fr.base/8 {
		fr.few = min(fr.few+1, readFew)
		return
	}
	fr.few = 0
	if m == room && room >= len(fr.buf)/2 && len(fr.buf) < fr.MaxBuffer {
		nb := make([]byte, min(2*len(fr.buf), fr.MaxBuffer))
		fr.end = copy(nb, fr.buf[fr.beg:fr.end])
		fr.beg, fr.buf = 0, nb
	}
}

// fill makes sure n bytes are buffered from beg.
func (fr *FrameReader) fill(n int) error {
	if n > len(fr.buf) {
		nb := make([]byte, n)
		fr.end = copy(nb, fr.buf[fr.beg:fr.end])
		fr.beg, fr.buf = 0, nb
	} else if fr.beg == fr.end {
		// Nothing left to keep: read into the whole buffer, not into
		// what is left of it after the last frame.
		fr.beg, fr.end = 0, 0
		if fr.few >= readFew && len(fr.buf) > fr.base && len(fr.buf) <= fr.MaxBuffer {
			fr.buf, fr.few = make([]byte, fr.base), 0
		}
	} else if fr.beg+n > len(fr.buf) {
		fr.end = copy(fr.buf, fr.buf[fr.beg:fr.end])
		fr.beg = 0
	}
	for fr.end-fr.beg < n {
		room := len(fr.buf) - fr.end
		m, err := fr.r.Read(fr.buf[fr.end:])
		fr.end += m
		if fr.MaxBuffer > 0 {
			fr.adapt(m, room)
		}
		if err != nil {
			if fr.end-fr.beg >= n {
				return nil
			}
			if err == io.EOF && fr.end > fr.beg {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}
