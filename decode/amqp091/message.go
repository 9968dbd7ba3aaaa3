package amqp091

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// message is a message assembled from its method, content header and body
// frames; it is shown with the unit that completes it. Its slices alias the
// Raw bytes of the units that carried them (which nobody modifies after
// emission) or, for the payloads of small body frames, copies; its body is
// bounded by Options.MaxMessage.
type message struct {
	// method and header are the payloads of the frames that carried the
	// method and the content header (a header-less message has none):
	// slices of those units' Raw, not the units, so that a store may let
	// go of a unit's Raw (spilling it) without the message losing them.
	method, header []byte
	// body is the body kept for display, unless bodyInUnit says it is the
	// payload of the completing unit itself (a body in one frame); nil
	// then, or when it is empty. (A pointer: most messages have none, and
	// Pieces in place would make every message 48 bytes larger.)
	body       *decode.Pieces
	size       uint64
	cut        bool
	bodyInUnit bool
	// bound is what the unit's Dissect, this message's method value
	// m.dissect, points to (see messageBinder).
	bound decode.Bound[message]
}

// messageBinder makes the method values m.dissect in the messages' slab
// rather than one allocation each.
var messageBinder = decode.NewBinder(func(m *message) func(*decode.Unit) []*decode.Field { return m.dissect })

// freezeMessage writes out the message of a completing unit, for a store
// that keeps the unit on disk (decode.RegisterDissectState): a flags byte
// (cut, body in the unit), the body size, then the method, the header and
// (unless in the unit) the body, each with its length.
func freezeMessage(u *decode.Unit, b []byte) ([]byte, bool) {
	m := messageOf(u.Dissect)
	var flags byte
	if m.cut {
		flags |= 1
	}
	if m.bodyInUnit {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, m.size)
	b = decode.AppendBytes(b, m.method)
	b = decode.AppendBytes(b, m.header)
	if !m.bodyInUnit {
		// decode.AppendBytes of the body joined.
		b = binary.AppendUvarint(b, uint64(m.body.Len()))
		b = m.body.AppendTo(b)
	}
	return b, true
}

// thawMessage rebuilds what freezeMessage wrote.
func thawMessage(_ *decode.Unit, b []byte) (func(*decode.Unit) []*decode.Field, error) {
	m := new(message)
	if len(b) < 1 {
		return nil, errFrozenMessage
	}
	m.cut, m.bodyInUnit = b[0]&1 != 0, b[0]&2 != 0
	size, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return nil, errFrozenMessage
	}
	m.size, b = size, b[1+k:]
	var ok bool
	if m.method, b, ok = decode.ReadBytes(b); !ok {
		return nil, errFrozenMessage
	}
	if m.header, b, ok = decode.ReadBytes(b); !ok {
		return nil, errFrozenMessage
	}
	if !m.bodyInUnit {
		var p []byte
		if p, _, ok = decode.ReadBytes(b); !ok {
			return nil, errFrozenMessage
		}
		if len(p) > 0 {
			b := decode.PiecesOf(p)
			m.body = &b
		}
	}
	return m.dissect, nil
}

var errFrozenMessage = errors.New("amqp091: frozen message: malformed")

// framePayload returns the payload of the frame in u.Raw.
func framePayload(u *decode.Unit) []byte {
	if u == nil || len(u.Raw) < FrameOverhead {
		return nil
	}
	return u.Raw[FrameHeaderSize : len(u.Raw)-1]
}

// dissect returns the completing frame's own fields followed by "message".
func (m *message) dissect(u *decode.Unit) []*decode.Field {
	fs := dissectFrame(u)
	mf := &decode.Field{Key: "message", Name: "amqp.message", Kind: decode.KindMap}
	method, header := m.method, m.header
	body, fresh := m.body.Join()
	if m.bodyInUnit {
		body, fresh = framePayload(u), false
	}
	if len(method) >= 4 {
		class, id := binary.BigEndian.Uint16(method), binary.BigEndian.Uint16(method[2:])
		if info := LookupMethod(class, id); info != nil {
			mf.Add(&decode.Field{Key: "method", Name: "amqp.message.method", Value: info.Name})
			args, _ := dissectArgs(newArgWalk(method[4:], info.Args), 0, "")
			mf.Add(&decode.Field{Key: "arguments", Kind: decode.KindMap, Kids: unplace(args)})
		}
	}
	if len(header) >= 14 {
		hf := headerFields(header, 0)
		for _, f := range hf {
			if f.Key == "properties" {
				f.Name = ""
				mf.Add(f)
				unplace(f.Kids)
				f.Offset, f.Length = 0, 0
			}
		}
	}
	mf.Add(&decode.Field{Key: "body-size", Name: "amqp.message.body-size", Value: m.size, Encoding: "longlong"})
	var v any
	switch {
	case !fresh:
		v = textOrBytes(body)
	case printable(body):
		v = unsafe.String(unsafe.SliceData(body), len(body)) // a copy of our own, never written again
	default:
		v = body
	}
	bf := &decode.Field{Key: "body", Name: "amqp.message.body", Value: v, Encoding: "bytes"}
	if m.cut {
		bf.Display = decode.FormatValue(bf.Value) + " (cut to " + uitoa(uint64(len(body))) + " bytes)"
	}
	mf.Add(bf)
	return append(fs, mf)
}

// unplace clears byte ranges (and filter names) of fields that come from
// other units than the one showing them.
func unplace(fs []*decode.Field) []*decode.Field {
	decode.Walk(fs, func(f *decode.Field) bool {
		f.Offset, f.Length, f.Name = 0, 0, ""
		return true
	})
	return fs
}
