package amqp091

import (
	"encoding/binary"

	"github.com/wiretap-dev/wiretap/decode"
)

// message is a message assembled from its method, content header and body
// frames; it is shown with the unit that completes it. Its slices alias the
// Raw bytes of the units that carried them (which nobody modifies after
// emission) or, for bodies spread over several frames, a copy bounded by
// Options.MaxMessage.
type message struct {
	// method and header are the payloads of the frames that carried the
	// method and the content header (a header-less message has none):
	// slices of those units' Raw, not the units, so that a store may let
	// go of a unit's Raw (spilling it) without the message losing them.
	method, header []byte
	// body is the body kept for display, unless bodyInUnit says it is the
	// payload of the completing unit itself (a body in one frame).
	body       []byte
	size       uint64
	cut        bool
	bodyInUnit bool
}

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
	method, header, body := m.method, m.header, m.body
	if m.bodyInUnit {
		body = framePayload(u)
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
	bf := &decode.Field{Key: "body", Name: "amqp.message.body", Value: textOrBytes(body), Encoding: "bytes"}
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
