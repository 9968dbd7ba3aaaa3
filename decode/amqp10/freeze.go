package amqp10

import (
	"encoding/binary"
	"errors"

	"github.com/wiretap-dev/wiretap/decode"
)

// Freezing (see decode.RegisterDissect): a store may keep a transfer on
// disk and rebuild it; its CompletedMessage is written out with it and its
// sections located again on the way back.

var extCompleted = decode.RegisterExt(thawCompleted)

func init() {
	decode.RegisterDissect(dissectFrame, dissectRedacted, dissectProtocolHeader)
}

// ExtKind implements decode.FrozenExt: a message whose annotations hold
// values the field codec does not write stays whole. (An identical
// verdict's field holds text and numbers: it is always written.)
func (m *CompletedMessage) ExtKind() int {
	if !decode.CanAppendFields(m.Annotations) {
		return 0
	}
	return extCompleted
}

// AppendExt implements decode.FrozenExt. A message in one transfer is a
// slice of the unit's bytes and is written as its place in them.
func (m *CompletedMessage) AppendExt(u *decode.Unit, b []byte) []byte {
	m.materialize()
	if m.aliasesRaw(u) {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(len(m.Bytes)))
	} else {
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(m.Bytes)))
		b = append(b, m.Bytes...)
	}
	for _, v := range [...]uint64{uint64(m.Frames), uint64(m.Channel), uint64(m.Handle), uint64(m.DeliveryID), uint64(m.RawOffset), uint64(m.RawFrom)} {
		b = binary.AppendUvarint(b, v)
	}
	b = decode.AppendBytes(b, []byte(m.Link))
	b, _ = decode.AppendFields(b, m.AnnotationFields())
	return b
}

// aliasesRaw says whether m.Bytes is u.Raw from RawOffset on.
func (m *CompletedMessage) aliasesRaw(u *decode.Unit) bool {
	if m.RawFrom != 0 || len(m.Bytes) == 0 || m.RawOffset < 0 || m.RawOffset+len(m.Bytes) > len(u.Raw) {
		return false
	}
	return &m.Bytes[0] == &u.Raw[m.RawOffset]
}

var errFrozenMessage = errors.New("amqp10: frozen message: malformed")

func thawCompleted(u *decode.Unit, b []byte) (any, error) {
	if len(b) < 1 {
		return nil, errFrozenMessage
	}
	alias := b[0] == 1
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, errFrozenMessage
	}
	b = b[1+k:]
	m := new(CompletedMessage)
	if alias {
		if m.RawOffset, m.RawFrom = 0, 0; n > uint64(len(u.Raw)) {
			return nil, errFrozenMessage
		}
	} else {
		if n > uint64(len(b)) {
			return nil, errFrozenMessage
		}
		m.Bytes, b = b[:n:n], b[n:]
	}
	var vs [6]uint64
	for i := range vs {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errFrozenMessage
		}
		vs[i], b = v, b[k:]
	}
	m.Frames, m.Channel, m.Handle, m.DeliveryID = int(vs[0]), uint16(vs[1]), uint32(vs[2]), uint32(vs[3])
	m.RawOffset, m.RawFrom = int(vs[4]), int(vs[5])
	if alias {
		if m.RawOffset < 0 || uint64(m.RawOffset)+n > uint64(len(u.Raw)) {
			return nil, errFrozenMessage
		}
		m.Bytes = u.Raw[m.RawOffset : m.RawOffset+int(n) : m.RawOffset+int(n)]
	}
	link, b, ok := decode.ReadBytes(b)
	if !ok {
		return nil, errFrozenMessage
	}
	m.Link = string(link)
	var err error
	if m.Annotations, _, err = decode.ReadFields(b); err != nil {
		return nil, err
	}
	// The sections are located again: a parse error was the decoder's to
	// report, and it is on the unit already.
	_ = ParseMessage(m.Bytes, &m.Message)
	return m, nil
}
