package amqp10

import (
	"strconv"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// Transfer is a view of a transfer performative (§2.7.5) read in place.
type Transfer struct {
	Handle           uint32
	DeliveryID       uint32
	HasDeliveryID    bool
	DeliveryTag      []byte
	MessageFormat    uint32
	HasMessageFormat bool
	Settled          bool
	HasSettled       bool
	More             bool
	Resume           bool
	Aborted          bool
	Batchable        bool
}

// Field indexes of transfer (transport.xml).
const (
	transferHandle = iota
	transferDeliveryID
	transferDeliveryTag
	transferMessageFormat
	transferSettled
	transferMore
	transferRcvSettleMode
	transferState
	transferResume
	transferAborted
	transferBatchable
)

// Decode reads a transfer from the located composite c of buffer b. The
// delivery tag is a sub-slice of b.
func (t *Transfer) Decode(b []byte, c *Composite) error {
	if c.Descriptor != DescriptorTransfer {
		return errAt(c.List.Start, "not a transfer")
	}
	h, ok := c.Uint(b, transferHandle)
	if !ok {
		return errAt(c.List.Start, "transfer without a handle")
	}
	*t = Transfer{Handle: uint32(h)}
	if v, ok := c.Uint(b, transferDeliveryID); ok {
		t.DeliveryID, t.HasDeliveryID = uint32(v), true
	}
	t.DeliveryTag, _ = c.Bytes(b, transferDeliveryTag)
	if v, ok := c.Uint(b, transferMessageFormat); ok {
		t.MessageFormat, t.HasMessageFormat = uint32(v), true
	}
	t.Settled, t.HasSettled = c.Bool(b, transferSettled)
	t.More, _ = c.Bool(b, transferMore)
	t.Resume, _ = c.Bool(b, transferResume)
	t.Aborted, _ = c.Bool(b, transferAborted)
	t.Batchable, _ = c.Bool(b, transferBatchable)
	return nil
}

// CompletedMessage is the message a transfer completes; the decoder puts it
// in the unit's Ext and [MessageOf] reads it back.
type CompletedMessage struct {
	// Bytes is the whole message as received (header to footer). For a
	// single-frame delivery it aliases the unit's Raw.
	Bytes []byte
	// Message locates its sections and its bare message in Bytes. Where
	// field trees are seldom wanted (decode.Options.FieldsSeldom) it
	// keeps no Sections: WithSections has them.
	Message Message
	// Frames is the number of transfers that carried it.
	Frames int
	// Link is the link's name from its attach, when seen.
	Link       string
	Channel    uint16
	Handle     uint32
	DeliveryID uint32
	// RawOffset maps message offsets onto Unit.Raw: the byte at
	// Bytes[i] is Raw[i+RawOffset] for i >= RawFrom (the part of the
	// message this frame carried).
	RawOffset, RawFrom int
	// Annotations are extra fields shown in the message subtree, such as
	// the verdict of an [Immutability] check that found the message
	// modified. AnnotationFields adds those kept in a compact form.
	Annotations []*decode.Field
	// identical is where the message entered a broker, when an
	// [Immutability] check found it left unchanged (the zero value: no
	// such verdict). Its field is built when asked for: most messages are
	// identical, and most are never shown as a tree.
	identical sentAt
	// own is the length of the allocation Bytes is part of when the
	// decoder made it for this message alone (a reassembled message, or
	// the Raw of a large frame's unit), which nothing else shares; 0 when
	// Bytes may be part of something larger (a slab of small units, a
	// store's frozen bytes).
	own int
	// lazy says Message.Sections was not kept (see WithSections).
	lazy bool
	// pending holds a message's pieces until Bytes is first wanted (see
	// pendingBytes); nil when Bytes was set at once.
	pending *pendingBytes
	// late says the message is left to a [Completer]: not parsed yet,
	// its unit's message-id, checksum and summary not made.
	late bool
}

// AnnotationFields returns the fields added to the message's subtree
// after it was decoded: Annotations, and the verdict of an
// [Immutability] check that found it identical, built anew at each call.
// The caller must not change them.
func (m *CompletedMessage) AnnotationFields() []*decode.Field {
	if !m.identical.paired {
		return m.Annotations
	}
	fs := make([]*decode.Field, 0, len(m.Annotations)+1)
	fs = append(fs, m.Annotations...)
	return append(fs, verdictField(m.identical, "identical", identicalDisplay(m.identical), -1))
}

// hasAnnotations says whether AnnotationFields has any.
func (m *CompletedMessage) hasAnnotations() bool {
	return len(m.Annotations) > 0 || m.identical.paired
}

// WithSections returns m when it keeps its sections, else a copy of m
// whose Message has them, parsed again from Bytes: where field trees are
// seldom wanted (decode.Options.FieldsSeldom, `read` in text), a decoder
// does not copy every message's sections out of its scratch space for
// the few units whose fields are (a filter on a section's field). Nil
// for nil.
func (m *CompletedMessage) WithSections() *CompletedMessage {
	if m == nil || !m.lazy {
		return m
	}
	c := *m
	c.Message = Message{}
	ParseMessage(c.Bytes, &c.Message)
	c.lazy = false
	return &c
}

// Bare returns the bare message's exact bytes.
func (m *CompletedMessage) Bare() []byte { return m.Message.Bare(m.Bytes) }

// MessageOf returns the message a transfer unit completes, or nil. A
// message its decoder left to a [Completer] (Options.LateSummaries) is
// parsed only once the Completer has had its unit: read it after that,
// as pipeline.Config.Staged requires.
func MessageOf(u *decode.Unit) *CompletedMessage {
	m, _ := u.Ext().(*CompletedMessage)
	if m != nil && m.pending != nil {
		m.materialize()
	}
	return m
}

func (d *Decoder) transfer(dir decode.Dir, st *direction, u *decode.Unit, c *Composite, payload []byte, s []byte) []byte {
	var t Transfer
	if err := t.Decode(u.Raw, c); err != nil {
		u.SetErr(err.Error())
		return s
	}
	key := linkKey{u.Channel, t.Handle}
	link, quoted, hasLink := st.link(key)
	s = append(s, " handle="...)
	s = strconv.AppendUint(s, uint64(t.Handle), 10)
	if hasLink {
		s = append(s, " link="...)
		s = append(s, quoted...)
	}
	dl := st.deliveries[key]
	if t.HasDeliveryID {
		s = append(s, " delivery-id="...)
		s = strconv.AppendUint(s, uint64(t.DeliveryID), 10)
	} else if dl != nil && dl.hasID {
		s = append(s, " delivery-id=("...)
		s = strconv.AppendUint(s, uint64(dl.id), 10)
		s = append(s, ')')
	}
	if t.HasSettled && t.Settled {
		s = append(s, " settled"...)
	}
	if t.More {
		s = append(s, " more"...)
	}
	if t.Resume {
		s = append(s, " resume"...)
	}
	if dl != nil && t.HasDeliveryID && dl.hasID && dl.id != t.DeliveryID {
		u.Warn("delivery-id " + strconv.FormatUint(uint64(t.DeliveryID), 10) + " differs from " +
			strconv.FormatUint(uint64(dl.id), 10) + " of the delivery in progress on this link")
	}
	if t.Aborted {
		s = append(s, " aborted"...)
		if dl != nil {
			s = append(s, " (delivery of "...)
			s = strconv.AppendInt(s, int64(dl.frames+1), 10)
			s = append(s, " frames dropped)"...)
			d.forget(st, key, dl)
		}
		return s
	}
	payloadOff := len(u.Raw) - len(payload)
	if dl == nil && !t.More {
		// Single-frame delivery: the message is in Raw, nothing to copy.
		if !t.HasDeliveryID {
			u.Warn("first transfer of a delivery without delivery-id")
		}
		if len(payload) == 0 {
			u.Warn("transfer without payload")
			return s
		}
		cm := d.completed()
		cm.Bytes, cm.Frames, cm.RawOffset = u.Raw[payloadOff:], 1, payloadOff
		if len(u.Raw) > rawCarved {
			// Bytes of its own (see unit), or stable input, which the
			// immutability tracker may keep as well.
			cm.own = len(u.Raw)
		}
		return d.complete(st, u, cm, &t, link, s)
	}
	if dl == nil {
		if len(st.deliveries) >= maxLinks {
			u.Warn("more than " + strconv.Itoa(maxLinks) + " deliveries in progress on this connection: not reassembled")
			return s
		}
		dl = &delivery{id: t.DeliveryID, hasID: t.HasDeliveryID, tag: append([]byte(nil), t.DeliveryTag...), d: d, dir: dir}
		if !t.HasDeliveryID {
			u.Warn("first transfer of a delivery without delivery-id")
		}
		if st.deliveries == nil {
			st.deliveries = make(map[linkKey]*delivery)
		}
		st.deliveries[key] = dl
	}
	dl.frames++
	dl.size += len(payload)
	if !dl.overflow && dl.size > d.opt.MaxMessage {
		dl.giveUp()
		u.Warn("message exceeds the limit of " + strconv.Itoa(d.opt.MaxMessage) + " bytes: not reassembled")
	}
	if t.More {
		switch {
		case dl.overflow:
		case d.inflight+len(payload) > d.opt.MaxMessage:
			dl.giveUp()
			u.Warn("deliveries in progress on this connection exceed " + strconv.Itoa(d.opt.MaxMessage) + " bytes in all (max message size): this one is not reassembled")
		case d.ref:
			// Stable input, kept as it is: no memory of the decoder's.
			dl.body.AddRef(payload)
			d.inflight += len(payload)
		case !dl.body.Add(payload, len(u.Raw) > rawCarved, d.opt.MaxMessage-dl.body.Len(), &dl.hold, d.acct, dl):
			// A frame with bytes of its own (see unit) is kept as them;
			// smaller ones are copied in chunks.
			dl.giveUp()
			u.Warn("the memory budget (--max-memory) has no room for this delivery: not reassembled")
		default:
			d.inflight += len(payload)
		}
		s = append(s, " (part "...)
		s = strconv.AppendInt(s, int64(dl.frames), 10)
		s = append(s, ", "...)
		s = strconv.AppendInt(s, int64(dl.size), 10)
		s = append(s, " B so far)"...)
		return s
	}
	d.forget(st, key, dl)
	if dl.overflow {
		s = append(s, " (message of "...)
		s = strconv.AppendInt(s, int64(dl.size), 10)
		s = append(s, " B in "...)
		s = strconv.AppendInt(s, int64(dl.frames), 10)
		s = append(s, " frames, not reassembled)"...)
		return s
	}
	from := dl.body.Len()
	cm := d.completed()
	if list := dl.body.Slices(); d.opt.FieldsSeldom && len(list) > 0 && !dl.body.Copied() && (d.ref || len(u.Raw) > rawCarved) {
		// Joined on first use, not here (see pendingBytes). Only pieces
		// that hold nothing else (stable input, units' own bytes): the
		// chunks small frames are copied into are up to twice what they
		// hold, and a small frame's bytes share a slab, which the
		// immutability tracker, keeping the pieces, would keep too.
		cm.pending = &pendingBytes{pieces: append(list[:len(list):len(list)], u.Raw[payloadOff:])}
		cm.Frames, cm.RawOffset, cm.RawFrom, cm.own = dl.frames, payloadOff-from, from, from+len(payload)
	} else {
		msg := dl.body.Concat(payload)
		cm.Bytes, cm.Frames, cm.RawOffset, cm.RawFrom, cm.own = msg, dl.frames, payloadOff-from, from, len(msg)
	}
	if !t.HasDeliveryID {
		t.DeliveryID = dl.id
	}
	return d.complete(st, u, cm, &t, link, s)
}

// complete locates the sections of a reassembled message, verifies its
// checksum and attaches it to the unit. With Options.LateSummaries, a
// message whose bytes are at hand (not pieces) is attached unparsed, and
// a [Completer] does the rest on the pipeline's stage.
func (d *Decoder) complete(st *direction, u *decode.Unit, cm *CompletedMessage, t *Transfer, link string, s []byte) []byte {
	cm.Link, cm.Channel, cm.Handle, cm.DeliveryID = link, u.Channel, t.Handle, t.DeliveryID
	if t.HasMessageFormat && t.MessageFormat != 0 {
		s = append(s, " message-format="...)
		s = strconv.AppendUint(s, uint64(t.MessageFormat), 10)
		u.Warn("message-format " + strconv.FormatUint(uint64(t.MessageFormat), 10) + " is not the standard format 0: sections decoded anyway")
	}
	// Nearly every completing unit gets notes (its message, its id).
	d.notes.Give(u, d.opt.Slab(messageSlab))
	u.SetExt(cm)
	if cm.pending == nil && d.opt.LateSummaries {
		cm.late = true
		return s
	}
	var err error
	size := len(cm.Bytes)
	pc := &d.pieced
	m := &st.msg
	if cm.pending != nil {
		pc.reset(cm.pending.pieces)
		size = pc.n
		var ok bool
		if ok, err = parseMessagePieces(pc, m); !ok {
			// The pieces do not say it alone: joined now, as always before.
			cm.materialize()
			cm.pending = nil
			err = ParseMessage(cm.Bytes, m)
		}
	} else {
		err = ParseMessage(cm.Bytes, m)
	}
	var id string
	ck := d.checksum(d.opt.Slab(checksumSlab))
	if cm.pending != nil {
		id = d.messageIDPieces(st, pc, m)
		*ck = verifyChecksumPieces(pc, m)
	} else {
		// Its text carved from the slab: no allocation of its own.
		id = m.messageID(cm.Bytes, &st.props, d.text)
		*ck = m.VerifyChecksum(cm.Bytes)
	}
	pc.pieces = nil // the message's, not to be kept here
	return d.annotate(u, cm, m, id, size, err, ck, d.opt.FieldsSeldom, s)
}

// annotate gives u what its completed message cm says: m, the message
// parsed (err, the parse's error), id its message-id, size its length,
// ck its checksum verdict; s is u's summary so far, returned with them.
// Where field trees are seldom wanted (seldom), cm keeps no sections.
func (k *carver) annotate(u *decode.Unit, cm *CompletedMessage, m *Message, id string, size int, err error, ck *decode.Checksum, seldom bool, s []byte) []byte {
	cm.Message = *m
	if seldom {
		cm.Message.Sections, cm.lazy = nil, true
	} else {
		cm.Message.Sections = k.sections(m.Sections)
	}
	u.SetMessageID(id)
	if id != "" {
		s = append(s, " message-id="...)
		s = appendQuoted(s, []byte(id))
	}
	if m.BodyKind != "" {
		s = append(s, " body="...)
		s = append(s, m.BodyKind...)
		if m.BodySections > 1 {
			s = append(s, '*')
			s = strconv.AppendInt(s, int64(m.BodySections), 10)
		}
		s = append(s, ' ')
		s = strconv.AppendInt(s, int64(m.BodyBytes), 10)
		s = append(s, " B"...)
	}
	if cm.Frames > 1 {
		s = append(s, " ("...)
		s = strconv.AppendInt(s, int64(cm.Frames), 10)
		s = append(s, " frames, "...)
		s = strconv.AppendInt(s, int64(size), 10)
		s = append(s, " B)"...)
	}
	if err != nil {
		u.Warn("message: " + err.Error())
	}
	u.SetChecksum(ck)
	s = append(s, ' ')
	if ck.Status == decode.ChecksumAbsent {
		s = append(s, "checksum absent"...)
	} else {
		s = append(s, ck.Algorithm...)
		s = append(s, ' ')
		s = append(s, ck.Status.String()...)
		if ck.Status == decode.ChecksumMismatch {
			s = append(s, " (expected "...)
			s = appendHex32(s, ck.Expected)
			s = append(s, ", actual "...)
			s = appendHex32(s, ck.Actual)
			s = append(s, ')')
			u.Warn(ck.Algorithm + " checksum mismatch: footer says " + string(appendHex32(nil, ck.Expected)) +
				", bare message has " + string(appendHex32(nil, ck.Actual)))
		}
	}
	return s
}

func appendHex32(s []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	s = append(s, '0', 'x')
	for i := 28; i >= 0; i -= 4 {
		s = append(s, digits[v>>uint(i)&15])
	}
	return s
}

// hex32 returns appendHex32's rendering of v as a string (one allocation).
func hex32(v uint32) string {
	var buf [10]byte
	return string(appendHex32(buf[:0], v))
}

// Completed messages, a copy of their sections and a checksum verdict
// each are carved from slabs (messageSlab messages, sectionSlab sections,
// checksumSlab verdicts), as units are, rather than allocated one by one.
const (
	messageSlab  = 32
	sectionSlab  = 256
	checksumSlab = 64
)

// completed returns a zero message that the unit will own.
func (d *Decoder) completed() *CompletedMessage {
	return decode.Carve(&d.msgSlab, d.opt.Slab(messageSlab))
}

// carver carves what units keep from slabs: bytes and texts, message
// sections, checksum verdicts. A decoder has one; so has a [Completer],
// for what it finishes on another goroutine.
type carver struct {
	raw     []byte
	rawNext int
	secSlab []Section
	ckSlab  []decode.Checksum
}

// sections returns a copy of secs that the message owns.
func (k *carver) sections(secs []Section) []Section {
	n := len(secs)
	if n == 0 {
		return nil
	}
	if n > sectionSlab/4 {
		return append([]Section(nil), secs...)
	}
	if len(k.secSlab) < n {
		k.secSlab = make([]Section, sectionSlab)
	}
	out := k.secSlab[:n:n]
	k.secSlab = k.secSlab[n:]
	copy(out, secs)
	return out
}

// checksum returns a zero verdict that the message owns, from slabs of
// slab verdicts.
func (k *carver) checksum(slab int) *decode.Checksum {
	return decode.Carve(&k.ckSlab, slab)
}

// text returns a copy of s carved from the bytes slab, as a unit's Raw
// is: a summary costs no allocation of its own. The slab is only ever
// appended to, so the string never changes.
func (k *carver) text(s []byte) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > rawCarved {
		return string(s)
	}
	if cap(k.raw)-len(k.raw) < len(s) {
		k.rawNext = min(max(2*k.rawNext, 1<<10), rawSlabMax)
		k.raw = decode.MakeNoZero(max(k.rawNext, len(s)))
	}
	n := len(k.raw)
	k.raw = append(k.raw, s...)
	return unsafe.String(&k.raw[n], len(s))
}
