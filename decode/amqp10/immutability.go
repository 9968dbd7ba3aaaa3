package amqp10

import (
	"bytes"
	"hash/maphash"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// Immutability checks that brokers keep bare messages immutable (§3.2: "The
// bare message is immutable within the AMQP network"). It pairs a message
// entering a broker (a client-to-server transfer on one connection) with
// the same message leaving it (a server-to-client transfer on another
// connection), by properties.message-id or, without one, by a hash of the
// bare message, and compares the bare messages' exact bytes.
//
// The pipeline calls Observe for every unit it emits, in output order and
// before the unit is printed or stored, and prints Summary at the end of a
// capture:
//
//	imm := amqp10.NewImmutability()
//	for each unit u { imm.Observe(u); sink(u) }
//	for _, line := range imm.Summary() { fmt.Println(line) }
//
// Observe annotates the leaving unit: a field "immutability"
// (amqp.immutability: "identical" or "modified") in the message subtree of
// its field tree, and a warning when the bare message was modified.
// An Immutability is not safe for concurrent use.
type Immutability struct {
	// The messages that entered, numbered in order of entry from head
	// (the oldest kept) to tail (the next to enter), in blocks of
	// immBlock: blocks[0] holds the numbers from first*immBlock on. A
	// message entering again (the same message-id, or the same bytes)
	// takes its old one's place, so each message is there once, and
	// eviction takes the oldest first. Blocks rather than one slice: no
	// copy as it grows, and a block forgotten is reused.
	blocks     []*[immBlock]immEntry
	spare      *[immBlock]immEntry
	first      int64
	head, tail int64
	// index finds an entry by the hash of its message-id or bare message:
	// the number of the newest entry with that hash, the others chained
	// through immEntry.next. The hash only narrows the search: an entry is
	// taken for a message only when its message-id, or its bare message,
	// is the same byte for byte, so a collision costs a comparison, never a
	// wrong pairing.
	index map[uint64]int64
	seed  maphash.Seed
	mask  uint64 // ^0; tests set 0 to make every hash collide
	// next is the entry after the last one paired: messages mostly leave
	// in the order they entered, so it is tried before the index.
	next  int64
	bytes int
	// MaxBytes bounds the bare-message bytes retained for comparison
	// (default 64 MiB); the oldest messages are forgotten first.
	MaxBytes int
	rep      ImmutabilityReport
	modified []string
	// The entering messages' ids and bare messages are copied into chunks
	// (immChunk bytes, or one message's if larger), so the entries and the
	// index hold no pointers for the collector to follow and no unit's
	// slab of small frames is kept alive; a chunk goes once nothing in it
	// is live. A bare message in bytes of its own (a message reassembled
	// from several transfers, or one large frame's unit), which it fills
	// but for a little, is kept as those bytes instead (in shared, its
	// slot freed for another when it is forgotten): copying it cost as
	// much as decoding it.
	chunks     [][]byte
	live       []int
	shared     []bareMsg
	freeShared []int32
}

// immEntry is an entering message: the hash it is indexed by, its
// connection and unit, and where its message-id (idLen bytes, 0 when it
// has none and is known by its bare message) and then its bare message
// (length bytes) are.
type immEntry struct {
	hash   uint64
	n      int
	length int
	chain  int64 // the next entry with the same hash, -1 for none
	conn   int32
	chunk  int32
	off    int32 // a message past a chunk's size has one to itself, at 0
	idLen  int32
	// shared is 1 + the slot in Immutability.shared of the bare message
	// kept as the message's own bytes; 0 when it follows the id in its
	// chunk. chunk is -1 when nothing is in one.
	shared int32
}

// immBlock is the number of entries in a block.
const immBlock = 4096

// immChunk is the size of the chunks bare messages are copied into.
const immChunk = 256 << 10

// keep copies id and bare into the current chunk and records where they
// went; byRef keeps bare as it is instead (see Immutability.shared), in
// pieces when it is in pieces.
func (im *Immutability) keep(e *immEntry, id string, bare bareMsg, byRef bool) {
	size := len(id) + bare.n
	e.chunk, e.off, e.idLen, e.length, e.shared = -1, 0, int32(len(id)), bare.n, 0
	if byRef {
		size = len(id)
		if n := len(im.freeShared); n > 0 {
			e.shared = im.freeShared[n-1] + 1
			im.freeShared = im.freeShared[:n-1]
			im.shared[e.shared-1] = bare
		} else {
			im.shared = append(im.shared, bare)
			e.shared = int32(len(im.shared))
		}
		if size == 0 {
			return
		}
	}
	last := len(im.chunks) - 1
	if last >= 0 && im.live[last] == 0 && im.chunks[last] != nil {
		im.chunks[last] = im.chunks[last][:0] // everything in it was forgotten
	}
	if last < 0 || im.chunks[last] == nil || len(im.chunks[last])+size > cap(im.chunks[last]) {
		if last >= 0 && im.live[last] == 0 {
			im.chunks[last] = nil
		}
		im.chunks = append(im.chunks, decode.MakeNoZero(max(immChunk, size)))
		im.live = append(im.live, 0)
		last++
	}
	c := im.chunks[last]
	e.chunk, e.off = int32(last), int32(len(c))
	c = append(c, id...)
	if !byRef {
		var one [1][]byte
		for _, q := range bare.list(&one) {
			c = append(c, q...)
		}
	}
	im.chunks[last] = c
	im.live[last] += size
}

// forget gives back e's bytes; a chunk left with nothing live, but the
// one being filled, is dropped.
func (im *Immutability) forget(e *immEntry) {
	size := int(e.idLen) + e.length
	if e.shared > 0 {
		im.shared[e.shared-1] = bareMsg{}
		im.freeShared = append(im.freeShared, e.shared-1)
		size, e.shared = int(e.idLen), 0
	}
	if e.chunk < 0 {
		return
	}
	im.live[e.chunk] -= size
	if im.live[e.chunk] == 0 && int(e.chunk) != len(im.chunks)-1 {
		im.chunks[e.chunk] = nil
	}
}

// bareOf returns e's bare message.
func (im *Immutability) bareOf(e *immEntry) bareMsg {
	if e.shared > 0 {
		return im.shared[e.shared-1]
	}
	if e.chunk < 0 {
		return bareMsg{}
	}
	off := int(e.off) + int(e.idLen)
	end := off + e.length
	return bareMsg{b: im.chunks[e.chunk][off:end:end], n: e.length}
}

// is reports whether e is the message known by id or, when id is empty,
// by bare.
func (im *Immutability) is(e *immEntry, id string, bare *bareMsg) bool {
	if int(e.idLen) != len(id) {
		return false
	}
	if id != "" {
		off := int(e.off)
		return string(im.chunks[e.chunk][off:off+len(id)]) == id
	}
	if e.length != bare.n {
		return false
	}
	kept := im.bareOf(e)
	return firstDiffBare(&kept, bare) < 0
}

// entry returns the entry numbered seq.
func (im *Immutability) entry(seq int64) *immEntry {
	return &im.blocks[seq/immBlock-im.first][seq%immBlock]
}

// add appends e as the newest entry and returns its number.
func (im *Immutability) add(e immEntry) int64 {
	seq := im.tail
	if seq%immBlock == 0 {
		b := im.spare
		if im.spare = nil; b == nil {
			b = new([immBlock]immEntry)
		}
		if len(im.blocks) == 0 {
			im.first = seq / immBlock
		}
		im.blocks = append(im.blocks, b)
	}
	im.tail++
	*im.entry(seq) = e
	return seq
}

// find returns the number of the entry known by id (or bare) among those
// with hash h, or -1, and the newest entry with hash h (-1 for none).
func (im *Immutability) find(h uint64, id string, bare *bareMsg) (seq, newest int64) {
	newest, ok := im.index[h]
	if !ok {
		return -1, -1
	}
	for s := newest; s >= 0; {
		e := im.entry(s)
		if im.is(e, id, bare) {
			return s, newest
		}
		s = e.chain
	}
	return -1, newest
}

// sum is the index's hash of a message known by id, or by bare without one.
func (im *Immutability) sum(id string, bare *bareMsg) uint64 {
	if id != "" {
		return (maphash.String(im.seed, id) ^ 0x9e3779b97f4a7c15) & im.mask
	}
	if bare.pieces == nil {
		return maphash.Bytes(im.seed, bare.b) & im.mask
	}
	// The same hash as of the pieces joined (TestBareInPieces).
	var h maphash.Hash
	h.SetSeed(im.seed)
	for _, q := range bare.pieces {
		h.Write(q)
	}
	return h.Sum64() & im.mask
}

// ImmutabilityReport counts what an Immutability saw.
type ImmutabilityReport struct {
	Entered   int // completed client-to-server messages
	Left      int // completed server-to-client messages
	Paired    int // leaving messages matched with an entering one
	Identical int
	Modified  int
}

// ImmutabilityVerdict is the outcome for one leaving message.
type ImmutabilityVerdict struct {
	Identical bool
	// MatchedBy is "message-id" or "bare-message hash".
	MatchedBy string
	// FromConn and FromUnit identify the entering transfer.
	FromConn, FromUnit int
	// Offset is the first differing offset in the bare message (-1 when
	// identical); Where names the section and field it falls in.
	Offset  int
	Where   string
	In, Out int // bare-message lengths entering and leaving
}

// NewImmutability returns an empty tracker.
func NewImmutability() *Immutability {
	return &Immutability{index: make(map[uint64]int64), seed: maphash.MakeSeed(), mask: ^uint64(0), MaxBytes: 64 << 20}
}

// Observe feeds one unit; units that do not complete an AMQP 1.0 message
// are ignored. For a leaving message paired with an entering one it
// returns the verdict and true, and annotates the unit: a modified
// message with its verdict's field and a warning, an identical one with
// where it entered, from which its field is built when its tree is
// (see CompletedMessage.AnnotationFields).
func (im *Immutability) Observe(u *decode.Unit) (ImmutabilityVerdict, bool) {
	// Not MessageOf: a message still in pieces is compared and kept as
	// them (see pendingBytes).
	cm, _ := u.Ext().(*CompletedMessage)
	if cm == nil || u.Conn == nil {
		return ImmutabilityVerdict{}, false
	}
	bare := cm.bare()
	id := u.MessageID()
	by := "message-id"
	if id == "" {
		by = "bare-message hash"
	}
	h := im.sum(id, &bare)
	if u.Dir == decode.DirF {
		im.rep.Entered++
		// Bytes of the message's own (never a slab's) are kept as they
		// are when the bare message fills them but for a fifth at most.
		byRef := cm.own > 0 && bare.n > rawCarved && cm.own-bare.n <= bare.n/4
		if seq, newest := im.find(h, id, &bare); seq >= 0 {
			e := im.entry(seq)
			im.bytes -= e.length
			im.forget(e)
			e.conn, e.n = int32(u.Conn.ID), u.N
			im.keep(e, id, bare, byRef)
		} else {
			e := immEntry{hash: h, chain: newest, conn: int32(u.Conn.ID), n: u.N}
			im.keep(&e, id, bare, byRef)
			im.index[h] = im.add(e)
		}
		im.bytes += bare.n
		im.evict()
		return ImmutabilityVerdict{}, false
	}
	im.rep.Left++
	// The connection that sent it may be the one it comes back on: a
	// client that publishes and consumes on one connection.
	seq := im.next
	if seq < im.head || seq >= im.tail || im.entry(seq).hash != h || !im.is(im.entry(seq), id, &bare) {
		if seq, _ = im.find(h, id, &bare); seq < 0 {
			return ImmutabilityVerdict{}, false
		}
	}
	im.next = seq + 1
	ent := im.entry(seq)
	im.rep.Paired++
	from := sentAt{conn: ent.conn, unit: ent.n, byID: id != "", paired: true}
	eb := im.bareOf(ent)
	v := ImmutabilityVerdict{MatchedBy: by, FromConn: int(from.conn), FromUnit: from.unit, Offset: -1, In: eb.n, Out: bare.n}
	if id != "" {
		v.Offset = firstDiffBare(&eb, &bare)
	} // else the entry is the one with these very bytes
	if v.Identical = v.Offset < 0; v.Identical {
		// Most messages leave as they entered: the message keeps where it
		// entered, and its field is built when a tree is (see
		// CompletedMessage.AnnotationFields).
		im.rep.Identical++
		cm.identical = from
		return v, true
	}
	im.rep.Modified++
	sent, got := eb.join(), bare.join()
	v.Where = locate(sent, v.Offset)
	msg := "bare message modified by the broker: differs from " + from.name() + " at byte " + strconv.Itoa(v.Offset) +
		" of the bare message"
	if v.Where != "" {
		msg += " (" + v.Where + ")"
	}
	msg += "; sent " + byteAt(sent, v.Offset) + ", received " + byteAt(got, v.Offset) +
		"; " + strconv.Itoa(v.In) + " bytes sent, " + strconv.Itoa(v.Out) + " received"
	u.Warn(msg)
	if id == "" {
		id = "(no message-id)"
	}
	im.modified = append(im.modified, "  message-id "+strconv.Quote(id)+": conn "+strconv.Itoa(v.FromConn)+
		" -> conn "+strconv.Itoa(u.Conn.ID)+": "+msg)
	f := verdictField(from, "modified", msg, v.Offset)
	cm.Annotations = append(cm.Annotations, f)
	return v, true
}

// sentAt is where a leaving message entered the broker: the connection
// and unit of the transfer that completed it there, and whether it was
// paired by its message-id (else by its bare message's bytes).
type sentAt struct {
	unit int
	conn int32
	byID bool
	// paired is false in the zero value: no verdict.
	paired bool
}

// name is "conn C unit N", or "conn C" when the unit is not known.
func (s sentAt) name() string {
	n := "conn " + strconv.Itoa(int(s.conn))
	if s.unit > 0 {
		n += " unit " + strconv.Itoa(s.unit)
	}
	return n
}

// verdictKey is the verdict field's key in the message subtree.
const verdictKey = "immutability"

// verdictField is the verdict's field in the message subtree
// (amqp.immutability: "identical" or "modified", display text), with
// how it was paired, where the message entered and, for a modified one,
// the first offset that differs.
func verdictField(from sentAt, value, display string, offset int) *decode.Field {
	blk := new(immVerdict)
	matchedBy := matchedByHash
	if from.byID {
		matchedBy = matchedByID
	}
	f := &blk.f
	*f = decode.Field{Key: verdictKey, Name: "amqp.immutability", Value: value, Display: display, Kids: blk.ptrs[:0]}
	blk.kids[0] = decode.Field{Key: "matched-by", Value: matchedBy}
	blk.kids[1] = decode.Field{Key: "from-conn", Value: uint64(from.conn)}
	f.Add(&blk.kids[0])
	f.Add(&blk.kids[1])
	if offset >= 0 {
		blk.kids[2] = decode.Field{Key: "first-difference", Name: "amqp.immutability.offset", Value: uint64(offset)}
		f.Add(&blk.kids[2])
	}
	return f
}

func (im *Immutability) evict() {
	for im.bytes > im.MaxBytes && im.head < im.tail {
		e := im.entry(im.head)
		im.bytes -= e.length
		im.forget(e)
		im.unlink(e, im.head)
		if im.head++; im.head%immBlock == 0 {
			im.spare, im.blocks[0] = im.blocks[0], nil
			im.blocks = im.blocks[1:]
			im.first++
		}
	}
}

// unlink takes entry seq, e, out of the index.
func (im *Immutability) unlink(e *immEntry, seq int64) {
	s := im.index[e.hash]
	if s == seq {
		if e.chain < 0 {
			delete(im.index, e.hash)
		} else {
			im.index[e.hash] = e.chain
		}
		return
	}
	for s >= 0 {
		p := im.entry(s)
		if p.chain == seq {
			p.chain = e.chain
			return
		}
		s = p.chain
	}
}

// The values of the matched-by field, boxed once.
var matchedByID, matchedByHash any = "message-id", "bare-message hash"

// immVerdict is a verdict's field and the field's children, allocated
// together.
type immVerdict struct {
	f    decode.Field
	kids [3]decode.Field
	ptrs [3]*decode.Field
}

// identicalDisplay is the verdict field's text for an identical message:
// "identical: bare message byte-for-byte as sent on conn C unit N
// (matched by BY)".
func identicalDisplay(from sentAt) string {
	by := "bare-message hash"
	if from.byID {
		by = "message-id"
	}
	return "identical: bare message byte-for-byte as sent on " + from.name() + " (matched by " + by + ")"
}

func firstDiff(a, b []byte) int {
	n := len(a)
	if len(b) < n {
		n = len(b)
	}
	// Most messages leave as they entered: one vectorised comparison says
	// so, and only a difference is looked for byte by byte.
	if bytes.Equal(a[:n], b[:n]) {
		if len(a) != len(b) {
			return n
		}
		return -1
	}
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func byteAt(b []byte, i int) string {
	if i >= len(b) {
		return "end of message"
	}
	return hexByte(b[i])
}

// locate names the section, and within properties or
// application-properties the field, that offset off of bare falls in.
func locate(bare []byte, off int) string {
	var m Message
	ParseMessage(bare, &m)
	for i := range m.Sections {
		s := &m.Sections[i]
		if off < s.Value.Start || off >= s.Value.End {
			continue
		}
		where := s.Name()
		if off < s.Value.Data {
			return where + " (descriptor or size)"
		}
		switch s.Descriptor {
		case DescriptorProperties, DescriptorHeader:
			var c Composite
			if c.Set(bare, s.Value) == nil {
				fields := describedOf(s.Descriptor).fields
				for j := 0; j < c.N; j++ {
					if off >= c.Fields[j].Start && off < c.Fields[j].End && j < len(fields) {
						return where + "." + fields[j].name
					}
				}
			}
		case DescriptorApplicationProperties:
			inner := s.Value
			inner.Start, inner.DescStart, inner.DescEnd = s.Value.DescEnd, 0, 0
			it := inner.Items(bare)
			for it.Next() {
				k := it.Value
				if !it.Next() {
					break
				}
				if off >= k.Start && off < it.Value.End {
					name, _ := k.Bytes(bare)
					return where + "[" + strconv.Quote(string(name)) + "]"
				}
			}
		}
		return where
	}
	if off >= len(bare) {
		return "end of the bare message"
	}
	return ""
}

// Report returns the counts so far.
func (im *Immutability) Report() ImmutabilityReport { return im.rep }

// Summary returns the per-capture report, one line each, for the end of a
// headless run. It is empty when no AMQP 1.0 message left a broker.
func (im *Immutability) Summary() []string {
	r := im.rep
	if r.Entered == 0 && r.Left == 0 {
		return nil
	}
	lines := []string{"AMQP 1.0 bare-message immutability: " + strconv.Itoa(r.Entered) + " messages entered a broker, " +
		strconv.Itoa(r.Left) + " left it; " + strconv.Itoa(r.Paired) + " paired: " + strconv.Itoa(r.Identical) +
		" identical, " + strconv.Itoa(r.Modified) + " modified"}
	if n := r.Left - r.Paired; n > 0 {
		lines[0] += "; " + strconv.Itoa(n) + " left unpaired: no message with the same message-id (or, without one, the same bytes) entered in this capture"
	}
	return append(lines, im.modified...)
}
