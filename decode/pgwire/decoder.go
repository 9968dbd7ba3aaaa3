package pgwire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Startup-phase request codes.
const (
	codeCancel       = 80877102
	codeSSLRequest   = 80877103
	codeGSSENCRequst = 80877104
)

// maxStartupLen bounds an untyped startup packet, as the postmaster does
// (MAX_STARTUP_PACKET_LENGTH).
const maxStartupLen = 10000

// keepOversized is how much of a message too large to buffer is kept in
// its unit.
const keepOversized = 64 << 10

type mode uint8

const (
	modeTyped     mode = iota
	modeUntyped        // frontend startup phase: length-prefixed packets without type byte
	modeResync         // looking for a message boundary after a gap or garbage
	modeSkip           // discarding the rest of a message too large to buffer
	modeEncrypted      // TLS or GSSAPI: counted, not decoded
)

type request uint8

const (
	reqNone request = iota
	reqSSL
	reqGSS
)

type dirState struct {
	s        decode.Stream
	mode     mode
	skipLeft int64
	// skipped counts bytes passed over while resynchronising; the next
	// unit carries a warning about them.
	skipped   int64
	resynced  bool
	midStream bool // no startup packet: the capture began mid-connection
	// encrypted-stream bookkeeping
	encKind  string
	encBytes int64
	encStart int64
	units    int
}

// Decoder is the per-connection PostgreSQL decoder. Build it with [New].
//
// A connection whose backend sends CompressedMessages holds a streaming
// decompression context (for zstd, a coroutine, or with
// decode.Options.Defer a goroutine of its own) until End is called for
// the backend direction: the pipeline must end every connection it
// drops.
type Decoder struct {
	conn *decode.Conn
	opt  decode.Options
	emit decode.Emit

	dir [2]dirState

	pending  request // SSL or GSS request awaiting its one-byte answer
	accepted request // request the server accepted: the frontend switches too
	// authCode is the last Authentication request; it says what a
	// frontend 'p' message is.
	authCode int32
	// copyBoth is set between CopyBothResponse and ReadyForQuery: CopyData
	// then carries replication messages.
	copyBoth bool

	comp compression
	// acct is the connection's part of the memory budget (nil: none).
	acct *decode.Account
	// last is the time of the latest bytes fed.
	last time.Time

	slab []byte
	// slabNext is the size of the last slab allocated (doubling to 32 KiB).
	slabNext int
	// units is the unit slab, unitsUsed how many of it are handed out
	// (an index rather than the slab resliced: a slice stored for every
	// unit is a pointer written, with a write barrier while the
	// collector runs); unitsNext the size of the last one.
	units                []decode.Unit
	unitsUsed, unitsNext int
	// in is the buffer being parsed, and how its units keep their bytes
	// (see Options.StableInput): ref, as slices of it (the caller's
	// stable input); take, the stream's buffer holding exactly one
	// message, as that buffer (see unitOwned).
	in        []byte
	ref, take bool
	// inflatedKept says the decompressed bytes being cut into messages
	// are never written again (asyncZstd's chunks) and the caller lets
	// go of units soon (Options.Transient): the messages keep them as
	// their bytes instead of copying them.
	inflatedKept bool
}

var (
	_ decode.Decoder = (*Decoder)(nil)
	_ decode.Factory = New
)

// New is the [decode.Factory] for PostgreSQL connections.
func New(c *decode.Conn, opt *decode.Options, emit decode.Emit) decode.Decoder {
	d := &Decoder{conn: c, emit: emit}
	if opt != nil {
		d.opt = *opt
	}
	def := decode.DefaultOptions()
	if d.opt.MaxFrame <= 0 {
		d.opt.MaxFrame = def.MaxFrame
	}
	if d.opt.MaxBuffered <= 0 {
		d.opt.MaxBuffered = def.MaxBuffered
	}
	if d.opt.MaxDecompressed <= 0 {
		d.opt.MaxDecompressed = def.MaxDecompressed
	}
	d.dir[decode.DirF].mode = modeUntyped
	// A message gathered across segments is gathered in a buffer that
	// an earlier one, released, owned (see unitOf).
	d.dir[decode.DirF].s.Arena, d.dir[decode.DirB].s.Arena = d.opt.Arena, d.opt.Arena
	d.comp.dec = d
	d.acct = d.opt.Budget.NewAccount()
	return d
}

// Feed implements [decode.Decoder].
func (d *Decoder) Feed(dir decode.Dir, data []byte, t time.Time) {
	if dir&1 == decode.DirF {
		d.comp.settle()
	}
	if d.opt.StableInput {
		// The message a previous call left incomplete is completed on
		// its own, so that the messages after it are parsed in data
		// itself.
		if head, rest := d.dir[dir&1].s.Split(data); len(head) > 0 && d.completes(dir&1) {
			d.feed(dir, head, t)
			data = rest
		}
	}
	d.feed(dir, data, t)
}

// completes reports whether the message buffered for dir is one that
// parse takes whole once its bytes are there, as it would have with
// what follows them: a typed message (not a one-byte answer to an
// SSLRequest or GSSENCRequest sent since) with a valid header.
func (d *Decoder) completes(dir decode.Dir) bool {
	ds := &d.dir[dir]
	b := ds.s.Peek()
	if ds.mode != modeTyped || (dir == decode.DirB && d.pending != reqNone && ds.units == 0) {
		return false
	}
	typ, length, ok := ReadHeader(b)
	return ok && ValidType(typ, dir == decode.DirF) && length >= 4 && length <= int64(d.opt.MaxFrame)
}

func (d *Decoder) feed(dir decode.Dir, data []byte, t time.Time) {
	defer d.done()
	d.last = t
	ds := &d.dir[dir&1]
	for len(data) > 0 {
		switch ds.mode {
		case modeEncrypted:
			ds.encBytes += int64(len(data))
			ds.s.Pos += int64(len(data))
			return
		case modeSkip:
			n := int64(len(data))
			if n > ds.skipLeft {
				n = ds.skipLeft
			}
			ds.skipLeft -= n
			ds.s.Pos += n
			data = data[n:]
			if ds.skipLeft == 0 {
				ds.mode = modeTyped
			}
			continue
		}
		stable := d.opt.StableInput && ds.s.Buffered() == 0
		buf := ds.s.Push(data)
		d.in, d.ref, d.take = buf, stable, d.opt.StableInput && !stable
		n := d.parse(dir&1, buf, t)
		tail := buf[n:]
		switch ds.mode {
		case modeEncrypted:
			// The rest of the buffer is the start of the encrypted stream.
			ds.encBytes += int64(len(tail))
			ds.s.Keep(len(buf), nil)
			return
		case modeSkip:
			// oversized consumed the whole buffer.
			ds.s.Keep(n, nil)
			return
		}
		ds.s.Keep(n, tail)
		return
	}
}

// Gap implements [decode.Decoder].
func (d *Decoder) Gap(dir decode.Dir, n int, t time.Time) {
	d.comp.settle()
	ds := &d.dir[dir&1]
	if ds.mode == modeEncrypted {
		if n > 0 {
			ds.encBytes += int64(n)
			ds.s.Pos += int64(n)
		}
		return
	}
	skip := int64(n)
	if skip < 0 {
		skip = 0
	}
	ds.s.Reset(skip)
	ds.mode = modeResync
	ds.skipLeft = 0
	ds.resynced = true
	if dir&1 == decode.DirB {
		// Part of a CompressedMessages may be lost: the compression
		// context cannot continue until a new frame starts.
		d.comp.lose("a gap in the backend stream")
	}
}

// End implements [decode.Decoder].
func (d *Decoder) End(dir decode.Dir, t time.Time) {
	d.comp.settle()
	d.last = t
	dir &= 1
	ds := &d.dir[dir]
	switch ds.mode {
	case modeEncrypted:
		d.emitEncrypted(dir, t)
	case modeSkip:
		ds.mode = modeTyped
	default:
		if rest := ds.s.Push(nil); len(rest) > 0 && ds.mode != modeResync {
			u := d.unit(dir, rest, ds.s.Pos, t, nil)
			u.Type = "Truncated"
			if typ, l, ok := ReadHeader(rest); ok && ds.mode == modeTyped {
				u.Type = d.name(dir, typ)
				u.SetErr("pgsql: " + u.Type + " truncated: " + strconv.Itoa(len(rest)) + " of " + strconv.FormatInt(l+1, 10) + " bytes at end of stream")
			} else {
				u.SetErr("pgsql: " + strconv.Itoa(len(rest)) + " bytes left at end of stream, not a whole message")
			}
			u.Summary = u.Err()
			d.put(ds, u)
		}
		ds.s.Reset(0)
	}
	if dir == decode.DirB {
		d.comp.end(t)
	}
}

func (d *Decoder) emitEncrypted(dir decode.Dir, t time.Time) {
	ds := &d.dir[dir]
	u := &decode.Unit{
		Conn: d.conn, Dir: dir, Proto: decode.ProtoPgSQL,
		Type: ds.encKind, Offset: ds.encStart, Len: int(ds.encBytes),
		Summary: ds.encKind + " encrypted stream, " + strconv.FormatInt(ds.encBytes, 10) + " bytes not decoded",
		Dissect: dissectEncrypted,
	}
	u.SetTime(t)
	ds.encBytes = 0
	d.emit(u)
}

func (d *Decoder) encrypt(dir decode.Dir, kind string, off int64) {
	ds := &d.dir[dir]
	ds.mode = modeEncrypted
	ds.encKind = kind
	ds.encStart = off
	if d.conn != nil {
		d.conn.Notes = append(d.conn.Notes, "pgsql: "+dir.String()+" stream switched to "+kind+" at offset "+strconv.FormatInt(off, 10)+"; its messages are not visible")
	}
}

// parse consumes whole units from the front of buf and returns how many
// bytes it consumed. It may change the direction's mode.
func (d *Decoder) parse(dir decode.Dir, buf []byte, t time.Time) int {
	ds := &d.dir[dir]
	off := 0
	for off < len(buf) {
		if len(d.comp.waiting) > 0 && !d.comp.overlaps(dir, ds, buf[off:]) {
			d.comp.settle()
		}
		pos := ds.s.Pos + int64(off)
		switch ds.mode {
		case modeEncrypted, modeSkip:
			return off
		case modeUntyped:
			n, ok := d.untyped(buf[off:], pos, t)
			if !ok {
				return off
			}
			off += n
		case modeResync:
			n, found := d.resync(dir, buf[off:])
			off += n
			ds.skipped += int64(n)
			if !found {
				return off
			}
			ds.mode = modeTyped
		default:
			b := buf[off:]
			if dir == decode.DirB && d.pending != reqNone && ds.units == 0 {
				if b[0] == 'S' || b[0] == 'N' || b[0] == 'G' {
					d.answer(b[0], pos, t)
					off++
					continue
				}
			}
			typ, length, ok := ReadHeader(b)
			if !ok {
				return off
			}
			if !ValidType(typ, dir == decode.DirF) || length < 4 || length > int64(d.opt.MaxFrame) {
				u := d.unit(dir, b[:HeaderLen], pos, t, nil)
				u.Type = d.name(dir, typ)
				if !ValidType(typ, dir == decode.DirF) {
					u.SetErr("pgsql: unknown " + dirWord(dir) + " message type 0x" + strconv.FormatUint(uint64(typ), 16) + " at offset " + strconv.FormatInt(pos, 10) + "; resynchronising")
				} else {
					u.SetErr("pgsql: " + u.Type + " length " + strconv.FormatInt(length, 10) + " is outside 4.." + strconv.Itoa(d.opt.MaxFrame) + " at offset " + strconv.FormatInt(pos, 10) + "; resynchronising")
				}
				u.Summary = u.Err()
				d.put(ds, u)
				ds.mode = modeResync
				ds.resynced = true
				off++
				ds.skipped = -int64(HeaderLen) + 1 // the reported header is not "skipped"
				continue
			}
			total := int(length) + 1
			if total > len(b) {
				if total > d.opt.MaxBuffered {
					d.oversized(dir, b, pos, total, t, "exceeds the buffering limit of "+strconv.Itoa(d.opt.MaxBuffered)+" bytes (--max-buffered)")
					return len(buf)
				}
				// The buffer grows to the whole message: reserve that.
				if !ds.s.Reserve(d.acct, total) {
					d.oversized(dir, b, pos, total, t, "is not buffered: the memory budget (--max-memory) has no room for it")
					return len(buf)
				}
				ds.s.Want(total)
				return off
			}
			d.typed(dir, b[:total], pos, t)
			off += total
		}
	}
	return off
}

func dirWord(dir decode.Dir) string {
	if dir == decode.DirF {
		return "frontend"
	}
	return "backend"
}

// oversized emits a message whose declared length exceeds the buffering
// limit, keeping its start, and skips the rest.
func (d *Decoder) oversized(dir decode.Dir, b []byte, pos int64, total int, t time.Time, why string) {
	ds := &d.dir[dir]
	keep := b
	if len(keep) > keepOversized {
		keep = keep[:keepOversized]
	}
	u := d.unit(dir, keep, pos, t, nil)
	u.Type = d.name(dir, b[0])
	u.Len = total
	u.Summary = u.Type + ": " + strconv.Itoa(total) + " bytes (body not kept)"
	u.Warn("pgsql: message of " + strconv.Itoa(total) + " bytes " + why + "; only its first " + strconv.Itoa(len(keep)) + " bytes are kept")
	d.put(ds, u)
	ds.mode = modeSkip
	ds.skipLeft = int64(total - len(b))
	if ds.skipLeft == 0 {
		ds.mode = modeTyped
	}
}

// untyped handles the frontend's startup phase: StartupMessage,
// SSLRequest, GSSENCRequest, CancelRequest, or the start of an encrypted
// stream. ok is false when more bytes are needed.
func (d *Decoder) untyped(b []byte, pos int64, t time.Time) (int, bool) {
	ds := &d.dir[decode.DirF]
	if d.accepted != reqNone || (len(b) >= 2 && b[0] == 0x16 && b[1] == 0x03) {
		// TLS handshake record (direct SSL negotiation, or after 'S').
		kind := "TLS"
		if d.accepted == reqGSS {
			kind = "GSSAPI"
		}
		d.encrypt(decode.DirF, kind, pos)
		return 0, true
	}
	if len(b) < 8 {
		return 0, false
	}
	n := int64(binary.BigEndian.Uint32(b))
	code := binary.BigEndian.Uint32(b[4:])
	kind := ""
	switch {
	case code == codeSSLRequest && n == 8:
		kind = "SSLRequest"
	case code == codeGSSENCRequst && n == 8:
		kind = "GSSENCRequest"
	case code == codeCancel && n >= 16 && n <= 12+256:
		kind = "CancelRequest"
	case code>>16 == 3 && n >= 9 && n <= maxStartupLen:
		kind = "StartupMessage"
	}
	if kind == "" {
		if d.pending == reqGSS {
			// GSSAPI-wrapped packets follow an accepted GSSENCRequest.
			d.encrypt(decode.DirF, "GSSAPI", pos)
			return 0, true
		}
		// Not a startup packet: the capture began mid-connection.
		ds.mode = modeResync
		ds.resynced = true
		ds.midStream = true
		return 0, true
	}
	if int64(len(b)) < n {
		return 0, false
	}
	u := d.unit(decode.DirF, b[:n], pos, t, nil)
	u.Type = kind
	u.Dissect = dissectUntyped
	switch kind {
	case "SSLRequest":
		d.pending = reqSSL
		u.Summary = "SSLRequest"
	case "GSSENCRequest":
		d.pending = reqGSS
		u.Summary = "GSSENCRequest"
	case "CancelRequest":
		var m CancelRequest
		if err := m.Decode(u.Raw[4:]); err != nil {
			u.SetErr(err.Error())
		}
		u.Summary = "CancelRequest: process " + strconv.FormatUint(uint64(m.ProcessID), 10)
	case "StartupMessage":
		var m StartupMessage
		if err := m.Decode(u.Raw[4:]); err != nil {
			u.SetErr(err.Error())
		}
		var sb []byte
		sb = append(sb, "StartupMessage "...)
		sb = strconv.AppendUint(sb, uint64(m.ProtocolVersion>>16), 10)
		sb = append(sb, '.')
		sb = strconv.AppendUint(sb, uint64(m.ProtocolVersion&0xffff), 10)
		for _, p := range m.Params {
			if string(p.Name) == "user" || string(p.Name) == "database" || string(p.Name) == "application_name" {
				sb = append(sb, ' ')
				sb = append(sb, p.Name...)
				sb = append(sb, '=')
				sb = append(sb, p.Value...)
			}
			if bytes.HasPrefix(p.Name, []byte("_pq_.")) && bytes.Contains(p.Name, []byte("compress")) {
				d.comp.negotiated = string(p.Name) + "=" + string(p.Value)
			}
		}
		u.Summary = string(sb)
		ds.mode = modeTyped
	}
	d.put(ds, u)
	return int(n), true
}

// answer handles the backend's one-byte reply to SSLRequest/GSSENCRequest.
func (d *Decoder) answer(c byte, pos int64, t time.Time) {
	req := d.pending
	d.pending = reqNone
	u := d.unit(decode.DirB, []byte{c}, pos, t, nil)
	u.Dissect = dissectAnswer
	if req == reqGSS {
		u.Type = "GSSENCResponse"
	} else {
		u.Type = "SSLResponse"
	}
	switch c {
	case 'S':
		u.Summary = u.Type + ": S (accepted, TLS follows)"
		d.accepted = reqSSL
	case 'G':
		u.Summary = u.Type + ": G (accepted, GSSAPI encryption follows)"
		d.accepted = reqGSS
	default:
		u.Summary = u.Type + ": N (refused)"
	}
	d.emit(u)
	switch c {
	case 'S':
		d.encrypt(decode.DirB, "TLS", pos+1)
	case 'G':
		d.encrypt(decode.DirB, "GSSAPI", pos+1)
	}
}

// resync looks for a plausible message boundary: a type byte valid for the
// direction, a plausible length, and the next header plausible too (or
// the message ending exactly where the data does). It returns how many
// bytes to skip and whether a boundary was found there.
func (d *Decoder) resync(dir decode.Dir, b []byte) (int, bool) {
	fe := dir == decode.DirF
	max := int64(d.opt.MaxFrame)
	for i := 0; i+HeaderLen <= len(b); i++ {
		typ, l, _ := ReadHeader(b[i:])
		if !ValidType(typ, fe) || !plausibleLength(typ, l, fe, max) {
			continue
		}
		next := i + 1 + int(l)
		switch {
		case next == len(b):
			return i, true
		case next+HeaderLen <= len(b):
			t2, l2, _ := ReadHeader(b[next:])
			if ValidType(t2, fe) && plausibleLength(t2, l2, fe, max) {
				return i, true
			}
		case l <= 64<<10:
			// Wait for the next header to confirm this candidate.
			return i, false
		}
	}
	n := len(b) - (HeaderLen - 1)
	if n < 0 {
		n = 0
	}
	return n, false
}

// name returns the unit type of a typed message.
func (d *Decoder) name(dir decode.Dir, typ byte) string {
	return MessageName(typ, dir == decode.DirF)
}

// unit builds a unit whose Raw is a copy of raw, carved from a slab so
// that small messages do not cost an allocation each.
func (d *Decoder) unit(dir decode.Dir, raw []byte, pos int64, t time.Time, parent *decode.Unit) *decode.Unit {
	return d.unitOwned(dir, raw, pos, t, parent, false)
}

// done ends the parse of the buffer feed gave the units.
func (d *Decoder) done() { d.in, d.ref, d.take = nil, false, false }

// unitOwned is unit, taking raw over without copying when own is set.
// Bytes of the buffer being parsed (parent nil) are kept as they are when
// that is stable input, and the stream's buffer is taken over when it is
// all one large message (a Feed completed it on its own: the buffer is
// never used again); a message whose secret message redacts in Raw
// (copy) is copied.
func (d *Decoder) unitOwned(dir decode.Dir, raw []byte, pos int64, t time.Time, parent *decode.Unit, own bool) *decode.Unit {
	return d.unitOf(dir, raw, pos, t, parent, own, false)
}

func (d *Decoder) unitOf(dir decode.Dir, raw []byte, pos int64, t time.Time, parent *decode.Unit, own, copied bool) *decode.Unit {
	var cp []byte
	alone := false // the unit is allocated alone (its bytes are its own)
	switch {
	case own:
		cp, alone = raw, true
	case !copied && (parent == nil && d.ref || parent != nil && d.inflatedKept):
		cp = raw[:len(raw):len(raw)]
	case parent == nil && !copied && d.take && len(raw) > 2048 && len(raw) == len(d.in) && &raw[0] == &d.in[0]:
		cp, alone = d.dir[dir&1].s.Take(), true
	case len(raw) > 2048:
		cp, alone = append(d.opt.Arena.Bytes(len(raw)), raw...), true
	default:
		if cap(d.slab)-len(d.slab) < len(raw) {
			// From 2 KiB doubling to 32 KiB: many short connections must
			// not cost a full slab each.
			d.slabNext = min(max(2*d.slabNext, 2<<10), 32<<10)
			d.slab = decode.MakeNoZero(d.slabNext)
		}
		s := len(d.slab)
		d.slab = append(d.slab, raw...)
		cp = d.slab[s:len(d.slab):len(d.slab)]
	}
	// Units whose bytes are carved from the byte slab come from a slab of
	// units too, from 8 doubling to 256 (many short connections must not
	// cost a full slab each): a unit kept alive keeps its slab, and so only
	// small units may share one. A unit with bytes of its own is allocated
	// alone, so that it never holds a neighbour's large bytes in memory.
	var u *decode.Unit
	switch {
	case d.opt.Arena != nil && (len(raw) == 0 || raw[0] != TypeCompressedMessages):
		// Recycled once written: any unit but a CompressedMessages, which
		// its messages name as Parent (and the compression keeps while
		// it inflates). Nothing else points to a unit once emitted.
		u = d.opt.Arena.Unit()
		if alone {
			// Its bytes are its alone: nothing the decoder keeps, nor
			// another unit, refers to them. Once it is released they
			// are pooled for the next message gathered.
			d.opt.Arena.Own(u, cp)
		}
	case alone:
		u = new(decode.Unit)
	default:
		if d.unitsUsed == len(d.units) {
			d.unitsNext = min(max(2*d.unitsNext, 8), 256)
			d.units, d.unitsUsed = make([]decode.Unit, d.unitsNext), 0
		}
		u = &d.units[d.unitsUsed]
		d.unitsUsed++
	}
	// The unit is fresh (zero): fields are set one by one rather than a
	// whole Unit copied.
	u.Conn, u.Dir, u.Proto = d.conn, dir, decode.ProtoPgSQL
	u.Offset, u.Len, u.Raw, u.Parent = pos, len(raw), cp, parent
	u.Dissect = dissectTyped
	u.SetTime(t)
	return u
}

// put emits a top-level unit, adding the resynchronisation warning.
func (d *Decoder) put(ds *dirState, u *decode.Unit) {
	if ds.resynced && u.Err() == "" && ds.mode != modeResync {
		switch {
		case ds.midStream && ds.skipped > 0:
			u.Warn("pgsql: no startup packet, the capture begins mid-connection; skipped " + strconv.FormatInt(ds.skipped, 10) + " bytes to the first message")
		case ds.midStream:
			u.Warn("pgsql: no startup packet, the capture begins mid-connection")
		case ds.skipped > 0:
			u.Warn("pgsql: resynchronised after a gap or undecodable bytes; skipped " + strconv.FormatInt(ds.skipped, 10) + " bytes")
		default:
			u.Warn("pgsql: resynchronised after a gap")
		}
		ds.resynced = false
		ds.midStream = false
		ds.skipped = 0
	}
	ds.units++
	d.emit(u)
}

// typed handles one whole typed message (raw includes the header).
func (d *Decoder) typed(dir decode.Dir, raw []byte, pos int64, t time.Time) {
	ds := &d.dir[dir]
	if dir == decode.DirB && raw[0] == TypeCompressedMessages {
		d.comp.container(raw, pos, t)
		return
	}
	// A password message ('p') and an authentication exchange ('R')
	// carry the secrets message redacts in Raw: theirs is a copy.
	copied := (dir == decode.DirF && raw[0] == TypePassword) || (dir == decode.DirB && raw[0] == TypeAuthentication)
	u := d.messageOf(dir, raw, pos, t, nil, false, copied)
	if dir == decode.DirB {
		d.comp.checkDeclared(u)
	}
	d.put(ds, u)
}

// message builds the unit of one typed message and follows the protocol
// state it changes. parent is the CompressedMessages carrying it, if any.
func (d *Decoder) message(dir decode.Dir, raw []byte, pos int64, t time.Time, parent *decode.Unit, own bool) *decode.Unit {
	return d.messageOf(dir, raw, pos, t, parent, own, false)
}

// messageOf is message, its bytes copied when copied is set (see
// unitOf).
func (d *Decoder) messageOf(dir decode.Dir, raw []byte, pos int64, t time.Time, parent *decode.Unit, own, copied bool) *decode.Unit {
	u := d.unitOf(dir, raw, pos, t, parent, own, copied)
	typ := raw[0]
	body := raw[HeaderLen:]
	switch {
	case dir == decode.DirB && typ == TypeDataRow:
		// The busiest messages (a SELECT's rows, a COPY's data) are
		// named, checked and summarised here, without the way through
		// the other types' cases; summarize words them alike.
		u.Type = nameDataRow
		checkRow(u, body)
		u.Summary = dataRowSummary(u.Type, body)
		return u
	case typ == TypeCopyData && !d.copyBoth:
		u.Type = nameCopyData
		u.Summary = copyDataSummary(len(body))
		return u
	}
	u.Type = d.name(dir, typ)
	if dir == decode.DirF {
		switch typ {
		case TypePassword:
			d.password(u)
		case TypeCopyData: // in replication (copyBoth): the others are above
			if n := replicationName(body, true); n != "" {
				u.Summary = "CopyData: " + n
				u.Dissect = dissectReplication
				return u
			}
		}
	} else {
		switch typ {
		case TypeAuthentication:
			var m Authentication
			if err := m.Decode(body); err != nil {
				u.SetErr(err.Error())
			}
			d.authCode = m.Code
			u.Type = AuthName(m.Code)
			if (m.Code == AuthSASLContinue || m.Code == AuthSASLFinal || m.Code == AuthGSSContinue) && len(raw) > 9 {
				d.secret(u, 9, len(raw))
			}
		case TypeCopyBothResponse:
			d.copyBoth = true
		case TypeReadyForQuery:
			d.copyBoth = false
		case TypeCopyData: // in replication, as above
			if n := replicationName(body, false); n != "" {
				u.Summary = "CopyData: " + n
				u.Dissect = dissectReplication
				return u
			}
		}
	}
	u.Summary = summarize(u.Type, typ, body, dir == decode.DirF, u.Secret && !d.opt.ShowSecrets)
	if u.Secret && !d.opt.ShowSecrets {
		u.Dissect = dissectTypedRedacted
	}
	return u
}

// The names of the busiest messages, as MessageName gives them (its
// table is filled by an init function, after package variables are:
// TestBusyNames checks they agree).
const (
	nameDataRow  = "DataRow"
	nameCopyData = "CopyData"
)

// checkRow sets u's error when the columns of its DataRow body do not
// agree with their count: the summary (from the count) and the tree
// (from the columns) would tell two stories. It costs a pass over the
// lengths.
func checkRow(u *decode.Unit, body []byte) {
	if err := checkDataRow(body); err != nil {
		u.SetErr(err.Error() + " (message at stream offset " + strconv.FormatInt(u.Offset, 10) + ")")
	}
}

// password names a frontend 'p' message from the authentication state and
// redacts its secret part.
func (d *Decoder) password(u *decode.Unit) {
	switch d.authCode {
	case AuthSASL:
		u.Type = "SASLInitialResponse"
		// mechanism name, Int32 length, data
		if i := bytes.IndexByte(u.Raw[HeaderLen:], 0); i >= 0 && HeaderLen+i+5 <= len(u.Raw) {
			d.secret(u, HeaderLen+i+5, len(u.Raw))
		}
	case AuthSASLContinue:
		u.Type = "SASLResponse"
		d.secret(u, HeaderLen, len(u.Raw))
	case AuthGSS, AuthGSSContinue, AuthSSPI:
		u.Type = "GSSResponse"
		d.secret(u, HeaderLen, len(u.Raw))
	default:
		u.Type = "PasswordMessage"
		end := len(u.Raw)
		if end > HeaderLen && u.Raw[end-1] == 0 {
			end--
		}
		d.secret(u, HeaderLen, end)
	}
}

// secret marks u as carrying credentials in Raw[from:to] and, unless
// secrets are shown, overwrites them with '*'.
func (d *Decoder) secret(u *decode.Unit, from, to int) {
	u.Secret = true
	if d.opt.ShowSecrets || from >= to {
		return
	}
	for i := from; i < to; i++ {
		u.Raw[i] = '*'
	}
}
