package amqp091

import (
	"encoding/binary"
	"reflect"
	"slices"
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

// findField is the package's decode.Finder. It answers for frames and
// protocol headers whose trees this package built: the frame length,
// method class, method, name and non-table arguments, content-header
// fields and non-table properties, and body payloads; frames whose type
// cannot hold the name are answered from the unit type without touching
// their bytes. Table entries, redacted arguments, a completed message's
// summary and frames with errors are left to the tree.
func findField(u *decode.Unit, name string, k int) (f decode.Field, ok, handled bool) {
	pc := reflect.ValueOf(u.Dissect).Pointer()
	if pc != pcFrame && pc != pcMessage && pc != pcProtocolHeader {
		return f, false, false // a tree this finder does not know the shape of
	}
	if !strings.HasPrefix(name, "amqp.") {
		return f, false, true // the trees hold only amqp.* names
	}
	if pc == pcProtocolHeader {
		// Its tree holds the amqp.init.* fields only.
		return f, false, !strings.HasPrefix(name, "amqp.init.")
	}
	ft := unitFrameType(u.Type)
	if !frameMayHold(ft, name) {
		return f, false, true
	}
	raw := u.Raw
	h, hok := PeekFrameHead(raw)
	if !hok || h.Type != ft || u.Err() != "" {
		return f, false, false
	}
	end := min(FrameHeaderSize+int(h.Size), len(raw))
	payload := raw[FrameHeaderSize:end]
	switch {
	case name == "amqp.length":
		f = decode.Field{Key: "length", Name: name, Value: uint64(h.Size), Encoding: "long", Offset: 3, Length: 4}
		return f, k == 0, true
	case strings.HasPrefix(name, argsPrefix):
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
		if len(payload) < 14 {
			return f, false, true // the tree holds an error field only
		}
		off := propertiesOffset(payload)
		w := newPropWalk(payload[off:], binary.BigEndian.Uint16(payload[12:]))
		return findArg(&w, FrameHeaderSize+off, name, len(propsPrefix), k)
	case name == "amqp.payload":
		f = decode.Field{Key: "payload", Name: name, Value: payload, Encoding: "bytes", Offset: FrameHeaderSize, Length: len(payload)}
		return f, k == 0, true
	case strings.HasPrefix(name, "amqp.method."), name == "amqp.method":
		if len(payload) < 4 || k > 0 {
			return f, false, true
		}
		info := LookupMethod(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
		if i := slices.Index(methodFieldNames[:], name); i >= 0 && (info != nil || i < 2) {
			return methodField(payload, FrameHeaderSize, info, i), true, true
		}
		return f, false, true // unknown methods have class and method only
	case strings.HasPrefix(name, "amqp.header."):
		if len(payload) < 14 || k > 0 {
			return f, false, true
		}
		if i := slices.Index(headerFieldNames[:], name); i >= 0 {
			return headerField(payload, FrameHeaderSize, i), true, true
		}
		return f, false, true
	}
	return f, false, false // a completed message's summary, anything else
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

// unitFrameType returns the frame type a frame unit's type says.
func unitFrameType(typ string) FrameType {
	switch typ {
	case UnitContentHeader:
		return FrameHeader
	case UnitContentBody:
		return FrameBody
	case UnitHeartbeat:
		return FrameHeartbeat
	}
	return FrameMethod
}

// frameMayHold reports whether the tree of a frame of type ft can hold
// the field name: method fields only in method frames, content-header
// fields and properties only in header frames, the payload only in body
// frames, a completed message only in header and body frames.
func frameMayHold(ft FrameType, name string) bool {
	switch {
	case strings.HasPrefix(name, propsPrefix):
		return ft == FrameHeader
	case strings.HasPrefix(name, "amqp.method."), name == "amqp.method":
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
