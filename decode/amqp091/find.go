package amqp091

import (
	"encoding/binary"
	"reflect"
	"strings"

	"github.com/wiretap-dev/wiretap/decode"
)

// This file answers filter lookups of single fields without building a
// unit's tree (decode.Finder): a filter such as
// amqp.method.arguments.routing_key == "orders" then costs a walk of one
// method's arguments per frame instead of a tree per frame.

func init() { decode.RegisterFinder(decode.ProtoAMQP091, findField) }

// The dissectors this finder stands in for, by code pointer: frames,
// frames completing a message (a method value: one wrapper for every
// message) and the protocol header. Units whose trees are built otherwise
// (malformed bytes, or another package's units) go to the tree.
var (
	pcFrame          = reflect.ValueOf(dissectFrame).Pointer()
	pcMessage        = reflect.ValueOf((*message)(nil).dissect).Pointer()
	pcProtocolHeader = reflect.ValueOf(dissectProtocolHeader).Pointer()
)

const (
	argsPrefix  = "amqp.method.arguments."
	propsPrefix = "amqp.method.properties."
)

// findField is the package's decode.Finder. It answers for well-formed
// frames (not the protocol header, malformed bytes or redacted units) and
// for fields whose occurrences it can tell exactly: the frame length,
// method arguments and content properties that are not tables, and body
// payloads; everything else on a frame that could hold it is left to the
// tree.
func findField(u *decode.Unit, name string, k int) (f decode.Field, ok, handled bool) {
	pc := reflect.ValueOf(u.Dissect).Pointer()
	if pc != pcFrame && pc != pcMessage && pc != pcProtocolHeader {
		return f, false, false // a tree this finder does not know the shape of
	}
	if !strings.HasPrefix(name, "amqp.") {
		return f, false, true // the trees hold only amqp.* names
	}
	raw := u.Raw
	if pc == pcProtocolHeader {
		// Its tree holds the amqp.init.* fields only.
		return f, false, !strings.HasPrefix(name, "amqp.init.")
	}
	// A frame's unit type says its frame type: most frames cannot hold
	// the name, and are answered without touching their bytes.
	if !frameMayHold(u.Type, name) {
		return f, false, true
	}
	h, hok := PeekFrameHead(raw)
	if !hok || !h.Type.Valid() || u.Err() != "" || u.Type == UnitMalformed {
		return f, false, false
	}
	end := min(FrameHeaderSize+int(h.Size), len(raw))
	payload := raw[FrameHeaderSize:end]
	switch {
	case name == "amqp.length":
		f = decode.Field{Key: "length", Name: name, Value: uint64(h.Size), Encoding: "long", Offset: 3, Length: 4}
		return f, k == 0, true
	case strings.HasPrefix(name, argsPrefix):
		if h.Type != FrameMethod {
			return f, false, true
		}
		if len(payload) < 4 {
			return f, false, true // the tree holds an error field only
		}
		info := LookupMethod(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
		if info == nil {
			return f, false, true
		}
		if u.Secret && isSecretArg(info, argKey(info, name[len(argsPrefix):])) {
			return f, false, false // the tree shows it redacted
		}
		w := newArgWalk(payload[4:], info.Args)
		return findArg(&w, FrameHeaderSize+4, name, len(argsPrefix), k)
	case strings.HasPrefix(name, propsPrefix):
		if h.Type != FrameHeader {
			return f, false, true
		}
		if len(payload) < 14 {
			return f, false, true // the tree holds an error field only
		}
		off := propertiesOffset(payload)
		w := newPropWalk(payload[off:], binary.BigEndian.Uint16(payload[12:]))
		return findArg(&w, FrameHeaderSize+off, name, len(propsPrefix), k)
	case name == "amqp.payload":
		if h.Type != FrameBody {
			return f, false, true
		}
		f = decode.Field{Key: "payload", Name: name, Value: payload, Encoding: "bytes", Offset: FrameHeaderSize, Length: len(payload)}
		return f, k == 0, true
	case strings.HasPrefix(name, "amqp.method."), name == "amqp.method":
		if h.Type != FrameMethod || len(payload) < 4 || k > 0 {
			return f, false, true
		}
		info := LookupMethod(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
		for i, n := range methodFieldNames {
			if n == name {
				if info == nil && i >= 2 {
					return f, false, true // unknown methods have class and method only
				}
				return methodField(payload, FrameHeaderSize, info, i), true, true
			}
		}
		return f, false, true
	case strings.HasPrefix(name, "amqp.header."):
		if h.Type != FrameHeader || len(payload) < 14 || k > 0 {
			return f, false, true
		}
		for i, n := range headerFieldNames {
			if n == name {
				return headerField(payload, FrameHeaderSize, i), true, true
			}
		}
		return f, false, true
	case strings.HasPrefix(name, "amqp.message."), name == "amqp.message":
		// Only the frame that completes a message (a header or a body)
		// carries the message's summary.
		return f, false, h.Type != FrameHeader && h.Type != FrameBody
	}
	return f, false, false
}

// argKey returns the spec name of info's argument whose Wireshark name is
// ws, or "".
func argKey(info *MethodInfo, ws string) string {
	for i := range info.Args {
		if info.Args[i].Wireshark == ws {
			return info.Args[i].Name
		}
	}
	return ""
}

// frameMayHold reports whether the tree of a frame whose unit type is typ
// can hold the field name: method arguments only in method frames,
// content-header fields and properties only in header frames, the payload
// only in body frames, a completed message only in header and body frames.
func frameMayHold(typ, name string) bool {
	ft := FrameMethod
	switch typ {
	case UnitContentHeader:
		ft = FrameHeader
	case UnitContentBody:
		ft = FrameBody
	case UnitHeartbeat:
		ft = FrameHeartbeat
	}
	switch {
	case strings.HasPrefix(name, "amqp.method.properties."):
		return ft == FrameHeader
	case strings.HasPrefix(name, "amqp.method."):
		return ft == FrameMethod
	case strings.HasPrefix(name, "amqp.header."):
		return ft == FrameHeader
	case name == "amqp.payload":
		return ft == FrameBody
	case name == "amqp.message" || strings.HasPrefix(name, "amqp.message."):
		return ft == FrameHeader || ft == FrameBody
	}
	return true
}

// findArg finds the argument (or property) named name, whose own name
// starts at name[at:], on w. Tables, and the entries nested in them, are
// left to the tree.
func findArg(w *argWalk, base int, name string, at, k int) (f decode.Field, ok, handled bool) {
	rest := name[at:]
	has := false
	for i := range w.infos {
		a := &w.infos[i]
		if a.Domain == DomainTable && (a.Wireshark == rest ||
			strings.HasPrefix(rest, a.Wireshark) && len(rest) > len(a.Wireshark) && rest[len(a.Wireshark)] == '.') {
			return f, false, false
		}
		has = has || a.Wireshark == rest
	}
	if !has {
		return f, false, true
	}
	w.want = rest
	for {
		i, _, err := w.next(base, &f)
		if i < 0 || err != nil {
			return decode.Field{}, false, true // cut short before it: the tree lacks it too
		}
		if w.infos[i].Wireshark == rest {
			if k == 0 {
				f.Name = name
				return f, true, true
			}
			k--
		}
	}
}
