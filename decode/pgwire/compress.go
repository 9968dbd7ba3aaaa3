package pgwire

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Frame magic numbers: a payload starting with one begins a new frame, so
// a context lost to corruption or a gap can start over there.
var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	lz4Magic  = []byte{0x04, 0x22, 0x4d, 0x18}
)

// errLimit is returned by the output callback when a container inflates
// past Options.MaxDecompressed.
var errLimit = errors.New("pgsql: decompressed size limit reached")

// compression is the per-connection state of the backend's
// CompressedMessages stream: one streaming decompression context, the
// decompressed stream of inner messages, and the connection's statistics.
type compression struct {
	dec        *Decoder
	negotiated string // startup parameter that offered compression, if seen

	alg    byte
	inf    inflater
	broken string // why the context is unusable, "" when healthy

	asm assembler // decompressed bytes not yet forming a whole message
	// nextStart is the lowest decompressed offset whose message start has
	// not yet been attributed to a container's type string.
	nextStart int64

	// waiting are the containers whose payloads the inflater has and
	// whose messages are not collected yet, oldest first (see container);
	// waitingBytes is what their units hold.
	waiting      []waitingContainer
	waitingBytes int

	// per-container state while inflating
	cur      *decode.Unit
	curT     time.Time
	produced int
	started  []byte
	kids     []*decode.Unit
	kidCount int // messages the current container carried so far
	innerErr string
	// declared queues the type bytes containers declared and no
	// decompressed message has matched yet: a container sent because the
	// output buffer filled declares messages whose bytes come later.
	declared []byte
	mismatch string

	// Memory budget holds: the decompression context (its window), the
	// partial inner message, and the inner units held for the container.
	ctxHold, partHold, kidsHold decode.Hold
	// streamed says the current container was emitted before all its
	// messages were inflated (too many to hold): they follow it as they
	// are inflated.
	streamed bool

	// statistics for the connection report
	containers int
	wire       int64
	inflated   int64
	messages   int
	errors     int
	reported   bool
}

// inflater is a streaming decompression context fed one container payload
// at a time. write calls out with each piece of output as it is produced
// (the slice is valid only during the call); out's error stops it.
type inflater interface {
	write(p []byte, out func([]byte) error) error
	close()
}

func newInflater(alg byte, maxWindow int, async bool) (inflater, error) {
	// maxWindow caps the zstd window (WithDecoderMaxWindow/MaxMemory).
	switch alg {
	case CompressionZstd:
		if async {
			return newAsyncZstd(maxWindow), nil
		}
		return newZstdInflater(maxWindow), nil
	case CompressionLZ4:
		return newLZ4Inflater(), nil
	}
	return nil, errors.New("pgsql: CompressedMessages algorithm " + strconv.Itoa(int(alg)) + " (" + AlgorithmName(alg) + ") is not supported")
}

// lose marks the context unusable (a gap cut a container).
func (c *compression) lose(why string) {
	if c.inf == nil {
		return
	}
	c.inf.close()
	c.inf = nil
	c.broken = why
	c.ctxHold.Release()
	c.dropInner()
}

func (c *compression) dropInner() {
	c.asm.reset()
	c.partHold.Release()
	c.nextStart = c.asm.pos
	c.declared = c.declared[:0]
}

// container handles one CompressedMessages: the container unit is emitted
// first, then every message that completes within it.
//
// With decode.Options.Defer, a zstd context inflates on a goroutine of
// its own (asyncZstd) and a container's messages are collected later:
// its payload is handed to the inflater as it arrives, while up to
// maxWaiting containers before it wait, so that inflating overlaps the
// cutting and emitting of the earlier ones' messages. A container is
// handed over on arrival only when the state it would then meet can be
// told in advance (the context alive, the same algorithm, no new frame:
// its handling could then take no other path); when it is collected,
// every container before it has been, and it is handled exactly as
// without Defer, its payload found inflated already. Anything else
// collects every waiting container first.
func (c *compression) container(raw []byte, pos int64, t time.Time) {
	d := c.dec
	// The unit is made first: its bytes, which live as long as it does,
	// are what the inflater is given.
	u := d.unit(decode.DirB, raw, pos, t, nil)
	u.Type = "CompressedMessages"
	u.Dissect = dissectTyped
	c.containers++
	c.wire += int64(len(raw))
	if z, ok := c.inf.(*asyncZstd); ok && d.opt.Defer != nil {
		var m CompressedMessages
		if m.Decode(u.Raw[HeaderLen:]) == nil && m.Algorithm == c.alg && !bytes.HasPrefix(m.Data, zstdMagic) {
			c.wait(z, m.Data, u, pos, t)
			for len(c.waiting) > maxWaiting || c.waitingBytes > maxWaitingBytes {
				// Part of the pending work: what it emits must not
				// settle the rest first.
				d.opt.Defer.Within(c.collectOldest)
			}
			return
		}
	}
	c.settle()
	c.process(u, pos, t, nil)
}

// maxWaiting is how many containers may wait to be collected: enough
// that the inflater has work queued while the oldest ones are cut, so
// that it seldom sleeps (on a VM a wake-up costs tens of microseconds).
// Their output waits in the inflater's queue (see asyncZstd).
// (A variable for the tests, which make it small.)
var maxWaiting = 32

// maxWaitingBytes bounds what the waiting containers' units hold: a
// container may be as large as --max-buffered, and 32 of them waiting
// would hold 32 times that, outside the memory budget. (A variable for
// the tests.)
var maxWaitingBytes = 4 << 20

// process handles a container whose unit u is made: as it arrives, or,
// when it waited, as it is collected (z: the inflater that has its
// payload). The first container of a context is never one that waits.
func (c *compression) process(u *decode.Unit, pos int64, t time.Time, z *asyncZstd) {
	d := c.dec
	ds := &d.dir[decode.DirB]
	var m CompressedMessages
	if err := m.Decode(u.Raw[HeaderLen:]); err != nil {
		u.SetErr(err.Error())
		u.Summary = "CompressedMessages: " + u.Err()
		c.errors++
		d.put(ds, u)
		return
	}
	u.Summary = "CompressedMessages " + AlgorithmName(m.Algorithm) + " \"" + string(m.Types) + "\" " + strconv.Itoa(len(m.Data)) + " bytes"

	newFrame := (m.Algorithm == CompressionZstd && bytes.HasPrefix(m.Data, zstdMagic)) ||
		(m.Algorithm == CompressionLZ4 && bytes.HasPrefix(m.Data, lz4Magic))
	if c.inf != nil && m.Algorithm != c.alg {
		// The client may switch algorithms within a session; the old
		// frame cannot continue.
		if c.asm.buffered() > 0 {
			u.Warn("pgsql: algorithm changed from " + AlgorithmName(c.alg) + " to " + AlgorithmName(m.Algorithm) + " with a message left incomplete")
		}
		c.inf.close()
		c.inf = nil
		c.ctxHold.Release()
		c.dropInner()
	}
	if c.inf == nil {
		if c.broken != "" && !newFrame {
			u.SetErr("pgsql: CompressedMessages not decompressed: the " + AlgorithmName(m.Algorithm) + " context was lost (" + c.broken + ") and this payload does not start a new frame")
			c.errors++
			d.put(ds, u)
			return
		}
		if why := c.chargeContext(m.Algorithm, m.Data); why != "" {
			u.SetErr(why)
			c.errors++
			c.broken = why
			d.put(ds, u)
			return
		}
		inf, err := newInflater(m.Algorithm, c.maxWindow(), d.opt.Defer != nil)
		if err != nil {
			c.ctxHold.Release()
			u.SetErr(err.Error())
			c.errors++
			d.put(ds, u)
			return
		}
		if c.broken != "" {
			u.Warn("pgsql: decompression restarts at a new frame after: " + c.broken)
		}
		c.inf, c.alg, c.broken = inf, m.Algorithm, ""
		c.dropInner()
	}

	if newFrame && c.inf != nil {
		// A new frame within the context may ask for a larger window.
		if why := c.chargeContext(m.Algorithm, m.Data); why != "" {
			u.SetErr(why)
			c.errors++
			c.lose(why)
			d.put(ds, u)
			return
		}
	}

	c.cur, c.curT, c.produced, c.started, c.kids, c.innerErr, c.streamed = u, t, 0, c.started[:0], c.kids[:0], "", false
	c.kidCount = 0
	if len(c.declared)+len(m.Types) > 1<<16 {
		c.declared = c.declared[:0]
	}
	c.declared = append(c.declared, m.Types...)
	c.ctxHold.Busy, c.partHold.Busy, c.kidsHold.Busy = true, true, true
	var err error
	// A caller that keeps units for long (the TUI's store) gets copies:
	// a unit it keeps would keep a whole chunk.
	_, async := c.inf.(*asyncZstd)
	d.inflatedKept = async && d.opt.Transient
	if z != nil && c.inf == z {
		// Its payload is queued in the context (when the context was
		// lost meanwhile, the paths above told so, as they would have
		// without Defer).
		err = z.collect(c.output)
	} else {
		err = c.inf.write(m.Data, c.output)
	}
	d.inflatedKept = false
	c.finish(u, err, pos, m.Algorithm)
}

// waitingContainer is a container whose payload was handed to the
// inflater and whose messages are yet to be collected.
type waitingContainer struct {
	u   *decode.Unit
	pos int64
	t   time.Time
	at  int64 // the backend stream's position when it arrived
	z   *asyncZstd
}

// wait hands a container's payload to z and queues the container to be
// collected, telling the pipeline so when it is the first.
func (c *compression) wait(z *asyncZstd, payload []byte, u *decode.Unit, pos int64, t time.Time) {
	if len(c.waiting) == 0 {
		c.dec.opt.Defer.Defer(c.collectAll)
	}
	z.submit(payload)
	c.waiting = append(c.waiting, waitingContainer{u: u, pos: pos, t: t, at: c.dec.dir[decode.DirB].s.Pos, z: z})
	c.waitingBytes += len(u.Raw)
	// Nothing charged for the waiting state may be taken back by the
	// budget before it is collected.
	c.ctxHold.Busy, c.partHold.Busy, c.kidsHold.Busy = true, true, true
}

// settle collects every waiting container: their messages come before
// anything else the connection emits, and may change what follows (the
// types declared, the context's health).
func (c *compression) settle() {
	if len(c.waiting) > 0 {
		c.dec.opt.Defer.Settle()
	}
}

func (c *compression) collectAll() {
	for len(c.waiting) > 0 {
		c.collectOldest()
	}
}

// collectOldest collects the oldest waiting container, with the time and
// the stream position it arrived at, which the warnings it may emit
// carry.
func (c *compression) collectOldest() {
	w := c.waiting[0]
	c.waiting[0] = waitingContainer{} // the unit is not kept from the collector
	c.waiting = c.waiting[1:]
	c.waitingBytes -= len(w.u.Raw)
	d := c.dec
	ds := &d.dir[decode.DirB]
	last, at := d.last, ds.s.Pos
	d.last, ds.s.Pos = w.t, w.at
	c.process(w.u, w.pos, w.t, w.z)
	d.last, ds.s.Pos = last, at
	busy := len(c.waiting) > 0
	c.ctxHold.Busy, c.partHold.Busy, c.kidsHold.Busy = busy, busy, busy
}

// overlaps reports whether b, next in dir's stream, starts with what may
// be parsed while containers wait: a CompressedMessages, which is either
// whole (container decides) or only buffered until it is; or a message
// header not yet whole, which is only buffered. Anything else may depend
// on, or change, what collecting decides. (Buffering charges the memory
// budget for the message before the waiting containers' messages are
// charged: when the budget is nearly spent, what it takes back first
// may differ from a decoder that does not defer.)
func (c *compression) overlaps(dir decode.Dir, ds *dirState, b []byte) bool {
	d := c.dec
	if dir != decode.DirB || ds.mode != modeTyped || (d.pending != reqNone && ds.units == 0) {
		return false
	}
	typ, length, ok := ReadHeader(b)
	if !ok {
		return true
	}
	return typ == TypeCompressedMessages && length >= 4 && length <= int64(d.opt.MaxFrame) && length < int64(d.opt.MaxBuffered)
}

// finish ends a container once its payload is inflated (err: how that
// ended) and emits it and the messages it carried.
func (c *compression) finish(u *decode.Unit, err error, pos int64, alg byte) {
	d := c.dec
	ds := &d.dir[decode.DirB]
	c.ctxHold.Busy, c.partHold.Busy, c.kidsHold.Busy = false, false, false
	if c.streamed {
		c.finishStreamed(u, err, pos)
		return
	}
	switch {
	case err == errLimit:
		u.SetErr("pgsql: CompressedMessages inflates past " + strconv.Itoa(d.opt.MaxDecompressed) + " bytes (--max-decompressed): decompression stopped at offset " + strconv.FormatInt(pos, 10) + " (possible decompression bomb)")
	case err != nil && c.innerErr != "":
		u.SetErr(c.innerErr)
	case err != nil:
		u.SetErr("pgsql: corrupt " + AlgorithmName(alg) + " payload in CompressedMessages at offset " + strconv.FormatInt(pos, 10) + ": " + err.Error())
	}
	c.inflated += int64(c.produced)
	if err != nil {
		c.errors++
		c.lose(u.Err())
	}
	if c.mismatch != "" {
		u.Warn(c.mismatch)
		c.mismatch = ""
	}
	u.Summary += ", " + strconv.Itoa(c.produced) + " bytes inflated, " + strconv.Itoa(len(c.kids)) + " message"
	if len(c.kids) != 1 {
		u.Summary += "s"
	}
	d.put(ds, u)
	c.emitKids()
	c.cur = nil
}

// emitKids emits the inner units held for the current container and
// gives their charge back.
func (c *compression) emitKids() {
	for i, k := range c.kids {
		c.dec.dir[decode.DirB].units++
		c.dec.emit(k)
		c.kids[i] = nil
	}
	c.kids = c.kids[:0]
	c.kidsHold.Release()
}

// stream emits the current container before its messages are all
// inflated, then the messages held so far; the rest follow as they come.
// The container says so instead of counting them; the end of the
// container is marked by a warning only when something went wrong after
// it was emitted.
func (c *compression) stream(why string) {
	u := c.cur
	u.Summary += ", inflating: its messages follow it as they are inflated (" + why + ")"
	u.Warn("pgsql: CompressedMessages not held until its messages are all inflated (" + why + "); the connection's compression report counts them")
	c.streamed = true
	c.dec.put(&c.dec.dir[decode.DirB], u)
	c.emitKids()
}

// finishStreamed ends a container that was emitted before its end.
func (c *compression) finishStreamed(u *decode.Unit, err error, pos int64) {
	d := c.dec
	c.inflated += int64(c.produced)
	if err != nil {
		msg := c.innerErr
		switch {
		case err == errLimit:
			msg = "pgsql: CompressedMessages inflates past " + strconv.Itoa(d.opt.MaxDecompressed) + " bytes (--max-decompressed): decompression stopped at offset " + strconv.FormatInt(pos, 10) + " (possible decompression bomb)"
		case msg == "":
			msg = "pgsql: corrupt " + AlgorithmName(c.alg) + " payload in CompressedMessages at offset " + strconv.FormatInt(pos, 10) + ": " + err.Error()
		}
		c.errors++
		c.lose(msg)
		d.warning(decode.DirB, "CompressedMessages ends in error after "+strconv.Itoa(c.kidCount)+" messages", msg+" (after "+strconv.Itoa(c.kidCount)+" of its messages)")
	}
	if c.mismatch != "" {
		d.warning(decode.DirB, "CompressedMessages: declared message types disagree", c.mismatch)
		c.mismatch = ""
	}
	c.cur = nil
}

// noteStart records the type byte of a message starting at decompressed
// offset pos, once.
func (c *compression) noteStart(pos int64, typ byte) {
	if pos < c.nextStart {
		return
	}
	c.started = append(c.started, typ)
	c.nextStart = pos + 1
	if len(c.declared) > 0 && c.declared[0] == typ {
		c.declared = c.declared[1:]
		return
	}
	if c.mismatch == "" {
		c.mismatch = "pgsql: a " + MessageName(typ, false) + " starts in this CompressedMessages but the declared message types " +
			"(\"" + string(c.declared) + "\" pending) do not list it next"
	}
	c.declared = c.declared[:0]
}

// checkDeclared is called when an uncompressed backend message arrives:
// the compressor was flushed, so every declared type must have appeared.
func (c *compression) checkDeclared(u *decode.Unit) {
	if len(c.declared) == 0 || c.inf == nil {
		return
	}
	u.Warn("pgsql: earlier CompressedMessages declared message types \"" + string(c.declared) + "\" that their payloads did not hold")
	c.declared = c.declared[:0]
}

// assembler cuts the decompressed stream into messages. A message that
// spans pieces of output is gathered in a buffer of exactly its size,
// which then becomes its unit's Raw without another copy.
type assembler struct {
	pos   int64 // decompressed offset of the next byte
	start int64 // offset of the message being gathered
	hdr   [HeaderLen]byte
	nh    int    // header bytes gathered (no body buffer yet)
	part  []byte // message being gathered, cap = its size
	skip  int64  // bytes left of a message the budget dropped
}

func (a *assembler) buffered() int { return a.nh + len(a.part) }

func (a *assembler) reset() { a.nh, a.part, a.skip = 0, nil, 0 }

// header validates a message header found in the decompressed stream.
func (c *compression) header(b []byte, pos int64) (int, error) {
	d := c.dec
	typ, l, _ := ReadHeader(b)
	if !ValidType(typ, false) || typ == TypeCompressedMessages || l < 4 || l > int64(d.opt.MaxFrame) {
		c.innerErr = "pgsql: decompressed stream holds no valid message at decompressed offset " + strconv.FormatInt(pos, 10) +
			" (type 0x" + strconv.FormatUint(uint64(typ), 16) + ", length " + strconv.FormatInt(l, 10) + ")"
		return 0, errCorruptInner
	}
	return int(l) + 1, nil
}

func (c *compression) kid(raw []byte, pos int64, own bool) {
	k := c.dec.message(decode.DirB, raw, pos, c.curT, c.cur, own)
	if NeverCompressed(raw[0]) {
		k.Warn("pgsql: " + k.Type + " arrived compressed; the compression proposal always sends it uncompressed")
	}
	c.messages++
	c.kidCount++
	if c.streamed {
		c.dec.dir[decode.DirB].units++
		c.dec.emit(k)
		return
	}
	switch {
	case len(c.kids) >= maxHeldKids:
		c.stream("more than " + strconv.Itoa(maxHeldKids) + " messages")
	case !c.kidsHold.Grow(c.dec.acct, c, int64(kidCharge+len(raw))):
		c.stream("the memory budget has no room to hold them")
	default:
		c.kids = append(c.kids, k)
		return
	}
	c.dec.dir[decode.DirB].units++
	c.dec.emit(k)
}

// output receives decompressed bytes of the current container and cuts
// them into messages.
func (c *compression) output(p []byte) error {
	d := c.dec
	a := &c.asm
	if c.produced+len(p) > d.opt.MaxDecompressed {
		c.produced = d.opt.MaxDecompressed
		return errLimit
	}
	c.produced += len(p)
	for len(p) > 0 {
		if a.skip > 0 {
			// The rest of a message the budget dropped.
			n := int(min(a.skip, int64(len(p))))
			a.skip -= int64(n)
			p = p[n:]
			a.pos += int64(n)
			continue
		}
		if a.part == nil && a.nh == 0 {
			start := a.pos
			c.noteStart(start, p[0])
			a.start = start
			if len(p) < HeaderLen {
				a.nh = copy(a.hdr[:], p)
				a.pos += int64(len(p))
				return nil
			}
			total, err := c.header(p, start)
			if err != nil {
				return err
			}
			if total <= len(p) {
				c.kid(p[:total], start, false)
				p = p[total:]
				a.pos += int64(total)
				continue
			}
			if total > d.opt.MaxBuffered {
				return c.tooLarge(p[0], total)
			}
			if !c.partHold.Grow(d.acct, c, int64(total)) {
				return c.refused(p[0], total)
			}
			a.part = make([]byte, len(p), total)
			copy(a.part, p)
			a.pos += int64(len(p))
			return nil
		}
		if a.part == nil {
			n := copy(a.hdr[a.nh:], p)
			a.nh += n
			p = p[n:]
			a.pos += int64(n)
			if a.nh < HeaderLen {
				return nil
			}
			total, err := c.header(a.hdr[:], a.start)
			if err != nil {
				return err
			}
			if total > d.opt.MaxBuffered {
				return c.tooLarge(a.hdr[0], total)
			}
			if !c.partHold.Grow(d.acct, c, int64(total)) {
				return c.refused(a.hdr[0], total)
			}
			a.part = append(make([]byte, 0, total), a.hdr[:]...)
			a.nh = 0
		}
		n := min(cap(a.part)-len(a.part), len(p))
		a.part = append(a.part, p[:n]...)
		p = p[n:]
		a.pos += int64(n)
		if len(a.part) == cap(a.part) {
			part := a.part
			a.part = nil
			c.partHold.Release()
			c.kid(part, a.start, true)
		}
	}
	return nil
}

func (c *compression) tooLarge(typ byte, total int) error {
	c.innerErr = "pgsql: compressed " + MessageName(typ, false) + " of " + strconv.Itoa(total) + " bytes exceeds the buffering limit of " + strconv.Itoa(c.dec.opt.MaxBuffered) + " bytes (--max-buffered)"
	return errCorruptInner
}

func (c *compression) refused(typ byte, total int) error {
	c.innerErr = "pgsql: compressed " + MessageName(typ, false) + " of " + strconv.Itoa(total) + " bytes not reassembled: the memory budget (--max-memory) has no room for it"
	return errCorruptInner
}

var errCorruptInner = errors.New("pgsql: corrupt decompressed stream")

// end closes the context and adds the connection's compression report.
func (c *compression) end(t time.Time) {
	d := c.dec
	if c.inf != nil {
		c.inf.close()
		c.inf = nil
	}
	c.ctxHold.Release()
	c.partHold.Release()
	c.kidsHold.Release()
	if c.containers == 0 || d.conn == nil || c.reported {
		return
	}
	c.reported = true
	var b []byte
	b = append(b, "pgsql compression: "...)
	b = append(b, AlgorithmName(c.alg)...)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(c.containers), 10)
	b = append(b, " CompressedMessages carrying "...)
	b = strconv.AppendInt(b, int64(c.messages), 10)
	b = append(b, " messages: "...)
	b = strconv.AppendInt(b, c.wire, 10)
	b = append(b, " bytes on the wire, "...)
	b = strconv.AppendInt(b, c.inflated, 10)
	b = append(b, " decompressed"...)
	if c.wire > 0 {
		b = append(b, ", ratio "...)
		b = strconv.AppendFloat(b, float64(c.inflated)/float64(c.wire), 'f', 2, 64)
	}
	if c.errors > 0 {
		b = append(b, ", "...)
		b = strconv.AppendInt(b, int64(c.errors), 10)
		b = append(b, " containers not decoded"...)
	}
	if c.negotiated != "" {
		b = append(b, "; offered by "...)
		b = append(b, c.negotiated...)
	}
	d.conn.Notes = append(d.conn.Notes, string(b))
	if n := c.asm.buffered(); n > 0 {
		d.conn.Notes = append(d.conn.Notes, "pgsql compression: "+strconv.Itoa(n)+" decompressed bytes of an incomplete message left at end of stream")
	}
}
