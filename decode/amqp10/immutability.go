package amqp10

import (
	"bytes"
	"crypto/sha256"
	"strconv"
	"unsafe"

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
	entered map[immKey]immEntry
	order   []immKey
	bytes   int
	// MaxBytes bounds the bare-message bytes retained for comparison
	// (default 64 MiB); the oldest messages are forgotten first.
	MaxBytes int
	rep      ImmutabilityReport
	modified []string
	// The entering bare messages are copied into chunks (immChunk bytes,
	// or one message's if larger), so the map and the order hold no
	// pointers for the collector to follow and no unit's bytes are kept
	// alive; a chunk goes once nothing in it is live.
	chunks [][]byte
	live   []int
}

// immKey identifies a message: the first 128 bits of the SHA-256 of its
// message-id, or without one of its bare message, the last bit flipped
// for a message-id. Small keys and entries keep the map, which holds
// every message that entered, half the size it would be with whole
// hashes and ints (a collision of 128-bit hashes is not to be expected
// in any capture).
type immKey [16]byte

func newImmKey(h [sha256.Size]byte, byID bool) (k immKey) {
	copy(k[:], h[:])
	if byID {
		k[15] ^= 1
	}
	return k
}

// immEntry is an entering message: its connection and unit, and where
// its bare message's bytes are.
type immEntry struct {
	n, length int
	conn      int32
	chunk     int32
	off       int32 // a message past a chunk's size has one to itself, at 0
}

// immChunk is the size of the chunks bare messages are copied into.
const immChunk = 256 << 10

// keep copies bare into the current chunk and returns where it went.
func (im *Immutability) keep(e *immEntry, bare []byte) {
	last := len(im.chunks) - 1
	if last >= 0 && im.live[last] == 0 && im.chunks[last] != nil {
		im.chunks[last] = im.chunks[last][:0] // everything in it was forgotten
	}
	if last < 0 || im.chunks[last] == nil || len(im.chunks[last])+len(bare) > cap(im.chunks[last]) {
		if last >= 0 && im.live[last] == 0 {
			im.chunks[last] = nil
		}
		im.chunks = append(im.chunks, make([]byte, 0, max(immChunk, len(bare))))
		im.live = append(im.live, 0)
		last++
	}
	c := im.chunks[last]
	e.chunk, e.off, e.length = int32(last), int32(len(c)), len(bare)
	im.chunks[last] = append(c, bare...)
	im.live[last] += len(bare)
}

// forget gives back e's bytes; a chunk left with nothing live, but the
// one being filled, is dropped.
func (im *Immutability) forget(e immEntry) {
	im.live[e.chunk] -= e.length
	if im.live[e.chunk] == 0 && int(e.chunk) != len(im.chunks)-1 {
		im.chunks[e.chunk] = nil
	}
}

// bareOf returns e's bare message.
func (im *Immutability) bareOf(e immEntry) []byte {
	off, end := int(e.off), int(e.off)+e.length
	return im.chunks[e.chunk][off:end:end]
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
	return &Immutability{entered: make(map[immKey]immEntry), MaxBytes: 64 << 20}
}

// Observe feeds one unit; units that do not complete an AMQP 1.0 message
// are ignored. For a leaving message paired with an entering one it
// returns the verdict (and annotates the unit), else nil.
func (im *Immutability) Observe(u *decode.Unit) *ImmutabilityVerdict {
	cm := MessageOf(u)
	if cm == nil || u.Conn == nil {
		return nil
	}
	bare := cm.Bare()
	var key immKey
	by := "message-id"
	if id := u.MessageID(); id != "" {
		key = newImmKey(sha256.Sum256(unsafe.Slice(unsafe.StringData(id), len(id))), true)
	} else {
		key, by = newImmKey(sha256.Sum256(bare), false), "bare-message hash"
	}
	if u.Dir == decode.DirF {
		im.rep.Entered++
		if old, ok := im.entered[key]; ok {
			im.bytes -= old.length
			im.forget(old)
		} else {
			im.order = append(im.order, key)
		}
		e := immEntry{conn: int32(u.Conn.ID), n: u.N}
		im.keep(&e, bare)
		im.entered[key] = e
		im.bytes += len(bare)
		im.evict()
		return nil
	}
	im.rep.Left++
	// The connection that sent it may be the one it comes back on: a
	// client that publishes and consumes on one connection.
	ent, ok := im.entered[key]
	if !ok {
		return nil
	}
	im.rep.Paired++
	e := struct {
		conn, n int
		bare    []byte
	}{int(ent.conn), ent.n, im.bareOf(ent)}
	// The verdict, its field and the field's children in one allocation:
	// every message that leaves a broker gets one.
	blk := new(struct {
		v    ImmutabilityVerdict
		f    decode.Field
		kids [3]decode.Field
		ptrs [3]*decode.Field
	})
	v := &blk.v
	*v = ImmutabilityVerdict{MatchedBy: by, FromConn: e.conn, FromUnit: e.n, Offset: -1, In: len(e.bare), Out: len(bare)}
	v.Offset = firstDiff(e.bare, bare)
	v.Identical = v.Offset < 0
	f := &blk.f
	*f = decode.Field{Key: "immutability", Name: "amqp.immutability", Kids: blk.ptrs[:0]}
	if v.Identical {
		im.rep.Identical++
		f.Value = "identical"
		f.Display = identicalDisplay(e.conn, e.n, by)
	} else {
		from := "conn " + strconv.Itoa(e.conn)
		if e.n > 0 {
			from += " unit " + strconv.Itoa(e.n)
		}
		im.rep.Modified++
		v.Where = locate(e.bare, v.Offset)
		f.Value = "modified"
		msg := "bare message modified by the broker: differs from " + from + " at byte " + strconv.Itoa(v.Offset) +
			" of the bare message"
		if v.Where != "" {
			msg += " (" + v.Where + ")"
		}
		msg += "; sent " + byteAt(e.bare, v.Offset) + ", received " + byteAt(bare, v.Offset) +
			"; " + strconv.Itoa(v.In) + " bytes sent, " + strconv.Itoa(v.Out) + " received"
		f.Display = msg
		u.Warn(msg)
		id := u.MessageID()
		if id == "" {
			id = "(no message-id)"
		}
		im.modified = append(im.modified, "  message-id "+strconv.Quote(id)+": conn "+strconv.Itoa(e.conn)+
			" -> conn "+strconv.Itoa(u.Conn.ID)+": "+msg)
	}
	blk.kids[0] = decode.Field{Key: "matched-by", Value: by}
	blk.kids[1] = decode.Field{Key: "from-conn", Value: uint64(e.conn)}
	f.Add(&blk.kids[0])
	f.Add(&blk.kids[1])
	if v.Offset >= 0 {
		blk.kids[2] = decode.Field{Key: "first-difference", Name: "amqp.immutability.offset", Value: uint64(v.Offset)}
		f.Add(&blk.kids[2])
	}
	cm.Annotations = append(cm.Annotations, f)
	return v
}

func (im *Immutability) evict() {
	for im.bytes > im.MaxBytes && len(im.order) > 0 {
		k := im.order[0]
		im.order = im.order[1:]
		if e, ok := im.entered[k]; ok {
			im.bytes -= e.length
			im.forget(e)
			delete(im.entered, k)
		}
	}
}

// identicalDisplay is the verdict field's text for an identical message,
// "identical: bare message byte-for-byte as sent on conn C unit N (matched
// by BY)", built in one allocation: most leaving messages are identical.
func identicalDisplay(conn, n int, by string) string {
	const head, tail = "identical: bare message byte-for-byte as sent on conn ", " (matched by "
	b := make([]byte, 0, len(head)+len(" unit ")+len(tail)+len(by)+1+40)
	b = append(b, head...)
	b = strconv.AppendInt(b, int64(conn), 10)
	if n > 0 {
		b = append(b, " unit "...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, tail...)
	b = append(b, by...)
	b = append(b, ')')
	return unsafe.String(unsafe.SliceData(b), len(b))
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
				fields := described[s.Descriptor].fields
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
