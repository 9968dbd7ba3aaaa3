package amqp10

import (
	"encoding/binary"
	"strconv"
)

// Frame types (§2.3.1: 0x00 AMQP, §5.3.1: 0x01 SASL).
const (
	FrameTypeAMQP uint8 = 0x00
	FrameTypeSASL uint8 = 0x01
)

// Protocol ids of the protocol header (§2.2, §5.1, §5.2).
const (
	ProtocolAMQP uint8 = 0
	ProtocolTLS  uint8 = 2
	ProtocolSASL uint8 = 3
)

// ProtocolHeaderLen is the length of "AMQP" id major minor revision.
const ProtocolHeaderLen = 8

// FrameHeaderLen is the length of the fixed frame header (§2.3.1).
const FrameHeaderLen = 8

// MinMaxFrameSize is the smallest max-frame-size a peer may announce
// (transport.xml MIN-MAX-FRAME-SIZE).
const MinMaxFrameSize = 512

// ProtocolHeader is the 8-byte header that opens a connection or a
// security layer: "AMQP" followed by the protocol id and version (§2.2).
type ProtocolHeader struct {
	ID                     uint8
	Major, Minor, Revision uint8
}

// ParseProtocolHeader reads a protocol header; ok is false when b does not
// start with "AMQP" or holds fewer than 8 bytes.
func ParseProtocolHeader(b []byte) (h ProtocolHeader, ok bool) {
	if len(b) < ProtocolHeaderLen || b[0] != 'A' || b[1] != 'M' || b[2] != 'Q' || b[3] != 'P' {
		return h, false
	}
	return ProtocolHeader{ID: b[4], Major: b[5], Minor: b[6], Revision: b[7]}, true
}

// Name returns "AMQP", "TLS" or "SASL" for the id, else "id N".
func (h ProtocolHeader) Name() string {
	switch h.ID {
	case ProtocolAMQP:
		return "AMQP"
	case ProtocolTLS:
		return "TLS"
	case ProtocolSASL:
		return "SASL"
	}
	return "id " + strconv.Itoa(int(h.ID))
}

// Version returns "1.0.0".
func (h ProtocolHeader) Version() string {
	return strconv.Itoa(int(h.Major)) + "." + strconv.Itoa(int(h.Minor)) + "." + strconv.Itoa(int(h.Revision))
}

// Frame is one frame located in a buffer (§2.3.1):
//
//	+0 SIZE (4) +4 DOFF (1) +5 TYPE (1) +6 channel or type-specific (2)
//	+8 extended header (DOFF*4-8 bytes) then the frame body.
type Frame struct {
	Size    uint32
	DOff    uint8
	Type    uint8
	Channel uint16
	// Ext is the extended header; Body is the performative and payload.
	// Both are sub-slices of the parsed buffer.
	Ext  []byte
	Body []byte
}

// BodyOffset is the offset of the frame body from the frame's start.
func (f *Frame) BodyOffset() int { return int(f.DOff) * 4 }

// ParseFrameHeader validates the fixed frame header at the start of b.
// It needs 8 bytes and returns the frame size; an error means the stream
// cannot be framed from here.
func ParseFrameHeader(b []byte, off int64) (size uint32, err error) {
	if len(b) < FrameHeaderLen {
		return 0, truncAt(int(off), "frame header")
	}
	size = binary.BigEndian.Uint32(b)
	doff := b[4]
	if size < FrameHeaderLen {
		return 0, errAt(int(off), "invalid frame: size "+strconv.FormatUint(uint64(size), 10)+" is smaller than the frame header")
	}
	if doff < 2 {
		return 0, errAt(int(off)+4, "invalid frame: doff "+strconv.Itoa(int(doff))+" is less than 2")
	}
	if uint32(doff)*4 > size {
		return 0, errAt(int(off)+4, "invalid frame: doff "+strconv.Itoa(int(doff))+" points past the frame's size "+strconv.FormatUint(uint64(size), 10))
	}
	return size, nil
}

// ParseFrame splits the frame at the start of b. It returns the number of
// bytes the frame takes; n is 0 (with a nil error) when b holds less than a
// whole frame. It does not allocate.
func ParseFrame(b []byte, f *Frame) (n int, err error) {
	if len(b) < FrameHeaderLen {
		return 0, nil
	}
	size, err := ParseFrameHeader(b, 0)
	if err != nil {
		return 0, err
	}
	if uint64(len(b)) < uint64(size) {
		return 0, nil
	}
	*f = Frame{
		Size:    size,
		DOff:    b[4],
		Type:    b[5],
		Channel: binary.BigEndian.Uint16(b[6:]),
		Ext:     b[FrameHeaderLen : int(b[4])*4],
		Body:    b[int(b[4])*4 : size],
	}
	return int(size), nil
}

// AppendFrame appends a frame with the given type, channel and body
// (performative plus payload) to dst, with doff 2 (no extended header).
func AppendFrame(dst []byte, typ uint8, channel uint16, body ...[]byte) []byte {
	size := FrameHeaderLen
	for _, p := range body {
		size += len(p)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = append(dst, 2, typ)
	dst = binary.BigEndian.AppendUint16(dst, channel)
	for _, p := range body {
		dst = append(dst, p...)
	}
	return dst
}
