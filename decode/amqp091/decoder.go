package amqp091

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// Unit types this decoder emits besides "class.method" (Unit.Type).
const (
	UnitProtocolHeader = "protocol-header"
	UnitContentHeader  = "content-header"
	UnitContentBody    = "content-body"
	UnitHeartbeat      = "heartbeat"
	// UnitMalformed is bytes that are not a frame: garbage, or a frame whose
	// header is impossible. Its unit's Err says why; decoding resumes at the
	// next frame boundary that can be trusted.
	UnitMalformed = "malformed"
)

const (
	// resyncMaxSize bounds the frame size a resynchronising decoder believes
	// before the connection's frame-max is known: RabbitMQ's default
	// frame_max is 128 KiB, and most clients keep it.
	resyncMaxSize = 1 << 20
	// junkKeep is how many bytes of skipped garbage a malformed unit keeps.
	junkKeep = 4096
)

// New is the decode.Factory for AMQP 0-9-1.
func New(c *decode.Conn, opt *decode.Options, emit decode.Emit) decode.Decoder {
	if opt == nil {
		opt = decode.DefaultOptions()
	}
	d := &Decoder{conn: c, opt: *opt, emit: emit}
	if d.opt.MaxFrame <= 0 {
		d.opt.MaxFrame = decode.DefaultMaxFrame
	}
	if d.opt.MaxBuffered <= 0 {
		d.opt.MaxBuffered = decode.DefaultMaxBuffered
	}
	if d.opt.MaxMessage <= 0 {
		d.opt.MaxMessage = decode.DefaultMaxMessage
	}
	for i := range d.dirs {
		d.dirs[i].synced = true
	}
	d.acct = d.opt.Budget.NewAccount()
	d.msgs = decode.SlotsOf[message](d.opt.Arena)
	return d
}

var _ decode.Factory = New

// Decoder decodes one AMQP 0-9-1 connection. It is not safe for concurrent
// use; the pipeline feeds it from one goroutine.
type Decoder struct {
	conn *decode.Conn
	opt  decode.Options
	emit decode.Emit
	dirs [2]direction
	// frameMax is the negotiated frame-max (connection.tune-ok), 0 until
	// known or when unlimited.
	frameMax int
	scratch  []byte
	// last holds the last summary of method, header and body frames per
	// direction: runs of identical ones (a publisher's publish, header and
	// body, over and over) share one string. payload, when not nil, is
	// the frame payload (in its unit's Raw) the summary was made of
	// alone: a frame with the same bytes takes it without its being
	// made again (see repeated).
	last [2][3]lastSummary
	// inflight is the body bytes copied for messages not yet complete, on
	// all channels: bounded by Options.MaxMessage.
	inflight int
	// acct is the connection's part of the memory budget (nil: none);
	// the copied body bytes are charged to it.
	acct    *decode.Account
	lastFed time.Time // time of the latest bytes fed
	// units is the unit slab, unitsUsed how many of it are handed out
	// (an index: a slab resliced for every unit is a pointer written
	// to the decoder, with a write barrier while the collector runs).
	units     []decode.Unit
	unitsUsed int
	raw       byteSlab
	msgSlab   []message // message slab
	// Sizes of the next slabs: they start small and double up to the
	// constants below, so that many short connections (60k of them in a
	// hostile capture) do not cost a full slab each.
	unitsNext, msgNext int
	// msgs, with an arena, keeps each completing unit's message beside
	// it, recycled with it.
	msgs *decode.Slots[message]
	// md decodes methods of both directions (a method's value is used
	// before the next is decoded); allocated at the first method frame, as
	// it weighs 2.5 KB and a hostile capture opens 60k connections that
	// never send one.
	md *MethodDecoder
	// in is the buffer being parsed, and how its units keep their bytes
	// (see Options.StableInput): ref, as slices of it (the caller's
	// stable input); take, the stream's buffer holding exactly one unit,
	// as that buffer (see keep).
	in        []byte
	ref, take bool
}

type direction struct {
	s decode.Stream
	// synced says the stream position is a frame boundary we trust.
	synced bool
	// afterGap says we are resynchronising after lost bytes, not after
	// garbage: the skipped tail of a frame is expected, and the junk it
	// makes is dropped at the next frame boundary, not reported (unless
	// none comes before the stream ends).
	afterGap bool
	junk     junk
	hdr      ContentHeader
	// checked is the payload (in its unit's Raw) of the last method in
	// this direction that decoded without error and that the decoder
	// takes nothing from (outside the connection and channel classes): a
	// method with the same bytes, as a publisher's publish repeats, is
	// not decoded again.
	checked []byte
	// bodySum is the summary of the last body frame of a message in
	// this direction, made of bodyKey.
	bodyKey bodyKey
	bodySum string
	// The messages in flight: cur (on channel curCh) when not nil, and
	// the others in msgs. Nearly all traffic carries one message at a time
	// on one channel, so most messages come and go without a map write.
	msgs  map[uint16]*assembly
	cur   *assembly
	curCh uint16
	// spare is an assembly done with, zeroed, for the next message: a
	// publisher's stream of messages reuses one.
	spare *assembly
}

// msg returns the message in flight on channel ch, or nil.
func (ds *direction) msg(ch uint16) *assembly {
	if ds.cur != nil && ds.curCh == ch {
		return ds.cur
	}
	if len(ds.msgs) == 0 {
		return nil
	}
	return ds.msgs[ch]
}

// put records a as the message in flight on channel ch, which has none.
func (ds *direction) put(ch uint16, a *assembly) {
	if ds.cur == nil {
		ds.cur, ds.curCh = a, ch
		return
	}
	if ds.msgs == nil {
		ds.msgs = make(map[uint16]*assembly)
	}
	ds.msgs[ch] = a
}

// remove forgets the message in flight on channel ch.
func (ds *direction) remove(ch uint16) {
	if ds.cur != nil && ds.curCh == ch {
		ds.cur = nil
		return
	}
	delete(ds.msgs, ch)
}

// channels returns the channels with a message in flight.
func (ds *direction) channels() []uint16 {
	var chs []uint16
	if ds.cur != nil {
		chs = append(chs, ds.curCh)
	}
	for ch := range ds.msgs {
		chs = append(chs, ch)
	}
	return chs
}

// junk accumulates bytes skipped while resynchronising after garbage.
type junk struct {
	n    int
	off  int64
	raw  []byte
	why  string
	time time.Time
	// toEnd: no frame boundary followed (the bytes run to the stream's end).
	toEnd bool
}

// assembly collects a message: its method, content header and body frames.
type assembly struct {
	method []byte // method payload (class, method, arguments)
	header []byte // content header payload
	// methodRaw and headerRaw are method and header as their units keep
	// them (in their Raw), for the message; not the units themselves,
	// which may be gone before the message completes (Options.Arena).
	methodRaw, headerRaw []byte
	bodySize             uint64
	got                  uint64
	// body is at most MaxMessage bytes of the body, kept as the frames
	// carried it (large frames' payloads shared with their units); whole
	// says instead that the body is all in the first body frame, which
	// completes the message.
	body   decode.Pieces
	whole  bool
	cut    bool // body exceeded MaxMessage
	frames int
	// hold charges the body kept to the memory budget; budgetCut says
	// the budget refused or took back the body.
	hold      decode.Hold
	budgetCut bool
	d         *Decoder
	dir       decode.Dir
	channel   uint16
}

// Evict implements [decode.Holder]: the budget took back the body copied
// so far, which is then counted but not kept.
func (a *assembly) Evict(_ *decode.Hold, why string) {
	d := a.d
	n := a.body.Len()
	d.inflight -= n
	a.body, a.cut, a.budgetCut = decode.Pieces{}, true, true
	u := d.unit(a.dir, d.dirs[a.dir].s.Pos, nil, d.lastFed)
	u.Type, u.Channel, u.HasChannel = "warning", a.channel, true
	u.Summary = "memory budget: the body of the message in progress on channel " + strconv.Itoa(int(a.channel)) + " dropped"
	u.Warn("amqp091: the body copied so far (" + strconv.Itoa(n) + " bytes) of the message in progress on channel " + strconv.Itoa(int(a.channel)) + " dropped: " + why)
	d.emit(u)
}

// Feed implements decode.Decoder.
func (d *Decoder) Feed(dir decode.Dir, data []byte, t time.Time) {
	if d.opt.StableInput {
		// The frame a previous call left incomplete is completed on its
		// own, so that the frames after it are parsed in data itself.
		if head, rest := d.dirs[dir&1].s.Split(data); len(head) > 0 && d.completes(dir&1, head) {
			d.feed(dir, head, t)
			data = rest
		}
	}
	d.feed(dir, data, t)
}

// completes reports whether head, the bytes that complete the frame
// buffered for dir, makes it one that parse takes whole, as it would
// have in head and what follows it together: its size is still within
// the limit (a tune-ok may have lowered it since) and it ends with the
// frame-end octet. Otherwise head is not fed apart.
func (d *Decoder) completes(dir decode.Dir, head []byte) bool {
	h, ok := PeekFrameHead(d.dirs[dir].s.Peek())
	return ok && d.dirs[dir].synced && h.Type.Valid() && uint64(h.Size) <= uint64(d.limit()) && head[len(head)-1] == FrameEnd
}

func (d *Decoder) feed(dir decode.Dir, data []byte, t time.Time) {
	d.lastFed = t
	ds := &d.dirs[dir&1]
	stable := d.opt.StableInput && ds.s.Buffered() == 0
	buf := ds.s.Push(data)
	d.in, d.ref, d.take = buf, stable, d.opt.StableInput && !stable
	n := d.parse(dir&1, buf, t, false)
	d.in, d.ref, d.take = nil, false, false
	rest := buf[n:]
	if len(rest) > d.opt.MaxBuffered {
		// Cannot happen with sane limits (frames are bounded by MaxFrame and
		// resync waits are bounded), but the bound is a promise.
		d.skip(dir&1, ds.s.Pos+int64(n), rest, t, "buffered bytes exceed the limit of "+strconv.Itoa(d.opt.MaxBuffered))
		ds.synced, ds.afterGap = false, false
		n, rest = len(buf), nil
	} else if len(rest) > 0 && !ds.s.Reserve(d.acct, len(rest)) {
		d.skip(dir&1, ds.s.Pos+int64(n), rest, t, "the memory budget (--max-memory) has no room to buffer "+strconv.Itoa(len(rest))+" bytes")
		ds.synced, ds.afterGap = false, false
		n, rest = len(buf), nil
	}
	ds.s.Keep(n, rest)
}

// Gap implements decode.Decoder.
func (d *Decoder) Gap(dir decode.Dir, n int, t time.Time) {
	dir &= 1
	ds := &d.dirs[dir]
	if ds.afterGap {
		ds.junk = junk{} // bytes between two gaps: no boundary to trust
	} else {
		d.flushJunk(dir)
	}
	if n < 0 {
		n = 0
	}
	ds.s.Reset(int64(n))
	ds.synced, ds.afterGap = false, true
	// Messages in flight in this direction lost bytes.
	for _, ch := range ds.channels() {
		d.drop(ds, ch)
	}
}

// End implements decode.Decoder.
func (d *Decoder) End(dir decode.Dir, t time.Time) {
	dir &= 1
	ds := &d.dirs[dir]
	buf := ds.s.Push(nil)
	n := d.parse(dir, buf, t, true)
	rest := buf[n:]
	if len(rest) > 0 {
		if ds.synced {
			u := d.unit(dir, ds.s.Pos+int64(n), rest, t)
			u.Type, u.Dissect = UnitMalformed, dissectMalformed
			if h, ok := PeekFrameHead(rest); ok && h.Type.Valid() {
				u.Type, u.Dissect = unitType(h.Type), dissectFrame
				u.Channel, u.HasChannel = h.Channel, true
				if h.Type == FrameMethod && len(rest) >= FrameHeaderSize+4 {
					if info := LookupMethod(binary.BigEndian.Uint16(rest[7:]), binary.BigEndian.Uint16(rest[9:])); info != nil {
						u.Type = info.Name
						d.redactSecrets(u, info, u.Raw[FrameHeaderSize+4:])
					}
				}
			}
			u.SetErr("amqp091: truncated: stream ended " + strconv.Itoa(len(rest)) + " bytes into a frame")
			d.emit(u)
		} else {
			d.skip(dir, ds.s.Pos+int64(n), rest, t, "")
		}
	}
	if !ds.synced && ds.afterGap && ds.junk.n > 0 {
		// Not one frame boundary since the gap (or since a capture that
		// began mid-stream): say so rather than show nothing for the rest.
		ds.junk.why, ds.junk.toEnd = "no AMQP 0-9-1 frame boundary found after the gap (not AMQP 0-9-1? see --decode-as)", true
	}
	d.flushJunk(dir)
	ds.s.Keep(len(buf), nil)
	for _, ch := range ds.channels() {
		d.drop(ds, ch) // never completed: give back what they held
	}
}

// dissectMalformed shows the bytes kept of what could not be decoded.
func dissectMalformed(u *decode.Unit) []*decode.Field {
	if len(u.Raw) == 0 {
		return nil
	}
	return []*decode.Field{{Key: "data", Value: append([]byte(nil), u.Raw...), Encoding: "bytes", Offset: 0, Length: len(u.Raw)}}
}

func unitType(t FrameType) string {
	switch t {
	case FrameHeader:
		return UnitContentHeader
	case FrameBody:
		return UnitContentBody
	case FrameHeartbeat:
		return UnitHeartbeat
	}
	return "method"
}

// limit is the largest frame payload accepted now.
func (d *Decoder) limit() int {
	l := d.opt.MaxFrame
	if d.frameMax > FrameOverhead && d.frameMax-FrameOverhead < l {
		l = d.frameMax - FrameOverhead
	}
	if b := d.opt.MaxBuffered - FrameOverhead; b < l {
		l = b
	}
	return l
}

// parse consumes whole units from buf and returns how many bytes it used.
func (d *Decoder) parse(dir decode.Dir, buf []byte, t time.Time, atEnd bool) int {
	ds := &d.dirs[dir]
	off := 0
	for off < len(buf) {
		rest := buf[off:]
		pos := ds.s.Pos + int64(off)
		if !ds.synced {
			skip, ok := d.resync(rest, atEnd)
			if skip > 0 {
				d.skip(dir, pos, rest[:skip], t, "")
				off += skip
			}
			if !ok {
				return off
			}
			if ds.afterGap {
				ds.junk = junk{} // the tail of a frame the gap cut: expected
			} else {
				d.flushJunk(dir)
			}
			ds.synced, ds.afterGap = true, false
			continue
		}
		if rest[0] == 'A' {
			// 'A' is no frame type: a protocol header (the client's, or the
			// server's answer naming the version it speaks).
			if len(rest) < len(ProtocolHeader) {
				if bytes.HasPrefix([]byte("AMQP"), rest[:min(len(rest), 4)]) && !atEnd {
					return off
				}
			} else if string(rest[:4]) == "AMQP" {
				d.emitProtocolHeader(dir, pos, rest[:8], t)
				off += 8
				continue
			}
		}
		h, ok := PeekFrameHead(rest)
		if !ok {
			return off
		}
		if !h.Type.Valid() {
			d.lose(dir, "unknown frame type "+strconv.Itoa(int(h.Type)), t)
			continue
		}
		if lim := d.limit(); uint64(h.Size) > uint64(lim) {
			d.lose(dir, "frame size "+strconv.FormatUint(uint64(h.Size), 10)+" exceeds the limit of "+strconv.Itoa(lim), t)
			continue
		}
		n := FrameOverhead + int(h.Size)
		if len(rest) < n {
			ds.s.Want(n)
			return off
		}
		if rest[n-1] != FrameEnd {
			d.lose(dir, "frame-end octet is 0x"+hexByte(rest[n-1])+", not 0xce", t)
			continue
		}
		d.emitFrame(dir, pos, rest[:n], h, t)
		off += n
	}
	return off
}

// lose drops sync: the bytes from here are reported as malformed until a
// trustworthy frame boundary.
func (d *Decoder) lose(dir decode.Dir, why string, t time.Time) {
	ds := &d.dirs[dir]
	ds.synced, ds.afterGap = false, false
	if ds.junk.n == 0 {
		ds.junk.why = why
	}
}

// skip adds bytes to the pending malformed unit.
func (d *Decoder) skip(dir decode.Dir, pos int64, b []byte, t time.Time, why string) {
	j := &d.dirs[dir].junk
	if j.n == 0 {
		j.off = pos
		if why != "" {
			j.why = why
		}
	}
	j.n += len(b)
	j.time = t
	if room := junkKeep - len(j.raw); room > 0 {
		j.raw = append(j.raw, b[:min(room, len(b))]...)
	}
}

func (d *Decoder) flushJunk(dir decode.Dir) {
	j := &d.dirs[dir].junk
	if j.n == 0 {
		return
	}
	u := &decode.Unit{Conn: d.conn, Dir: dir, Proto: decode.ProtoAMQP091, Type: UnitMalformed,
		Offset: j.off, Len: j.n, Raw: j.raw}
	u.SetTime(j.time)
	why := j.why
	if why == "" {
		why = "not an AMQP frame"
	}
	to := " to the next frame boundary"
	if j.toEnd {
		to = " to the end of the stream"
	}
	u.SetErr("amqp091: " + why + "; skipped " + strconv.Itoa(j.n) + " bytes at stream offset " + strconv.FormatInt(j.off, 10) + to)
	u.Summary = "Malformed: " + why
	u.Dissect = dissectMalformed
	*j = junk{}
	d.emit(u)
}

// resync looks for a frame boundary it can trust in b. It returns how many
// bytes to skip, and false when it needs more bytes to decide.
func (d *Decoder) resync(b []byte, atEnd bool) (int, bool) {
	lim := resyncMaxSize
	if d.frameMax > FrameOverhead {
		lim = d.frameMax - FrameOverhead
	}
	lim = min(lim, d.limit())
	for i := 0; i < len(b); i++ {
		c := b[i:]
		if c[0] == 'A' && len(c) >= 8 && string(c[:4]) == "AMQP" && c[4] <= 3 {
			return i, true
		}
		t := FrameType(c[0])
		if !t.Valid() {
			continue
		}
		// A heartbeat is a whole frame in 8 bytes; the other kinds need
		// their first 4 payload bytes to be judged.
		need := FrameHeaderSize + 4
		if t == FrameHeartbeat {
			need = FrameOverhead
		}
		if len(c) < need {
			if atEnd {
				continue
			}
			return i, false
		}
		h, _ := PeekFrameHead(c)
		if uint64(h.Size) > uint64(lim) {
			continue
		}
		strong := false
		switch t {
		case FrameHeartbeat:
			if h.Size != 0 || h.Channel != 0 {
				continue
			}
			strong = true
		case FrameMethod:
			if h.Size < 4 || LookupMethod(binary.BigEndian.Uint16(c[7:]), binary.BigEndian.Uint16(c[9:])) == nil {
				continue
			}
			strong = true
		case FrameHeader:
			// class basic, weight 0.
			if h.Size < 14 || h.Channel == 0 || c[7] != 0 || c[8] != byte(ClassBasic) || c[9] != 0 || c[10] != 0 {
				continue
			}
			strong = true
		case FrameBody:
			if h.Channel == 0 {
				continue
			}
		}
		n := FrameOverhead + int(h.Size)
		if len(c) < n {
			if atEnd {
				continue
			}
			return i, false
		}
		if c[n-1] != FrameEnd {
			continue
		}
		// Confirm with what follows: another frame header or a protocol
		// header. Strong candidates stand alone at the end of what we have.
		next := c[n:]
		if len(next) == 0 {
			if strong || atEnd {
				return i, true
			}
			return i, false
		}
		if next[0] == 'A' || FrameType(next[0]).Valid() {
			if nh, ok := PeekFrameHead(next); !ok || next[0] == 'A' || uint64(nh.Size) <= uint64(lim) {
				return i, true
			}
		}
	}
	return len(b), false
}

// Units and their bytes are carved from slabs: one allocation serves many
// small frames. A slab lives as long as any unit carved from it.
const (
	unitSlab = 64
	// messageSlab is the number of assembled messages allocated at once.
	messageSlab = 64
	rawSlab     = 64 << 10
	rawCarved   = 2 << 10 // larger frames get bytes of their own
)

// nextSlab returns the size of the next slab and doubles *next, from a
// 256th of limit up to limit.
func nextSlab(next *int, limit int) int {
	n := *next
	if n == 0 {
		n = max(limit/256, 1)
	}
	*next = min(2*n, limit)
	return n
}

func (d *Decoder) unit(dir decode.Dir, pos int64, raw []byte, t time.Time) *decode.Unit {
	return d.unitOf(dir, pos, raw, t, false)
}

// unitOf is unit, its bytes copied when own is set (they are to be
// redacted in place) or when they are not stable (see keep).
func (d *Decoder) unitOf(dir decode.Dir, pos int64, raw []byte, t time.Time, own bool) *decode.Unit {
	var u *decode.Unit
	if d.opt.Arena != nil {
		// Nothing points to an AMQP 0-9-1 unit once emitted (an assembly
		// keeps its frames' payloads, not their units).
		u = d.opt.Arena.Unit()
	} else {
		if d.unitsUsed == len(d.units) {
			d.units, d.unitsUsed = make([]decode.Unit, nextSlab(&d.unitsNext, d.opt.Slab(unitSlab))), 0
		}
		u = &d.units[d.unitsUsed]
		d.unitsUsed++
	}
	// The slab is fresh (zero): set fields one by one rather than copy a
	// whole Unit, which costs a bulk write barrier.
	u.Conn, u.Dir, u.Proto = d.conn, dir, decode.ProtoAMQP091
	u.SetTime(t)
	u.Offset, u.Len = pos, len(raw)
	if own {
		u.Raw = d.carve(raw)
	} else {
		u.Raw = d.keep(dir, raw)
	}
	return u
}

// keep returns the bytes a unit keeps of raw, part of the buffer being
// parsed: raw itself when that is stable input; the stream's buffer,
// taken over, when raw is all of it and large (it is then the frame a
// Feed completed on its own, gathered in a buffer that is never used
// again); a copy otherwise.
func (d *Decoder) keep(dir decode.Dir, raw []byte) []byte {
	switch {
	case d.ref:
		return raw[:len(raw):len(raw)]
	case d.take && len(raw) > rawCarved && len(raw) == len(d.in) && &raw[0] == &d.in[0]:
		return d.dirs[dir&1].s.Take()
	}
	return d.carve(raw)
}

// stable reports whether a unit's bytes are the caller's stable input:
// kept, they cost the decoder nothing.
func (d *Decoder) stable() bool { return d.ref }

// text returns the summary in s as a string carved from the byte slab; s
// becomes the scratch buffer for the next one.
func (d *Decoder) text(s []byte) string {
	d.scratch = s
	return d.raw.text(s)
}

// summary is text for a frame of kind (0 method, 1 header, 2 body) in
// direction dir, reusing the previous such frame's summary when it is the
// same: on a busy connection most summaries repeat, and a million units
// would otherwise keep a million copies.
// p is the payload the summary was made of alone, or nil when it depends
// on more (a body's, on the message in progress).
func (d *Decoder) summary(dir decode.Dir, kind int, s, p []byte) string {
	last := &d.last[dir&1][kind]
	last.payload = p
	if string(s) == last.summary && last.summary != "" {
		d.scratch = s
		return last.summary
	}
	last.summary = d.text(s)
	return last.summary
}

// repeated returns the summary of the last frame of kind in direction dir
// when it was made of the payload p alone: comparing the bytes costs less
// than making it again (fanout repeats one content header over and over).
func (d *Decoder) repeated(dir decode.Dir, kind int, p []byte) (string, bool) {
	return d.last[dir&1][kind].of(p)
}

// lastSummary is a summary and the payload it was made of alone (in its
// unit's Raw), or a nil payload when it depends on more.
type lastSummary struct {
	payload []byte
	summary string
}

// of returns the summary when it was made of payload p alone.
func (l *lastSummary) of(p []byte) (string, bool) {
	if l.payload != nil && l.summary != "" && bytes.Equal(p, l.payload) {
		return l.summary, true
	}
	return "", false
}

// carve returns a copy of b that the unit owns.
func (d *Decoder) carve(b []byte) []byte { return d.raw.carve(b) }

// byteSlab is where small frames' bytes and summaries are copied to:
// one allocation serves many of them.
type byteSlab struct {
	buf  []byte
	next int // the next slab's size (see nextSlab)
}

// carve returns a copy of b: from the slab, or of its own when b is
// larger than rawCarved.
func (s *byteSlab) carve(b []byte) []byte {
	if len(b) > rawCarved {
		return append([]byte(nil), b...)
	}
	c := append(s.reserve(len(b)), b...)
	s.buf = s.buf[:len(s.buf)+len(c)]
	return c[:len(c):len(c)]
}

// reserve returns an empty slice, at the slab's end, with room for n
// bytes: what is appended to it (n bytes at most) is then kept by
// commit, with no copy made.
func (s *byteSlab) reserve(n int) []byte {
	if cap(s.buf)-len(s.buf) < n {
		s.buf = decode.MakeNoZero(max(nextSlab(&s.next, rawSlab), n))
	}
	return s.buf[len(s.buf):len(s.buf):cap(s.buf)]
}

// commit keeps b, appended to what reserve returned, as a string of the
// slab. A b that outgrew the room reserved was moved by append: it is
// kept where it went.
func (s *byteSlab) commit(b []byte) string {
	if len(b) > cap(s.buf)-len(s.buf) {
		return string(b)
	}
	s.buf = s.buf[:len(s.buf)+len(b)]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// text returns a copy of b as a string, carved as carve does.
func (s *byteSlab) text(b []byte) string {
	if len(b) > rawCarved {
		return string(b)
	}
	c := s.carve(b)
	// The carved bytes are never written again: the string is immutable.
	return unsafe.String(unsafe.SliceData(c), len(c))
}

func (d *Decoder) emitProtocolHeader(dir decode.Dir, pos int64, raw []byte, t time.Time) {
	u := d.unit(dir, pos, raw, t)
	u.Type = UnitProtocolHeader
	s := append(d.scratch[:0], "Protocol-Header AMQP "...)
	if raw[4] == 0 {
		s = strconv.AppendUint(s, uint64(raw[5]), 10)
		s = append(s, '-')
		s = strconv.AppendUint(s, uint64(raw[6]), 10)
		s = append(s, '-')
		s = strconv.AppendUint(s, uint64(raw[7]), 10)
	} else {
		for i := 4; i < 8; i++ {
			if i > 4 {
				s = append(s, '.')
			}
			s = strconv.AppendUint(s, uint64(raw[i]), 10)
		}
	}
	u.Summary = d.text(s)
	if string(raw) != ProtocolHeader && dir == decode.DirF {
		u.Warn("protocol header is not AMQP 0-9-1")
	}
	u.Dissect = dissectProtocolHeader
	d.emit(u)
}

func dissectProtocolHeader(u *decode.Unit) []*decode.Field {
	r := u.Raw
	if len(r) < 8 {
		return nil
	}
	return []*decode.Field{
		{Key: "protocol", Name: "amqp.init.protocol", Value: string(r[:4]), Encoding: "bytes", Offset: 0, Length: 4},
		{Key: "protocol-id", Name: "amqp.init.id", Value: uint64(r[4]), Encoding: "octet", Offset: 4, Length: 1},
		{Key: "version-major", Name: "amqp.init.version_major", Value: uint64(r[5]), Encoding: "octet", Offset: 5, Length: 1},
		{Key: "version-minor", Name: "amqp.init.version_minor", Value: uint64(r[6]), Encoding: "octet", Offset: 6, Length: 1},
		{Key: "version-revision", Name: "amqp.init.version_revision", Value: uint64(r[7]), Encoding: "octet", Offset: 7, Length: 1},
	}
}

func (d *Decoder) emitFrame(dir decode.Dir, pos int64, raw []byte, h FrameHead, t time.Time) {
	// The connection class's methods carry the credentials that
	// redactSecrets overwrites in Raw: theirs is a copy.
	own := h.Type == FrameMethod && len(raw) >= FrameHeaderSize+2 && binary.BigEndian.Uint16(raw[FrameHeaderSize:]) == ClassConnection
	u := d.unitOf(dir, pos, raw, t, own)
	u.Channel, u.HasChannel = h.Channel, true
	u.Dissect = dissectFrame
	payload := u.Raw[FrameHeaderSize : len(u.Raw)-1]
	switch h.Type {
	case FrameMethod:
		d.methodFrame(dir, u, payload)
	case FrameHeader:
		d.headerFrame(dir, u, payload)
	case FrameBody:
		d.bodyFrame(dir, u, payload)
	case FrameHeartbeat:
		u.Type, u.Summary = UnitHeartbeat, "Heartbeat"
		if h.Channel != 0 {
			u.Warn("heartbeat on channel " + strconv.Itoa(int(h.Channel)) + ", not 0")
		}
		if h.Size != 0 {
			u.Warn("heartbeat with a payload")
		}
	}
	d.emit(u)
}

func (d *Decoder) methodFrame(dir decode.Dir, u *decode.Unit, p []byte) {
	ds := &d.dirs[dir]
	u.Type = "method"
	if len(p) < 4 {
		u.Summary = "Method"
		u.SetErr("amqp091: method frame payload of " + strconv.Itoa(len(p)) + " bytes, want at least 4")
		return
	}
	class, id := binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])
	info := LookupMethod(class, id)
	if info == nil {
		u.Summary = "Unknown method " + strconv.Itoa(int(class)) + "." + strconv.Itoa(int(id))
		u.SetErr(unknownMethod(class, id).Error())
		return
	}
	u.Type = info.Name
	// A method's summary is made of its arguments alone, but for the
	// connection class's, which carry a peer's properties and
	// credentials: those are always made here.
	late := d.opt.LateSummaries && class != ClassConnection
	s := d.scratch[:0]
	if !late {
		s = appendMethodSummary(s, info, p[4:])
	}
	var m Method
	var err error
	if class == ClassConnection || class == ClassChannel || !bytes.Equal(p, ds.checked) {
		if d.md == nil {
			d.md = new(MethodDecoder)
		}
		m, err = d.md.Decode(p)
		if err != nil {
			u.SetErr(err.Error())
		}
		ds.checked = nil
		if err == nil && class != ClassConnection && class != ClassChannel {
			ds.checked = p
		}
	}
	switch m := m.(type) {
	case *ConnectionStart:
		s = appendPeer(s, m.ServerProperties)
	case *ConnectionStartOk, *ConnectionSecureOk, *ConnectionUpdateSecret:
		if user := d.redactSecrets(u, info, p[4:]); user != nil {
			s = append(s, " user="...)
			s = appendPrintable(s, user, 100)
		}
		if m, ok := m.(*ConnectionStartOk); ok && err == nil {
			s = appendPeer(s, m.ClientProperties)
		}
	case *ConnectionTuneOk:
		if err == nil {
			d.frameMax = int(m.FrameMax)
		}
	case *ChannelClose, *ChannelCloseOk:
		for i := range d.dirs {
			d.drop(&d.dirs[i], u.Channel)
		}
	}
	if err == nil && info.Content {
		if old := ds.msg(u.Channel); old != nil {
			u.Warn("previous message on this channel was incomplete")
			d.drop(ds, u.Channel)
		}
		a := ds.spare
		if a != nil {
			ds.spare = nil
		} else {
			a = new(assembly)
		}
		a.method, a.methodRaw, a.d, a.dir, a.channel = p, framePayload(u), d, dir, u.Channel
		ds.put(u.Channel, a)
	}
	if late {
		d.scratch = s
		u.Summary = SummaryLater // the Summarizer's to make
		return
	}
	u.Summary = d.summary(u.Dir, 0, s, nil)
}

// appendPeer appends the product and version a peer announced.
func appendPeer(s []byte, props Table) []byte {
	if v, ok := props.Get("product"); ok && v.Type == TypeLongstr {
		s = append(s, " product="...)
		s = appendPrintable(s, v.Bytes(), 60)
		if v, ok := props.Get("version"); ok && v.Type == TypeLongstr {
			s = append(s, ' ')
			s = appendPrintable(s, v.Bytes(), 30)
		}
	}
	return s
}

// redactSecrets overwrites the credentials in a method's arguments (part of
// u.Raw) with '*' unless secrets are shown, and marks the unit. PLAIN and
// AMQPLAIN keep the user name, which it returns. When the arguments end
// before the secret does, everything from where decoding stopped is
// overwritten: a cut frame must not leak half a password.
func (d *Decoder) redactSecrets(u *decode.Unit, info *MethodInfo, args []byte) (user []byte) {
	name := ""
	switch info.Name {
	case "connection.start-ok", "connection.secure-ok":
		name = "response"
	case "connection.update-secret":
		name = "new-secret"
	default:
		return nil
	}
	mech, secret := secretOf(args, info, name)
	switch mech {
	case "PLAIN":
		// authzid NUL authcid NUL passwd (RFC 4616).
		if i := bytes.IndexByte(secret, 0); i >= 0 {
			if j := bytes.IndexByte(secret[i+1:], 0); j >= 0 {
				user, secret = secret[i+1:i+1+j], secret[i+2+j:]
			}
		}
	case "AMQPLAIN":
		// A table without its length: LOGIN and PASSWORD.
		it := Table(secret).Iter()
		var pass []byte
		for it.Next() {
			switch string(it.Key()) {
			case "LOGIN":
				user = it.Value().Bytes()
			case "PASSWORD":
				pass = it.Value().Bytes()
			}
		}
		if it.Err() == nil {
			secret = pass
		}
	case "EXTERNAL":
		secret = nil // the identity comes from the TLS certificate
	}
	if len(secret) > 0 && !d.opt.ShowSecrets {
		u.Secret = true
		overwrite(secret)
	}
	return user
}

// secretOf finds the argument name (a longstr) of a method's arguments
// and the SASL mechanism named beside it; when the arguments end before
// the secret does, the secret is everything from where they could no
// longer be read, and the mechanism is unknown. The arguments are walked
// as dissectArgs walks them, without the field tree of client-properties
// that it would build and nothing here reads (a tenth of the short
// connections' CPU time).
func secretOf(args []byte, info *MethodInfo, name string) (mech string, secret []byte) {
	secret, end := args[len(args):], 0
	w := newArgWalk(args, info.Args)
	for {
		var f decode.Field
		if i, _, _ := w.next(0, &f); i < 0 {
			break
		}
		end = max(end, f.Offset+f.Length)
		switch f.Key {
		case "mechanism":
			mech, _ = f.Value.(string)
		case name:
			secret = args[f.Offset+4 : f.Offset+f.Length]
		}
	}
	if len(secret) == 0 && end < len(args) {
		secret, mech = args[end:], "" // the secret is cut or unreadable
	}
	return mech, secret
}

func overwrite(b []byte) {
	for i := range b {
		b[i] = '*'
	}
}

func (d *Decoder) headerFrame(dir decode.Dir, u *decode.Unit, p []byte) {
	ds := &d.dirs[dir]
	u.Type = UnitContentHeader
	if sum, ok := d.repeated(u.Dir, 1, p); ok {
		// The same bytes as the last header in this direction, which
		// decoded without error into ds.hdr, still holding it: a
		// publisher's stream repeats one header (decoding it again was a
		// tenth of the fanout's decoding).
		u.Summary = sum
	} else if err := ds.hdr.DecodeFromBytes(p); err != nil {
		d.last[dir&1][1] = lastSummary{} // ds.hdr no longer holds its decode
		u.Summary = "Content-Header"
		u.SetErr(err.Error())
		d.drop(ds, u.Channel)
		return
	} else {
		u.Summary = d.summary(u.Dir, 1, appendHeaderSummary(d.scratch[:0], &ds.hdr), p)
	}
	a := ds.msg(u.Channel)
	if a == nil {
		u.Warn("content header without a method that carries content")
		return
	}
	if a.header != nil {
		u.Warn("second content header for one message")
	}
	a.header, a.headerRaw = p, framePayload(u)
	a.bodySize = ds.hdr.BodySize
	if a.bodySize == 0 {
		d.complete(dir, u, a)
	}
}

func (d *Decoder) bodyFrame(dir decode.Dir, u *decode.Unit, p []byte) {
	ds := &d.dirs[dir]
	u.Type = UnitContentBody
	a := ds.msg(u.Channel)
	switch {
	case a == nil || a.header == nil:
		u.Warn("content body without a content header")
	default:
		a.got += uint64(len(p))
		a.frames++
		if a.frames == 1 && a.got >= a.bodySize {
			a.whole = len(p) > 0 // the whole body is in this unit: share its bytes
		} else if room := min(d.opt.MaxMessage-a.body.Len(), d.opt.MaxMessage-d.inflight); room > 0 && !a.budgetCut {
			k := min(room, len(p))
			// A frame with bytes of its own (see carve) is kept as them;
			// smaller ones are copied in chunks of at most the rest of
			// the body.
			rest, before := room, a.got-uint64(len(p))
			if a.bodySize > before && a.bodySize-before < uint64(rest) {
				rest = int(a.bodySize - before)
			}
			if d.stable() {
				a.body.AddRef(p[:k])
				d.inflight += k
				a.cut = a.cut || room < len(p)
			} else if a.body.Add(p[:k], len(u.Raw) > rawCarved, rest, &a.hold, d.acct, a) {
				d.inflight += k
				a.cut = a.cut || room < len(p)
			} else {
				a.cut, a.budgetCut = true, true
			}
		} else if len(p) > 0 {
			a.cut = true
		}
		if a.got > a.bodySize {
			u.Warn("body is " + strconv.FormatUint(a.got, 10) + " bytes, the content header said " + strconv.FormatUint(a.bodySize, 10))
		}
		// The summary is made of three numbers alone: a run of bodies of
		// one size takes the last one's without its being made again.
		if k := (bodyKey{len(p), a.got, a.bodySize}); k == ds.bodyKey && ds.bodySum != "" {
			u.Summary = ds.bodySum
		} else {
			s := append(d.scratch[:0], "Content-Body len="...)
			s = strconv.AppendInt(s, int64(len(p)), 10)
			s = append(s, " ("...)
			s = strconv.AppendUint(s, a.got, 10)
			s = append(s, '/')
			s = strconv.AppendUint(s, a.bodySize, 10)
			if a.got >= a.bodySize {
				s = append(s, " complete"...)
			}
			s = append(s, ')')
			u.Summary = d.summary(u.Dir, 2, s, nil)
			ds.bodyKey, ds.bodySum = k, u.Summary
		}
		if a.got >= a.bodySize {
			d.complete(dir, u, a)
		}
		return
	}
	s := append(d.scratch[:0], "Content-Body len="...)
	s = strconv.AppendInt(s, int64(len(p)), 10)
	u.Summary = d.summary(u.Dir, 2, s, nil)
}

// bodyKey is what a body frame's summary is made of: its length, the
// body's bytes so far and the size the content header announced.
type bodyKey struct {
	n         int
	got, size uint64
}

// drop forgets the message in flight on channel ch. Its assembly is
// zeroed and kept for the next message: nothing refers to it any more (the
// budget let go of it with its hold; a completed message took copies of
// what it keeps).
func (d *Decoder) drop(ds *direction, ch uint16) {
	if a := ds.msg(ch); a != nil {
		d.inflight -= a.body.Len() // counted when kept
		a.hold.Release()
		ds.remove(ch)
		*a = assembly{}
		ds.spare = a
	}
}

// complete attaches the assembled message to u, the unit that completes it.
func (d *Decoder) complete(dir decode.Dir, u *decode.Unit, a *assembly) {
	// Messages are kept by every unit that completes one: slab-allocate
	// them (with an arena, beside their units, recycled with them), and
	// keep the method, header and (single-frame) body as the units that
	// carry them rather than as copies of their own.
	m := d.msgs.Of(u)
	if m == nil {
		if len(d.msgSlab) == 0 {
			d.msgSlab = make([]message, nextSlab(&d.msgNext, d.opt.Slab(messageSlab)))
		}
		m = &d.msgSlab[0]
		d.msgSlab = d.msgSlab[1:]
	}
	m.method, m.header, m.size, m.cut = a.methodRaw, a.headerRaw, a.got, a.cut
	m.bodyInUnit = a.whole
	if !a.whole && a.body.Len() > 0 {
		body := a.body // the assembly is recycled below
		m.body = &body
	}
	budgetCut := a.budgetCut
	d.drop(&d.dirs[dir], u.Channel) // recycles a: its message is taken
	switch {
	case budgetCut:
		u.Warn("message body not kept for display: the memory budget (--max-memory) had no room for it")
	case m.cut:
		u.Warn("message body cut to " + strconv.Itoa(d.opt.MaxMessage) + " bytes for display (max message size)")
	}
	u.Dissect = messageBinder.Bind(&m.bound, m)
}
