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
	method, header, body []byte
	size                 uint64
	cut                  bool
}

// dissect returns the completing frame's own fields followed by "message".
func (m *message) dissect(u *decode.Unit) []*decode.Field {
	fs := dissectFrame(u)
	mf := &decode.Field{Key: "message", Name: "amqp.message", Kind: decode.KindMap}
	if len(m.method) >= 4 {
		class, id := binary.BigEndian.Uint16(m.method), binary.BigEndian.Uint16(m.method[2:])
		if info := LookupMethod(class, id); info != nil {
			mf.Add(&decode.Field{Key: "method", Name: "amqp.message.method", Value: info.Name})
			args, _ := dissectArgs(m.method[4:], 0, info.Args, "", nil)
			mf.Add(&decode.Field{Key: "arguments", Kind: decode.KindMap, Kids: unplace(args)})
		}
	}
	if len(m.header) >= 14 {
		hf := headerFields(m.header, 0)
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
	body := &decode.Field{Key: "body", Name: "amqp.message.body", Value: textOrBytes(m.body), Encoding: "bytes"}
	if m.cut {
		body.Display = decode.FormatValue(body.Value) + " (cut to " + uitoa(uint64(len(m.body))) + " bytes)"
	}
	mf.Add(body)
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
