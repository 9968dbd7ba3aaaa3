package amqp10

import (
	"bytes"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"sync"

	"github.com/wiretap-dev/wiretap/decode"
)

// A message carried by several transfers arrives as pieces: the payloads
// of its frames, in the capture's memory (stable input) or in chunks the
// decoder kept. Where field trees are seldom wanted (`read` in text), the
// decoder does not join them on the decoding goroutine: it locates the
// sections, reads the message-id and verifies the checksum over the
// pieces, and the message's Bytes are joined on first use (MessageOf),
// by whoever needs them next: the immutability tracker, on the stage's
// goroutine. Joining a large message is a copy of all of it into fresh
// memory, most of the decoding goroutine's time on large multi-frame
// messages. What the pieces do not answer alone (a section of an unusual
// shape, any error) is answered by joining them there and then, as
// before, so every summary, warning and error stays what it was.

// pendingBytes is a message's pieces until they are joined.
type pendingBytes struct {
	mu     sync.Mutex
	pieces [][]byte // nil once joined
}

// materialize joins a message's pending pieces into its Bytes; it is
// called before anything reads them, and is safe for concurrent use.
func (m *CompletedMessage) materialize() {
	p := m.pending
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.pieces != nil {
		// bytes.Join does not zero what it is about to fill.
		m.Bytes, p.pieces = bytes.Join(p.pieces, nil), nil
	}
	p.mu.Unlock()
}

// bare returns the message's bare message: its pieces when they are not
// joined yet (the immutability tracker compares and keeps them as they
// are), else its bytes.
func (m *CompletedMessage) bare() bareMsg {
	if p := m.pending; p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.pieces != nil {
			from, to := m.Message.BareStart, m.Message.BareEnd
			return bareMsg{pieces: slicePieces(p.pieces, from, to), n: to - from}
		}
	}
	b := m.Bare()
	return bareMsg{b: b, n: len(b)}
}

// slicePieces returns the bytes [from, to) of the pieces, as a new list
// of slices of them.
func slicePieces(pieces [][]byte, from, to int) [][]byte {
	var out [][]byte
	at := 0
	for _, q := range pieces {
		lo, hi := max(from-at, 0), min(to-at, len(q))
		if lo < hi {
			out = append(out, q[lo:hi:hi])
		}
		at += len(q)
	}
	if out == nil {
		out = [][]byte{}
	}
	return out
}

// bareMsg is a bare message: its bytes, or, for a message not joined yet
// (see pendingBytes), its pieces (non-nil, n bytes in all).
type bareMsg struct {
	b      []byte
	pieces [][]byte
	n      int
}

// list returns the message as pieces; one is the room for a single one.
func (m *bareMsg) list(one *[1][]byte) [][]byte {
	if m.pieces != nil {
		return m.pieces
	}
	one[0] = m.b
	return one[:]
}

// join returns the message's bytes in one slice.
func (m *bareMsg) join() []byte {
	if m.pieces == nil {
		return m.b
	}
	return bytes.Join(m.pieces, nil)
}

// firstDiffBare is firstDiff over two bare messages, either in pieces.
func firstDiffBare(a, b *bareMsg) int {
	if a.pieces == nil && b.pieces == nil {
		return firstDiff(a.b, b.b)
	}
	var oa, ob [1][]byte
	pa, pb := a.list(&oa), b.list(&ob)
	at := 0        // offset in both messages
	ia, ib := 0, 0 // the pieces at
	xa, xb := 0, 0 // and the offsets in them
	for ia < len(pa) && ib < len(pb) {
		x, y := pa[ia][xa:], pb[ib][xb:]
		k := min(len(x), len(y))
		if i := firstDiff(x[:k], y[:k]); i >= 0 {
			return at + i
		}
		at, xa, xb = at+k, xa+k, xb+k
		if xa == len(pa[ia]) {
			ia, xa = ia+1, 0
		}
		if xb == len(pb[ib]) {
			ib, xb = ib+1, 0
		}
	}
	if a.n != b.n {
		return min(a.n, b.n)
	}
	return -1
}

// pieced reads a message held in pieces by offsets into the whole.
type pieced struct {
	pieces [][]byte
	n      int
	// cur and curOff cache the piece last found and its offset: the
	// sections are visited in order.
	cur, curOff int
	scratch     []byte
}

// reset makes p read pieces, keeping its scratch space.
func (p *pieced) reset(pieces [][]byte) {
	n := 0
	for _, q := range pieces {
		n += len(q)
	}
	*p = pieced{pieces: pieces, n: n, scratch: p.scratch[:0]}
}

// find returns the index of the piece holding offset off (0 <= off < n)
// and that piece's offset.
func (p *pieced) find(off int) (int, int) {
	i, at := p.cur, p.curOff
	if off < at {
		i, at = 0, 0
	}
	for i < len(p.pieces) && off >= at+len(p.pieces[i]) {
		at += len(p.pieces[i])
		i++
	}
	p.cur, p.curOff = i, at
	return i, at
}

// window returns bytes [off, off+n) of the message contiguous: a slice of
// one piece when they lie in one, else a copy in the scratch space (valid
// until the next window). The caller keeps off+n <= p.n.
func (p *pieced) window(off, n int) []byte {
	if n == 0 {
		return nil
	}
	i, at := p.find(off)
	if q := p.pieces[i]; off+n <= at+len(q) {
		return q[off-at : off-at+n : off-at+n]
	}
	p.scratch = p.scratch[:0]
	for need := n; need > 0; i++ {
		q := p.pieces[i][off-at:]
		k := min(len(q), need)
		p.scratch = append(p.scratch, q[:k]...)
		need -= k
		at += len(p.pieces[i])
		off = at
	}
	return p.scratch
}

// section locates the message section at off, as Scan on the joined bytes
// would; ok is false when it cannot say so from the pieces alone (a
// descriptor other than a smallulong, a value that does not fit, any
// error), and the caller joins them.
func (p *pieced) section(off int) (v Value, desc uint64, ok bool) {
	const head = 8 // 0x00 0x53 code, constructor, size of up to 4 bytes
	h := p.window(off, min(head, p.n-off))
	if len(h) < 5 || Code(h[0]) != CodeDescribed || Code(h[1]) != CodeSmallUlong {
		return v, 0, false
	}
	desc = uint64(h[2])
	code := Code(h[3])
	e := &encodings[code]
	var end, data int
	switch {
	case e.category == categoryArray:
		return v, 0, false // its element constructor's offsets too
	case e.category == categoryFixed:
		end = off + 4 + e.width
	case e.width == 1:
		data = off + 5
		end = data + int(h[4])
	case e.width == 4 && len(h) == head:
		data = off + 8
		end = data + int(binary.BigEndian.Uint32(h[4:]))
	default:
		return v, 0, false
	}
	if end > p.n || end < off {
		return v, 0, false
	}
	if e.category == categoryVariable {
		// A binary, string or symbol: its data is not read, only
		// measured, wherever it lies.
		return Value{Start: off, End: end, Code: code, DescStart: off + 1, DescEnd: off + 3, Data: data}, desc, true
	}
	w := p.window(off, end-off)
	if scanTo(w, 0, 0, &v) != nil || v.End != len(w) || !v.Described() {
		return v, 0, false
	}
	v.Start, v.End, v.Data = off, off+v.End, off+v.Data
	v.DescStart, v.DescEnd = off+v.DescStart, off+v.DescEnd
	return v, desc, true
}

// parseMessagePieces is ParseMessage over a message in pieces; ok is
// false when the pieces alone do not answer (see section), and m is then
// to be parsed from the joined bytes.
func parseMessagePieces(p *pieced, m *Message) (ok bool, err error) {
	m.Sections = m.Sections[:0]
	m.BareStart, m.BareEnd, m.Footer, m.Properties = -1, p.n, -1, -1
	m.BodyKind, m.BodySections, m.BodyBytes = "", 0, 0
	var orderErr error
	last := uint64(0)
	for off := 0; off < p.n; {
		v, code, ok := p.section(off)
		if !ok {
			return false, nil
		}
		if code < DescriptorHeader || code > DescriptorFooter {
			return false, nil
		}
		m.add(code, &v, off, &last, &orderErr)
		off = v.End
	}
	if m.BareStart < 0 || m.BareStart > m.BareEnd {
		m.BareStart = m.BareEnd
	}
	return true, orderErr
}

// local returns section i of m alone, as a message of one section over
// the section's own bytes (w, from p): what messageID and
// checksumAnnotation read.
func (p *pieced) local(m *Message, i int, one *[1]Section) (w []byte, lm Message) {
	s := m.Sections[i]
	w = p.window(s.Value.Start, s.Value.End-s.Value.Start)
	d := s.Value.Start
	s.Value.Start, s.Value.End, s.Value.Data = 0, s.Value.End-d, s.Value.Data-d
	s.Value.DescStart, s.Value.DescEnd = s.Value.DescStart-d, s.Value.DescEnd-d
	one[0] = s
	return w, Message{Sections: one[:], Properties: -1, Footer: -1}
}

// messageIDPieces is messageID over a message in pieces.
func (d *Decoder) messageIDPieces(st *direction, p *pieced, m *Message) string {
	if m.Properties < 0 {
		return ""
	}
	var one [1]Section
	w, lm := p.local(m, m.Properties, &one)
	lm.Properties = 0
	return lm.messageID(w, &st.props, d.text)
}

// verifyChecksumPieces is VerifyChecksum over a message in pieces.
func verifyChecksumPieces(p *pieced, m *Message) decode.Checksum {
	if m.Footer < 0 {
		return decode.Checksum{Status: decode.ChecksumAbsent}
	}
	var one [1]Section
	w, lm := p.local(m, m.Footer, &one)
	lm.Footer = 0
	a, ok := lm.checksumAnnotation(w)
	if !ok {
		return decode.Checksum{Status: decode.ChecksumAbsent}
	}
	var got uint32
	if a.alg == Adler32 {
		h := adler32.New()
		p.each(m.BareStart, m.BareEnd, func(q []byte) { h.Write(q) })
		got = h.Sum32()
	} else {
		p.each(m.BareStart, m.BareEnd, func(q []byte) { got = crc32.Update(got, crc32.IEEETable, q) })
	}
	return a.verdict(got)
}

// each calls f with the bytes [from, to) of the message, piece by piece
// (none when the range is empty).
func (p *pieced) each(from, to int, f func([]byte)) {
	if from >= to {
		return
	}
	i, at := p.find(from)
	for ; from < to && i < len(p.pieces); i++ {
		q := p.pieces[i]
		lo, hi := from-at, min(len(q), to-at)
		f(q[lo:hi])
		at += len(q)
		from = at
	}
}
