package amqp10

import (
	"encoding/binary"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Decoder is the per-connection AMQP 1.0 decoder. It emits one unit per
// protocol header and per frame, in wire order per direction, and
// reassembles deliveries per session channel and link handle.
type Decoder struct {
	conn *decode.Conn
	opt  decode.Options
	emit decode.Emit
	dirs [2]direction
	// pieced reads a message completed in pieces (see pendingBytes).
	pieced pieced
	// inflight is the bytes kept for deliveries not yet complete, on
	// both directions and every link: bounded by Options.MaxMessage, as
	// AMQP 0-9-1's content bodies are.
	inflight int
	// acct is the connection's part of the memory budget (nil: none).
	acct *decode.Account
	last time.Time
	// Units and their bytes are carved from slabs, as AMQP 0-9-1's are:
	// one allocation serves many small frames.
	carver
	// unitSlab is handed out by index, unitsUsed (see amqp091's).
	unitSlab             []decode.Unit
	unitsUsed, unitsNext int
	msgSlab              []CompletedMessage
	notes                decode.NotesSlab
	// in is the buffer being parsed, and how its units keep their bytes
	// (see Options.StableInput): ref, as slices of it (the caller's
	// stable input); take, the stream's buffer holding exactly one
	// frame, as that buffer (see keep).
	in        []byte
	ref, take bool
}

// Slab sizes: units from 8 doubling to 64 a slab, bytes from 1 KiB
// doubling to 64 KiB (many short connections must not cost a full slab
// each); frames over rawCarved bytes get bytes of their own.
const (
	unitSlabMax = 64
	rawSlabMax  = 64 << 10
	rawCarved   = 2 << 10
)

var _ decode.Decoder = (*Decoder)(nil)

// maxLinks bounds the links named and the deliveries being reassembled
// per connection; maxLinkName bounds a kept link name.
const (
	maxLinks    = 1 << 16
	maxLinkName = 256
)

type linkKey struct {
	channel uint16
	handle  uint32
}

// direction is one direction's state. Channels and handles are chosen by
// the sender of a frame (§2.7.2, §2.6.2), so each direction keeps its own.
type direction struct {
	s decode.Stream
	// opaque is set after a TLS header or an unrecoverable framing error:
	// the rest of the direction is counted, not decoded.
	opaque bool
	// resync is set after a gap: the next frame boundary is searched for.
	resync  bool
	skipped int
	// note is a warning for the next unit of this direction.
	note string
	// sasl is set between a SASL protocol header and the AMQP header that
	// follows a successful outcome.
	sasl       bool
	mechanism  string
	links      map[linkKey]string
	deliveries map[linkKey]*delivery

	// Scratch reused across frames (valid until the next frame).
	frame Frame
	comp  Composite
	msg   Message
	sum   []byte
	// props is scratch for a message's properties, and inner for a
	// disposition's state: clearing a Composite of its own for every
	// message cost more than scanning it.
	props, inner Composite
	// lastLink is the link name of the last transfer's (channel, handle),
	// as links holds it: a connection's transfers mostly follow one
	// another on one link, and the look-up cost a tenth of a small
	// transfer's summary. Attach and detach, which change links, clear it.
	lastLink linkCache
}

// linkCache is one entry of direction.links, remembered, with the name
// as a summary quotes it (appendQuoted): quoting a name of some fifty
// bytes cost a twentieth of a small transfer's decoding.
type linkCache struct {
	key    linkKey
	name   string
	quoted []byte
	found  bool
	valid  bool
}

// link returns the name links has for key, if any, and that name quoted
// (valid until the next call).
func (st *direction) link(key linkKey) (string, []byte, bool) {
	c := &st.lastLink
	if c.valid && c.key == key {
		return c.name, c.quoted, c.found
	}
	name, ok := st.links[key]
	c.key, c.name, c.found, c.valid = key, name, ok, true
	c.quoted = appendQuoted(c.quoted[:0], []byte(name))
	return name, c.quoted, ok
}

// delivery is a message being reassembled from transfers (§2.6.14).
type delivery struct {
	id    uint32
	hasID bool
	tag   []byte
	// body is the payloads of the transfers so far, kept as the frames
	// carried them (large frames' payloads shared with their units): the
	// message is copied once, to its size, when its last transfer comes.
	body     decode.Pieces
	frames   int
	overflow bool
	size     int

	// hold charges body to the memory budget.
	hold decode.Hold
	d    *Decoder
	dir  decode.Dir
}

// Evict implements [decode.Holder]: the budget took back the bytes of
// this delivery, which is then counted but not reassembled.
func (dl *delivery) Evict(_ *decode.Hold, why string) {
	d := dl.d
	n := dl.body.Len()
	d.inflight -= n
	dl.body, dl.overflow = decode.Pieces{}, true
	u := d.unit(dl.dir, nil, d.dirs[dl.dir].s.Pos, d.last)
	u.Type = "warning"
	u.Summary = "memory budget: delivery " + strconv.FormatUint(uint64(dl.id), 10) + " dropped from reassembly"
	u.Warn("amqp1.0: delivery " + strconv.FormatUint(uint64(dl.id), 10) + " (" + strconv.Itoa(n) + " bytes in " + strconv.Itoa(dl.frames) + " frames so far) dropped from reassembly: " + why)
	d.emit(u)
}

// giveUp stops reassembling dl: what it kept is let go of and given back
// to the budget, and the rest of it is counted, not kept.
func (dl *delivery) giveUp() {
	dl.d.inflight -= dl.body.Len()
	dl.hold.Release()
	dl.overflow, dl.body = true, decode.Pieces{}
}

// forget drops a delivery and gives back what it held.
func (d *Decoder) forget(st *direction, key linkKey, dl *delivery) {
	delete(st.deliveries, key)
	d.inflight -= dl.body.Len()
	dl.hold.Release()
}

// forgetAll drops every delivery of a direction.
func (d *Decoder) forgetAll(st *direction) {
	for key, dl := range st.deliveries {
		d.forget(st, key, dl)
	}
	st.deliveries = nil
}

// New is the AMQP 1.0 [decode.Factory].
func New(c *decode.Conn, opt *decode.Options, emit decode.Emit) decode.Decoder {
	d := &Decoder{conn: c, emit: emit}
	if opt != nil {
		d.opt = *opt
	} else {
		d.opt = *decode.DefaultOptions()
	}
	if d.opt.MaxFrame <= 0 {
		d.opt.MaxFrame = decode.DefaultMaxFrame
	}
	if d.opt.MaxBuffered <= 0 {
		d.opt.MaxBuffered = decode.DefaultMaxBuffered
	}
	if d.opt.MaxMessage <= 0 {
		d.opt.MaxMessage = decode.DefaultMaxMessage
	}
	d.acct = d.opt.Budget.NewAccount()
	return d
}

// Feed decodes the next bytes of direction dir.
func (d *Decoder) Feed(dir decode.Dir, data []byte, t time.Time) {
	if d.opt.StableInput {
		// The frame a previous call left incomplete is completed on its
		// own, so that the frames after it are parsed in data itself.
		if head, rest := d.dirs[dir&1].s.Split(data); len(head) > 0 && d.completes(dir&1) {
			d.feed(dir, head, t)
			data = rest
		}
	}
	d.feed(dir, data, t)
}

// completes reports whether the frame buffered for dir is one that
// next takes whole once its bytes are there, as it would have with
// what follows them: the direction is decoded and in sync, and the
// buffered bytes begin a frame header. Otherwise its rest is not fed
// apart.
func (d *Decoder) completes(dir decode.Dir) bool {
	st := &d.dirs[dir]
	b := st.s.Peek()
	if st.opaque || st.resync || len(b) < FrameHeaderLen || (b[0] == 'A' && b[1] == 'M' && b[2] == 'Q' && b[3] == 'P') {
		return false
	}
	size, err := ParseFrameHeader(b, 0)
	return err == nil && uint64(size) <= uint64(d.opt.MaxFrame)
}

func (d *Decoder) feed(dir decode.Dir, data []byte, t time.Time) {
	d.last = t
	st := &d.dirs[dir&1]
	if st.opaque {
		st.s.Pos += int64(len(data))
		return
	}
	stable := d.opt.StableInput && st.s.Buffered() == 0
	buf := st.s.Push(data)
	d.in, d.ref, d.take = buf, stable, d.opt.StableInput && !stable
	defer d.done()
	off := 0
	if st.resync {
		i := findFrame(buf, d.opt.MaxFrame)
		if i < 0 {
			// Keep what could still be the start of a frame header.
			keep := min(len(buf), resyncLookahead-1)
			st.skipped += len(buf) - keep
			st.s.Keep(len(buf)-keep, buf[len(buf)-keep:])
			return
		}
		st.resync = false
		st.note = "resynchronised after a gap: skipped " + strconv.Itoa(st.skipped+i) + " bytes to this frame"
		st.skipped = 0
		off = i
	}
	for off < len(buf) && !st.opaque {
		n := d.next(dir, st, buf[off:], st.s.Pos+int64(off), t)
		if n == 0 {
			break
		}
		off += n
	}
	if st.opaque {
		st.s.Keep(len(buf), nil)
		return
	}
	rest := buf[off:]
	if len(rest) > d.opt.MaxBuffered {
		d.fail(dir, st, rest, st.s.Pos+int64(off), t, "frame larger than the buffer limit ("+strconv.Itoa(d.opt.MaxBuffered)+" bytes): stream not decoded from here")
		st.s.Keep(len(buf), nil)
		return
	}
	if len(rest) > 0 && !st.s.Reserve(d.acct, len(rest)) {
		d.fail(dir, st, rest, st.s.Pos+int64(off), t, "amqp1.0: the memory budget (--max-memory) has no room to buffer "+strconv.Itoa(len(rest))+" bytes of a frame: stream not decoded from here")
		st.s.Keep(len(buf), nil)
		return
	}
	st.s.Keep(off, rest)
}

// next decodes one unit at the front of b and returns the bytes it took, or
// 0 when b holds less than a whole unit.
func (d *Decoder) next(dir decode.Dir, st *direction, b []byte, pos int64, t time.Time) int {
	if len(b) >= 4 && b[0] == 'A' && b[1] == 'M' && b[2] == 'Q' && b[3] == 'P' {
		if len(b) < ProtocolHeaderLen {
			return 0
		}
		d.protocolHeader(dir, st, b[:ProtocolHeaderLen], pos, t)
		return ProtocolHeaderLen
	}
	if len(b) < FrameHeaderLen {
		return 0
	}
	size, err := ParseFrameHeader(b, pos)
	if err != nil {
		d.fail(dir, st, b, pos, t, err.Error()+": stream not decoded from here")
		return 0
	}
	if uint64(size) > uint64(d.opt.MaxFrame) {
		d.fail(dir, st, b, pos, t, "amqp1.0: frame size "+strconv.FormatUint(uint64(size), 10)+" exceeds the limit of "+strconv.Itoa(d.opt.MaxFrame)+" at offset "+strconv.FormatInt(pos, 10)+": stream not decoded from here")
		return 0
	}
	if uint64(len(b)) < uint64(size) {
		st.s.Want(int(size))
		return 0
	}
	d.frame(dir, st, b[:size], pos, t)
	return int(size)
}

// fail emits an error unit covering what is left and stops decoding the
// direction.
func (d *Decoder) fail(dir decode.Dir, st *direction, b []byte, pos int64, t time.Time, msg string) {
	n := len(b)
	if n > 64 {
		n = 64
	}
	u := d.unit(dir, b[:n], pos, t)
	u.Len = len(b)
	u.Type = "error"
	u.Summary = "undecodable bytes"
	u.SetErr(msg)
	st.opaque = true
	d.forgetAll(st) // never completed now
	d.emit(u)
}

func (d *Decoder) unit(dir decode.Dir, raw []byte, pos int64, t time.Time) *decode.Unit {
	return d.unitOf(dir, raw, pos, t, false)
}

// done ends the parse of the buffer feed gave the units.
func (d *Decoder) done() { d.in, d.ref, d.take = nil, false, false }

// unitOf is unit, its bytes copied when own is set (they are to be
// redacted in place) or when they are not stable: see the cases below.
func (d *Decoder) unitOf(dir decode.Dir, raw []byte, pos int64, t time.Time, own bool) *decode.Unit {
	var u *decode.Unit
	var cp []byte
	switch {
	case d.ref && !own:
		// Stable input: the unit keeps the caller's bytes, and so holds
		// no memory of the decoder's: from the slab.
		u, cp = d.slabUnit(), raw[:len(raw):len(raw)]
	case d.take && !own && len(raw) > rawCarved && len(raw) == len(d.in) && &raw[0] == &d.in[0]:
		// The frame a Feed completed on its own, gathered in the
		// stream's buffer, which is never used again: taken over.
		u, cp = d.opt.Arena.Unit(), d.dirs[dir&1].s.Take()
	case len(raw) > rawCarved:
		// A unit with bytes of its own is allocated alone (or from the
		// arena, which keeps it no longer than it is in use), so that it
		// never holds a neighbour's large bytes in memory, nor they it.
		u, cp = d.opt.Arena.Unit(), append([]byte(nil), raw...)
	default:
		u = d.slabUnit()
		if cap(d.raw)-len(d.raw) < len(raw) {
			d.rawNext = min(max(2*d.rawNext, 1<<10), rawSlabMax)
			d.raw = decode.MakeNoZero(max(d.rawNext, len(raw)))
		}
		n := len(d.raw)
		d.raw = append(d.raw, raw...)
		cp = d.raw[n:len(d.raw):len(d.raw)]
	}
	// The unit is fresh (zero): fields are set one by one rather than a
	// whole Unit copied.
	u.Conn, u.Dir, u.Proto = d.conn, dir, decode.ProtoAMQP10
	u.Offset, u.Len, u.Raw = pos, len(raw), cp
	u.SetTime(t)
	return u
}

// slabUnit returns a fresh unit carved from the unit slab.
func (d *Decoder) slabUnit() *decode.Unit {
	if d.opt.Arena != nil {
		// Nothing points to an AMQP 1.0 unit once emitted.
		return d.opt.Arena.Unit()
	}
	if d.unitsUsed == len(d.unitSlab) {
		d.unitsNext = min(max(2*d.unitsNext, 8), d.opt.Slab(unitSlabMax))
		d.unitSlab, d.unitsUsed = make([]decode.Unit, d.unitsNext), 0
	}
	u := &d.unitSlab[d.unitsUsed]
	d.unitsUsed++
	return u
}

func (d *Decoder) protocolHeader(dir decode.Dir, st *direction, b []byte, pos int64, t time.Time) {
	h, _ := ParseProtocolHeader(b)
	u := d.unit(dir, b, pos, t)
	u.Type = "protocol-header"
	u.Summary = "protocol-header " + h.Name() + " " + h.Version()
	if h.Major != 1 || h.Minor != 0 {
		u.Warn("protocol version " + h.Version() + " is not AMQP 1.0")
	}
	switch h.ID {
	case ProtocolSASL:
		st.sasl = true
	case ProtocolAMQP:
		st.sasl = false
	case ProtocolTLS:
		u.Summary += " (the rest of this direction is TLS)"
		st.opaque = true
		d.forgetAll(st)
	default:
		u.Warn("unknown protocol id " + strconv.Itoa(int(h.ID)))
	}
	u.Dissect = dissectProtocolHeader
	d.emit(u)
}

func dissectProtocolHeader(u *decode.Unit) []*decode.Field {
	h, ok := ParseProtocolHeader(u.Raw)
	if !ok {
		return nil
	}
	return []*decode.Field{
		{Key: "protocol", Name: "amqp.protocol", Value: "AMQP", Offset: 0, Length: 4},
		{Key: "protocol-id", Name: "amqp.protocol-id", Value: uint64(h.ID), Display: h.Name() + " (" + strconv.Itoa(int(h.ID)) + ")", Offset: 4, Length: 1},
		{Key: "version", Name: "amqp.version", Value: h.Version(), Offset: 5, Length: 3},
	}
}

// frame decodes one whole frame.
func (d *Decoder) frame(dir decode.Dir, st *direction, b []byte, pos int64, t time.Time) {
	f := &st.frame
	ParseFrame(b, f)
	// SASL frames carry the credentials redactInit and the
	// sasl-response overwrite in Raw: theirs is a copy.
	u := d.unitOf(dir, b, pos, t, len(b) > 5 && b[5] == FrameTypeSASL)
	u.Channel, u.HasChannel = f.Channel, f.Type == FrameTypeAMQP
	if st.note != "" {
		u.Warn(st.note)
		st.note = ""
	}
	u.Dissect = dissectFrame
	if len(f.Body) == 0 {
		u.Type = "empty"
		u.Summary = "empty (heartbeat)"
		if f.Type != FrameTypeAMQP {
			u.Warn("empty frame of type " + strconv.Itoa(int(f.Type)))
		}
		d.emit(u)
		return
	}
	if f.Type != FrameTypeAMQP && f.Type != FrameTypeSASL {
		u.Type = "frame-type-" + strconv.Itoa(int(f.Type))
		u.Summary = "frame of unknown type " + strconv.Itoa(int(f.Type))
		u.Warn("unknown frame type " + strconv.Itoa(int(f.Type)) + ": body not decoded")
		d.emit(u)
		return
	}
	body := f.BodyOffset()
	c := &st.comp
	if err := ScanComposite(u.Raw, body, c); err != nil {
		u.Type = "error"
		u.Summary = "undecodable frame body"
		u.SetErr(err.Error())
		d.emit(u)
		return
	}
	t0 := describedOf(c.Descriptor)
	if t0 == nil || t0.provides != "frame" && t0.provides != "sasl-frame" {
		u.Type = "unknown-performative"
		u.Summary = "unknown performative " + descriptorText(c.Descriptor, c.Symbol)
		u.Warn("frame body is not a performative")
		d.emit(u)
		return
	}
	u.Type = performativeType(c.Descriptor)
	if (f.Type == FrameTypeSASL) != (t0.provides == "sasl-frame") {
		u.Warn(u.Type + " in a frame of type " + strconv.Itoa(int(f.Type)))
		if f.Type != FrameTypeSASL && (c.Descriptor == DescriptorSASLInit || c.Descriptor == DescriptorSASLResponse) {
			// Its secret is redacted in place (summarise), and only a
			// SASL frame's unit was given bytes of its own: not the
			// caller's, which may be read-only (a mapped capture).
			u.Raw = append([]byte(nil), u.Raw...)
		}
	}
	d.summarise(dir, st, u, c, u.Raw[c.List.End:])
	d.emit(u)
}

// performativeType returns the unit type INTERFACES.md names.
func performativeType(code uint64) string {
	switch code {
	case DescriptorSASLMechanisms:
		return "sasl.mechanisms"
	case DescriptorSASLInit:
		return "sasl.init"
	case DescriptorSASLChallenge:
		return "sasl.challenge"
	case DescriptorSASLResponse:
		return "sasl.response"
	case DescriptorSASLOutcome:
		return "sasl.outcome"
	}
	return describedOf(code).name
}

// summarise builds the summary line of a performative and runs its side
// effects (link names, transfer reassembly, secret redaction).
func (d *Decoder) summarise(dir decode.Dir, st *direction, u *decode.Unit, c *Composite, payload []byte) {
	b := u.Raw
	s := append(st.sum[:0], u.Type...)
	if u.HasChannel {
		s = append(s, " ch="...)
		s = strconv.AppendUint(s, uint64(u.Channel), 10)
	}
	switch c.Descriptor {
	case DescriptorOpen:
		s = appendStr(s, " container-id=", b, c, 0)
		s = appendStr(s, " hostname=", b, c, 1)
		s = appendUint(s, " max-frame-size=", b, c, 2)
		s = appendUint(s, " channel-max=", b, c, 3)
		s = appendUint(s, " idle-time-out=", b, c, 4)
	case DescriptorBegin:
		s = appendUint(s, " remote-channel=", b, c, 0)
		s = appendUint(s, " next-outgoing-id=", b, c, 1)
		s = appendUint(s, " incoming-window=", b, c, 2)
		s = appendUint(s, " outgoing-window=", b, c, 3)
		s = appendUint(s, " handle-max=", b, c, 4)
	case DescriptorAttach:
		name, _ := c.Bytes(b, 0)
		h, _ := c.Uint(b, 1)
		if st.links == nil {
			st.links = make(map[linkKey]string)
		}
		// Bounded on any input: at most maxLinks names of at most
		// maxLinkName bytes per connection (a name only labels summaries).
		if k := (linkKey{u.Channel, uint32(h)}); len(st.links) < maxLinks || st.links[k] != "" {
			st.links[k] = string(name[:min(len(name), maxLinkName)])
			st.lastLink.valid = false
		}
		s = appendStr(s, " name=", b, c, 0)
		s = appendUint(s, " handle=", b, c, 1)
		s = appendRole(s, b, c, 2)
		s = appendTerminus(s, " source=", b, c, 5)
		s = appendTerminus(s, " target=", b, c, 6)
	case DescriptorFlow:
		s = appendUint(s, " handle=", b, c, 4)
		s = appendUint(s, " delivery-count=", b, c, 5)
		s = appendUint(s, " link-credit=", b, c, 6)
		s = appendUint(s, " next-incoming-id=", b, c, 0)
		s = appendUint(s, " incoming-window=", b, c, 1)
		s = appendUint(s, " next-outgoing-id=", b, c, 2)
		s = appendUint(s, " outgoing-window=", b, c, 3)
		s = appendBool(s, " drain", b, c, 8)
		s = appendBool(s, " echo", b, c, 9)
	case DescriptorTransfer:
		s = d.transfer(dir, st, u, c, payload, s)
	case DescriptorDisposition:
		s = appendRole(s, b, c, 0)
		s = appendUint(s, " first=", b, c, 1)
		s = appendUint(s, " last=", b, c, 2)
		s = appendBool(s, " settled", b, c, 3)
		s = appendState(s, b, c, 4, &st.inner)
	case DescriptorDetach:
		s = appendUint(s, " handle=", b, c, 0)
		if h, ok := c.Uint(b, 0); ok {
			if name, ok := st.links[linkKey{u.Channel, uint32(h)}]; ok {
				s = append(s, " link="...)
				s = strconv.AppendQuote(s, name)
				if cl, _ := c.Bool(b, 1); cl {
					delete(st.links, linkKey{u.Channel, uint32(h)})
					st.lastLink.valid = false
				}
			}
		}
		s = appendBool(s, " closed", b, c, 1)
		s = appendError(s, b, c, 2, u)
	case DescriptorEnd:
		s = appendError(s, b, c, 0, u)
	case DescriptorClose:
		s = appendError(s, b, c, 0, u)
	case DescriptorSASLMechanisms:
		if f, ok := c.Field(0); ok {
			s = append(s, ' ')
			s = appendSymbols(s, b, f)
		}
	case DescriptorSASLInit:
		mech, _ := c.Bytes(b, 0)
		st.mechanism = string(mech)
		s = append(s, ' ')
		s = append(s, mech...)
		s = d.redactInit(s, u, c)
		s = appendStr(s, " hostname=", b, c, 2)
	case DescriptorSASLChallenge:
		if ch, ok := c.Bytes(b, 0); ok {
			s = append(s, " challenge "...)
			s = strconv.AppendInt(s, int64(len(ch)), 10)
			s = append(s, " B"...)
		}
	case DescriptorSASLResponse:
		u.Secret = true
		if f, ok := c.Field(0); ok {
			s = append(s, " response "...)
			s = strconv.AppendInt(s, int64(f.End-f.Data), 10)
			s = append(s, " B"...)
			if !d.opt.ShowSecrets {
				redact(u.Raw[f.Data:f.End])
				u.Dissect = dissectRedacted
			}
		}
	case DescriptorSASLOutcome:
		if code, ok := c.Uint(b, 0); ok {
			s = append(s, " code="...)
			if n, ok := choices["sasl-code"][strconv.FormatUint(code, 10)]; ok {
				s = append(s, n...)
			} else {
				s = strconv.AppendUint(s, code, 10)
			}
		}
	}
	if len(payload) > 0 && c.Descriptor != DescriptorTransfer {
		u.Warn(u.Type + " carries " + strconv.Itoa(len(payload)) + " bytes after its performative")
	}
	st.sum = s
	u.Summary = d.text(s)
}

func redact(b []byte) {
	for i := range b {
		b[i] = '*'
	}
}

// redactInit hides the secret part of a sasl-init initial response: for
// PLAIN (RFC 4616: authzid NUL authcid NUL passwd) the password, so the
// user name stays visible; for mechanisms whose initial response carries
// no secret (ANONYMOUS, EXTERNAL) nothing; for others all of it.
func (d *Decoder) redactInit(s []byte, u *decode.Unit, c *Composite) []byte {
	f, ok := c.Field(1)
	if !ok {
		return s
	}
	resp, _ := f.Bytes(u.Raw)
	switch d.dirs[u.Dir&1].mechanism {
	case "ANONYMOUS", "EXTERNAL":
		return s
	case "PLAIN":
		u.Secret = true
		first := indexByte(resp, 0)
		second := -1
		if first >= 0 {
			second = indexByte(resp[first+1:], 0)
		}
		if second >= 0 {
			user := resp[first+1 : first+1+second]
			s = append(s, " user="...)
			s = strconv.AppendQuote(s, string(user))
			if !d.opt.ShowSecrets {
				redact(resp[first+1+second+1:])
				u.Dissect = dissectRedacted
			}
			return s
		}
	}
	u.Secret = true
	if !d.opt.ShowSecrets {
		redact(resp)
		u.Dissect = dissectRedacted
	}
	return s
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// appendRole appends " role=sender" or " role=receiver" for the role
// field i of c, nothing when it is absent.
func appendRole(s, b []byte, c *Composite, i int) []byte {
	r, ok := c.Bool(b, i)
	switch {
	case !ok:
		return s
	case r:
		return append(s, " role=receiver"...)
	}
	return append(s, " role=sender"...)
}

func appendUint(s []byte, label string, b []byte, c *Composite, i int) []byte {
	if v, ok := c.Uint(b, i); ok {
		s = append(s, label...)
		s = strconv.AppendUint(s, v, 10)
	}
	return s
}

func appendStr(s []byte, label string, b []byte, c *Composite, i int) []byte {
	if v, ok := c.Bytes(b, i); ok {
		s = append(s, label...)
		s = appendQuoted(s, v)
	}
	return s
}

func appendBool(s []byte, label string, b []byte, c *Composite, i int) []byte {
	if v, ok := c.Bool(b, i); ok && v {
		s = append(s, label...)
	}
	return s
}

// appendQuoted quotes v like strconv.Quote, bounding what a summary shows.
func appendQuoted(s, v []byte) []byte {
	if len(v) <= 80 && plainASCII(v) {
		// What strconv.Quote writes for printable ASCII without quotes or
		// backslashes: the bytes themselves (a link name on every transfer).
		s = append(s, '"')
		s = append(s, v...)
		return append(s, '"')
	}
	if len(v) > 80 {
		s = strconv.AppendQuote(s, string(v[:80]))
		return append(s, "..."...)
	}
	return strconv.AppendQuote(s, string(v))
}

// plainASCII reports whether v is printable ASCII with no '"' or '\\'.
// It looks at eight bytes at a time (a link name or message-id on every
// transfer): in a word x, a byte below 0x20 borrows through
// (x-0x20)&^x, a byte above 0x7e carries into its top bit through
// (x+1)|x, and a byte equal to c leaves a zero byte in x^c, found as
// the first.
func plainASCII(v []byte) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := binary.LittleEndian.Uint64(v[i:])
		q, b := x^(lo*'"'), x^(lo*'\\')
		if (x-lo*0x20)&^x&hi|((x+lo)|x)&hi|(q-lo)&^q&hi|(b-lo)&^b&hi != 0 {
			return false
		}
	}
	for _, c := range v[i:] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func appendSymbols(s []byte, b []byte, f *Value) []byte {
	if f.Code == CodeArray8 || f.Code == CodeArray32 {
		it := f.Items(b)
		for i := 0; it.Next(); i++ {
			if i > 0 {
				s = append(s, ',')
			}
			if v, ok := it.Value.Bytes(b); ok {
				s = append(s, v...)
			}
		}
		return s
	}
	if v, ok := f.Bytes(b); ok {
		s = append(s, v...)
	}
	return s
}

// appendTerminus shows a source's or target's address.
func appendTerminus(s []byte, label string, b []byte, c *Composite, i int) []byte {
	f, ok := c.Field(i)
	if !ok {
		return s
	}
	var t Composite
	if t.setTo(b, f) != nil {
		return s
	}
	s = append(s, label...)
	if a, ok := t.Bytes(b, 0); ok {
		return appendQuoted(s, a)
	}
	if dyn, _ := t.Bool(b, 4); dyn {
		return append(s, "dynamic"...)
	}
	return append(s, "null"...)
}

// appendState shows a delivery state (§3.4) and its error, if any, with
// st as scratch.
func appendState(s []byte, b []byte, c *Composite, i int, st *Composite) []byte {
	f, ok := c.Field(i)
	if !ok {
		return s
	}
	if st.setTo(b, f) != nil {
		return s
	}
	s = append(s, ' ')
	if t := describedOf(st.Descriptor); t != nil {
		s = append(s, t.name...)
	} else {
		s = append(s, descriptorText(st.Descriptor, st.Symbol)...)
	}
	switch st.Descriptor {
	case DescriptorRejected:
		s = appendErrorValue(s, b, st, 0)
	case DescriptorReceived:
		s = appendUint(s, " section-number=", b, st, 0)
		s = appendUint(s, " section-offset=", b, st, 1)
	case DescriptorModified:
		s = appendBool(s, " delivery-failed", b, st, 0)
		s = appendBool(s, " undeliverable-here", b, st, 1)
	}
	return s
}

func appendError(s []byte, b []byte, c *Composite, i int, u *decode.Unit) []byte {
	n := len(s)
	s = appendErrorValue(s, b, c, i)
	if len(s) > n {
		u.Warn("peer reported an error:" + string(s[n:]))
	}
	return s
}

func appendErrorValue(s []byte, b []byte, c *Composite, i int) []byte {
	f, ok := c.Field(i)
	if !ok {
		return s
	}
	var e Composite
	if e.setTo(b, f) != nil {
		return s
	}
	if cond, ok := e.Bytes(b, 0); ok {
		s = append(s, " error="...)
		s = append(s, cond...)
	}
	s = appendStr(s, " description=", b, &e, 1)
	return s
}

// Gap drops what is buffered and any delivery in reassembly for dir. AMQP
// 1.0 frames carry no marker to resynchronise on, so decoding resumes at
// the first plausible frame header (see findFrame); the first unit after
// it carries a warning saying how many bytes were skipped.
func (d *Decoder) Gap(dir decode.Dir, n int, t time.Time) {
	st := &d.dirs[dir&1]
	if st.opaque {
		return
	}
	u := d.unit(dir, nil, st.s.Pos, t)
	u.Type = "error"
	u.Summary = "gap in the capture"
	msg := "amqp1.0: capture lost "
	if n >= 0 {
		msg += strconv.Itoa(n) + " bytes"
	} else {
		msg += "bytes"
	}
	if k := len(st.deliveries); k > 0 {
		msg += "; " + strconv.Itoa(k) + " deliveries in reassembly dropped"
	}
	u.SetErr(msg + ": decoding resumes at the next frame header found")
	d.forgetAll(st)
	skip := int64(n)
	if skip < 0 {
		skip = 0
	}
	st.s.Reset(skip)
	st.resync = true
	d.emit(u)
}

// resyncLookahead is how many bytes findFrame needs to judge a candidate:
// the frame header and a performative's descriptor (00 53 xx).
const resyncLookahead = FrameHeaderLen + 3

// findFrame returns the offset of the first plausible frame or protocol
// header in b, or -1. AMQP 1.0 has no sync marker; a candidate must have
// doff 2, type AMQP or SASL, a size within limits and, unless empty, a
// body starting with the smallulong descriptor of a performative of its
// frame type.
func findFrame(b []byte, maxFrame int) int {
	for i := 0; i+resyncLookahead <= len(b); i++ {
		c := b[i:]
		if c[0] == 'A' && c[1] == 'M' && c[2] == 'Q' && c[3] == 'P' && c[5] == 1 && c[6] == 0 && c[7] == 0 {
			return i
		}
		size := uint64(c[0])<<24 | uint64(c[1])<<16 | uint64(c[2])<<8 | uint64(c[3])
		if c[4] != 2 || c[5] > FrameTypeSASL || size < FrameHeaderLen || size > uint64(maxFrame) {
			continue
		}
		if size == FrameHeaderLen {
			if c[5] == FrameTypeAMQP {
				return i
			}
			continue
		}
		if c[8] != byte(CodeDescribed) || c[9] != byte(CodeSmallUlong) {
			continue
		}
		p := uint64(c[10])
		if (c[5] == FrameTypeAMQP && p >= DescriptorOpen && p <= DescriptorClose) ||
			(c[5] == FrameTypeSASL && p >= DescriptorSASLMechanisms && p <= DescriptorSASLOutcome) {
			return i
		}
	}
	return -1
}

// End reports a partial frame left in dir's buffer and deliveries that
// never completed.
func (d *Decoder) End(dir decode.Dir, t time.Time) {
	st := &d.dirs[dir&1]
	if st.opaque {
		return
	}
	if n := st.s.Buffered(); n > 0 {
		tail := st.s.Push(nil)
		u := d.unit(dir, tail, st.s.Pos, t)
		u.Type = "error"
		u.Summary = "truncated frame"
		msg := "amqp1.0: stream ended inside a frame: " + strconv.Itoa(n) + " bytes"
		if n >= FrameHeaderLen {
			if size, err := ParseFrameHeader(tail, st.s.Pos); err == nil {
				msg += " of " + strconv.FormatUint(uint64(size), 10)
			}
		}
		u.SetErr(msg + " at offset " + strconv.FormatInt(st.s.Pos, 10))
		st.s.Keep(n, nil)
		d.emit(u)
	}
	if k := len(st.deliveries); k > 0 && d.conn != nil {
		d.conn.Notes = append(d.conn.Notes, "amqp1.0: "+strconv.Itoa(k)+" deliveries from "+dirName(dir)+
			" were still in reassembly when the stream ended")
	}
	d.forgetAll(st)
	st.opaque = true
}

func dirName(dir decode.Dir) string {
	if dir == decode.DirB {
		return "the server"
	}
	return "the client"
}
