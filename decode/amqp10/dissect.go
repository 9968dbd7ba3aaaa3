package amqp10

import (
	"encoding/binary"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// dissectFrame builds a frame unit's field tree from its Raw bytes:
//
//	frame          amqp.length, amqp.doff, amqp.type, amqp.channel
//	performative   amqp.performative ("transfer")
//	arguments      amqp.performative.arguments.* (composite fields, nested)
//	payload        transfer payload extent
//	message        a completed message: amqp.message_id, amqp.checksum
//	               (ranges: the bare message summed, the footer's key
//	               and value), bare-message range, sections (see MessageOf)
//
// Offsets are relative to Unit.Raw. Fields of a message reassembled from
// several transfers that lie in earlier frames have no range (Length 0); the
// message subtree says which part of the message this frame carried.
func dissectFrame(u *decode.Unit) []*decode.Field { return dissect(u, false) }

// dissectRedacted is dissectFrame for SASL frames whose secrets were
// overwritten in Raw.
func dissectRedacted(u *decode.Unit) []*decode.Field { return dissect(u, true) }

func dissect(u *decode.Unit, redacted bool) []*decode.Field {
	var f Frame
	if n, err := ParseFrame(u.Raw, &f); n == 0 || err != nil {
		return nil
	}
	typName := "AMQP"
	if f.Type == FrameTypeSASL {
		typName = "SASL"
	} else if f.Type != FrameTypeAMQP {
		typName = "unknown"
	}
	hdr := &decode.Field{Key: "frame", Kind: decode.KindMap, Offset: 0, Length: f.BodyOffset()}
	hdr.Add(&decode.Field{Key: "size", Name: "amqp.length", Value: uint64(f.Size), Offset: 0, Length: 4, Encoding: "uint32"})
	hdr.Add(&decode.Field{Key: "doff", Name: "amqp.doff", Value: uint64(f.DOff), Offset: 4, Length: 1, Encoding: "ubyte",
		Display: strconv.Itoa(int(f.DOff)) + " (" + strconv.Itoa(f.BodyOffset()) + " bytes)"})
	hdr.Add(&decode.Field{Key: "type", Name: "amqp.type", Value: uint64(f.Type), Offset: 5, Length: 1, Encoding: "ubyte",
		Display: typName + " (" + strconv.Itoa(int(f.Type)) + ")"})
	if f.Type == FrameTypeAMQP {
		hdr.Add(&decode.Field{Key: "channel", Name: "amqp.channel", Value: uint64(f.Channel), Offset: 6, Length: 2, Encoding: "uint16"})
	} else {
		hdr.Add(&decode.Field{Key: "type-specific", Value: uint64(binary.BigEndian.Uint16(u.Raw[6:])), Offset: 6, Length: 2, Encoding: "uint16"})
	}
	if len(f.Ext) > 0 {
		hdr.Add(&decode.Field{Key: "extended-header", Name: "amqp.extended_header", Value: append([]byte(nil), f.Ext...), Offset: FrameHeaderLen, Length: len(f.Ext)})
	}
	out := []*decode.Field{hdr}
	if len(f.Body) == 0 || (f.Type != FrameTypeAMQP && f.Type != FrameTypeSASL) {
		return out
	}
	body := f.BodyOffset()
	v, err := Scan(u.Raw, body)
	if err != nil {
		return append(out, &decode.Field{Key: "error", Display: err.Error(), Offset: body, Length: len(f.Body)})
	}
	var c Composite
	perf := &decode.Field{Key: "performative", Name: "amqp.performative", Value: u.Type, Offset: v.Start, Length: v.DescEnd - v.Start}
	if c.Set(u.Raw, v) == nil {
		if d, err := Scan(u.Raw[:v.DescEnd], v.DescStart); err == nil {
			perf.Encoding = "described " + d.Code.Encoding() + " " + descriptorText(c.Descriptor, c.Symbol)
		}
	}
	out = append(out, perf)
	m := &materializer{b: u.Raw}
	args := m.value(v, "arguments", "amqp.performative.arguments", "", 0)
	args.Display = ""
	if redacted {
		redactFields(args)
	}
	out = append(out, args)
	payload := v.End
	if payload < len(u.Raw) {
		out = append(out, &decode.Field{Key: "payload", Name: "amqp.payload", Value: uint64(len(u.Raw) - payload),
			Display: strconv.Itoa(len(u.Raw)-payload) + " bytes", Offset: payload, Length: len(u.Raw) - payload})
	}
	if cm := MessageOf(u).WithSections(); cm != nil {
		out = append(out, messageFields(u, cm))
	}
	return out
}

// redactFields replaces secrets in a SASL frame's tree.
func redactFields(args *decode.Field) {
	for _, k := range args.Kids {
		if k.Name != "amqp.sasl.initResponse" && k.Name != "amqp.sasl.response" {
			continue
		}
		b, _ := k.Value.([]byte)
		// A PLAIN response keeps its user name (authzid NUL authcid NUL).
		if i := indexByte(b, 0); i >= 0 {
			if j := indexByte(b[i+1:], 0); j >= 0 {
				k.Add(&decode.Field{Key: "authzid", Value: string(b[:i])})
				k.Add(&decode.Field{Key: "authcid", Name: "amqp.sasl.user", Value: string(b[i+1 : i+1+j])})
			}
		}
		k.Value, k.Display = decode.Redacted, decode.Redacted
	}
}

// messageFields builds the "message" subtree of a transfer that completes
// a message.
func messageFields(u *decode.Unit, cm *CompletedMessage) *decode.Field {
	msg := &decode.Field{Key: "message", Kind: decode.KindMap}
	m := &materializer{b: cm.Bytes, base: cm.RawOffset, valid: cm.RawFrom}
	m.span(msg, 0, len(cm.Bytes))
	if cm.Frames > 1 {
		msg.Display = "reassembled from " + strconv.Itoa(cm.Frames) + " transfers, " + strconv.Itoa(len(cm.Bytes)) +
			" bytes; this frame carried bytes " + strconv.Itoa(cm.RawFrom) + ".." + strconv.Itoa(len(cm.Bytes)) + " (fields in earlier frames have no range)"
	}
	if u.MessageID() != "" {
		msg.Add(&decode.Field{Key: "message-id", Name: "amqp.message_id", Value: u.MessageID()})
	}
	if ck := u.Checksum(); ck != nil {
		msg.Add(checksumFields(m, cm, ck))
	}
	bare := &decode.Field{Key: "bare-message", Name: "amqp.bare_message", Value: uint64(cm.Message.BareEnd - cm.Message.BareStart),
		Display: strconv.Itoa(cm.Message.BareEnd-cm.Message.BareStart) + " bytes at message offset " + strconv.Itoa(cm.Message.BareStart)}
	m.span(bare, cm.Message.BareStart, cm.Message.BareEnd)
	msg.Add(bare)
	if cm.Frames > 1 {
		msg.Add(&decode.Field{Key: "frames", Value: uint64(cm.Frames)})
	}
	secs := &decode.Field{Key: "sections", Kind: decode.KindMap}
	for i := range cm.Message.Sections {
		sec := &cm.Message.Sections[i]
		f := m.value(sec.Value, sec.Name(), sectionName(sec.Descriptor), "", 0)
		if i == cm.Message.Footer {
			hexChecksumAnnotations(f, cm.Bytes, sec.Value)
		}
		secs.Add(f)
	}
	msg.Add(secs)
	for _, a := range cm.AnnotationFields() {
		msg.Add(a)
	}
	return msg
}

// checksumFields builds the amqp.checksum verdict. Its ranges are those a
// reader checks by hand: the verdict and amqp.checksum.actual cover the
// bare message (the bytes summed), amqp.checksum.algorithm the footer
// annotation's key and amqp.checksum.expected its value. A range that
// does not lie in this frame's part of the message is left out.
func checksumFields(m *materializer, cm *CompletedMessage, ck *decode.Checksum) *decode.Field {
	f := &decode.Field{Key: "checksum", Name: "amqp.checksum", Value: ck.Status.String(), Kind: decode.KindValue}
	if ck.Status == decode.ChecksumAbsent {
		return f
	}
	f.Display = ck.Algorithm + " " + ck.Status.String()
	alg := &decode.Field{Key: "algorithm", Name: "amqp.checksum.algorithm", Value: ck.Algorithm}
	exp := &decode.Field{Key: "expected", Name: "amqp.checksum.expected", Value: uint64(ck.Expected), Display: hex32(ck.Expected)}
	act := &decode.Field{Key: "actual", Name: "amqp.checksum.actual", Value: uint64(ck.Actual), Display: hex32(ck.Actual)}
	// The decoder's verdict comes from this annotation and this bare
	// message (VerifyChecksum); one that does not gets no ranges.
	if a, ok := cm.Message.checksumAnnotation(cm.Bytes); ok && a.alg == ck.Algorithm && a.expected == ck.Expected {
		m.span(f, cm.Message.BareStart, cm.Message.BareEnd)
		m.span(act, cm.Message.BareStart, cm.Message.BareEnd)
		m.span(alg, a.key.Start, a.key.End)
		m.span(exp, a.value.Start, a.value.End)
	}
	f.Add(alg)
	f.Add(exp)
	f.Add(act)
	return f
}

// hexChecksumAnnotations shows the values of the footer's checksum
// annotations in hex, as amqp.checksum shows them; footer is the footer
// section's field tree, v the section in b. Values stay numeric.
func hexChecksumAnnotations(footer *decode.Field, b []byte, v Value) {
	inner := v
	inner.Start, inner.DescStart, inner.DescEnd = v.DescEnd, 0, 0
	if inner.Code != CodeMap8 && inner.Code != CodeMap32 {
		return
	}
	it := inner.Items(b)
	for i := 0; i < len(footer.Kids) && it.Next(); i++ {
		k := it.Value
		if !it.Next() {
			return
		}
		if _, exp, ok := checksumEntry(b, k, it.Value); ok {
			// Kids holds one field per entry, in order, keyed by the
			// entry's key; check it is that entry before relabelling.
			kid := footer.Kids[i]
			if n, _ := kid.Value.(uint64); n == uint64(exp) && kid.Key == string(b[k.Data:k.End]) {
				kid.Display = hex32(exp)
			}
		}
	}
}

// sectionName returns Wireshark's field name for a message section.
func sectionName(code uint64) string {
	switch code {
	case DescriptorHeader:
		return "amqp.header"
	case DescriptorDeliveryAnnotations:
		return "amqp.deliveryAnnotations"
	case DescriptorMessageAnnotations:
		return "amqp.messageAnnotations"
	case DescriptorProperties:
		return "amqp.properties"
	case DescriptorApplicationProperties:
		return "amqp.applicationProperties"
	case DescriptorData:
		return "amqp.data"
	case DescriptorAMQPSequence:
		return "amqp.sequence"
	case DescriptorAMQPValue:
		return "amqp.value"
	case DescriptorFooter:
		return "amqp.footer"
	}
	return ""
}
