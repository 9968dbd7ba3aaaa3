package capture

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Assembler reassembles TCP connections from packets and feeds a
// [Handler]. It is not safe for concurrent use.
//
// Sequence numbers are compared in 32-bit modular arithmetic (RFC 9293
// section 3.4), so streams wrap around 2^32 correctly.
type Assembler struct {
	h     Handler
	opt   Options
	stats *Stats

	conns  map[flowKey]*conn
	open   int     // connections in conns that are not closed
	closed []*conn // closed connections kept to absorb their trailing packets, oldest first
	nextID int
	// buffered counts out-of-order bytes held for all connections.
	buffered int

	seg  segment
	free [][]byte // buffers for held segments
	// stable says the packets' bytes stay valid and unchanged for the
	// whole run (a capture file mapped in memory, see [Input.Stable]):
	// out-of-order segments are then held as the packets' bytes, not
	// copied, so every byte handed to the handler is stable too.
	stable    bool
	fragments int // fragments since the last discard of stale ones
	// datagrams holds the incomplete IPv4 datagrams (see defrag.go),
	// at most MaxPendingDatagrams of them.
	datagrams   map[datagramKey]*ipv4Datagram
	idleCheck   time.Time // capture time of the last idle check
	warnedFlows bool
	warnedFrags bool

	// budget is the memory budget held state is charged to (nil: none);
	// fragAcct and fragHold charge the pending fragments.
	budget           *decode.Budget
	fragAcct         *decode.Account
	fragHold         decode.Hold
	warnedFragBudget bool
	// evictedQ holds the connections whose out-of-order segments the
	// budget took, to be told when the assembler has the stack.
	evictedQ []*conn
}

// datagramKey names an IPv4 datagram (RFC 791 section 3.2: source,
// destination, protocol and identification).
type datagramKey struct {
	src, dst [4]byte
	id       uint16
	proto    uint8
}

// flowKey is a connection's 4-tuple with the lower address first, so both
// directions find the same connection: each side as its address in 16
// bytes, its port and whether it is IPv4 (an IPv4-mapped IPv6 address is
// another address), in one array, which the map hashes in one pass.
// Two netip.AddrPort, hashed field by field, cost 4% of the CPU time of
// a capture of short connections. Packets carry no IPv6 zones.
type flowKey [2 * flowSide]byte

const flowSide = 16 + 2 + 1

func keyOf(a, b netip.AddrPort) flowKey {
	if a.Compare(b) > 0 {
		a, b = b, a
	}
	var k flowKey
	putFlowSide(k[:flowSide], a)
	putFlowSide(k[flowSide:], b)
	return k
}

func putFlowSide(dst []byte, ap netip.AddrPort) {
	addr := ap.Addr()
	a16 := addr.As16()
	copy(dst, a16[:])
	binary.BigEndian.PutUint16(dst[16:], ap.Port())
	if addr.Is4() {
		dst[18] = 1
	}
}

type conn struct {
	flow     Flow
	key      flowKey
	half     [2]half // [0]: from A, [1]: from B
	closed   bool
	last     time.Time
	buffered int
	warned   bool
	// asm is the assembler, for the budget's evictions.
	asm          *Assembler
	warnedBudget bool // about a segment the budget had no room for
}

// half is one direction of a connection.
type half struct {
	started bool   // next is known
	synSeen bool   // started by a SYN, whose sequence number is isn
	unknown bool   // started mid-stream: Gap(-1) is owed before the first bytes
	finSeen bool   // a FIN was seen at finSeq
	done    bool   // every byte up to the FIN was delivered
	isn     uint32 // initial sequence number, when synSeen
	next    uint32 // sequence number of the next byte to deliver
	finSeq  uint32
	// ooo[head:] are the out-of-order segments, ordered by seq; popping
	// advances head, so the slice keeps its capacity.
	ooo  []pending
	head int
	// hold charges the held segments to the connection's account; it is
	// busy while the direction is being delivered.
	hold decode.Hold
	// evicted says the budget took the held segments; evictedTo is the
	// end of the last of them, evictedHeld their bytes, evictWhy why.
	evicted     bool
	evictedTo   uint32
	evictedHeld int
	evictWhy    string
}

func (h *half) heldCount() int { return len(h.ooo) - h.head }

// pending is an out-of-order segment waiting for the bytes before it.
type pending struct {
	seq     uint32
	data    []byte
	missing int
	fin     bool
	t       time.Time
}

// NewAssembler returns an Assembler that feeds h. stats, when not nil,
// receives the counts (the Assembler updates it in place); opt may be nil.
func NewAssembler(h Handler, opt *Options, stats *Stats) *Assembler {
	if stats == nil {
		stats = new(Stats)
	}
	a := &Assembler{
		h:     h,
		opt:   opt.withDefaults(),
		stats: stats,
		conns: make(map[flowKey]*conn),
	}
	a.budget = budgetOf(h, &a.opt)
	a.fragAcct = a.budget.NewAccount()
	return a
}

// Stats returns the counts the Assembler updates.
func (a *Assembler) Stats() *Stats { return a.stats }

// Packet decodes one captured packet and, when it is a TCP segment, feeds
// it to reassembly. p.Data is not retained.
func (a *Assembler) Packet(p *Packet) {
	a.stats.Packets++
	a.stats.Bytes += int64(len(p.Data))
	if idle := a.opt.IdleTimeout; idle > 0 {
		if a.idleCheck.IsZero() {
			a.idleCheck = p.Time
		} else if p.Time.Sub(a.idleCheck) >= idle/4 {
			a.idleCheck = p.Time
			a.FlushIdle(p.Time, idle)
		}
	}
	switch decodeSegment(p.Link, p.Data, &a.seg) {
	case decodedTCP:
		a.stats.TCP++
		a.segment(&a.seg, p.Time)
	case decodedFragment:
		a.stats.Fragments++
		if a.seg.fragment != nil {
			a.defragment(a.seg.fragment, p.Time)
		}
	default:
		a.stats.Skipped++
	}
	if len(a.evictedQ) > 0 {
		a.applyEvictions(p.Time)
	}
}

func (a *Assembler) segment(s *segment, t time.Time) {
	key := keyOf(s.src, s.dst)
	c := a.conns[key]
	syn := s.flags&(tcpSYN|tcpACK) == tcpSYN // a connection request, not its answer
	if c != nil && syn && c.isNewConnection(s) {
		if !c.closed {
			a.closeConn(c, t)
		}
		c = nil
	}
	if c == nil {
		c = a.newConn(key, s, t)
	} else if c.closed {
		return // a trailing ACK, or a retransmission after FIN or RST
	}
	c.last = t
	d := 0
	if s.src != c.flow.A {
		d = 1
	}
	h := &c.half[d]
	if s.flags&tcpRST != 0 {
		a.closeConn(c, t)
		return
	}
	seq := s.seq
	if s.flags&tcpSYN != 0 {
		if !h.started {
			h.started, h.synSeen, h.isn, h.next = true, true, seq, seq+1
		}
		seq++ // the SYN occupies one sequence number; data may follow (TFO)
	}
	if !h.started {
		h.started, h.unknown, h.next = true, true, seq
	}
	if len(s.payload) == 0 && s.missing == 0 && s.flags&tcpFIN == 0 {
		return // a bare ACK or SYN
	}
	a.accept(c, d, seq, s.payload, s.missing, s.flags&tcpFIN != 0, t)
	if c.half[0].done && c.half[1].done {
		a.closeConn(c, t)
	}
}

// isNewConnection reports whether the SYN s starts a new connection on c's
// 4-tuple rather than retransmitting c's own SYN.
func (c *conn) isNewConnection(s *segment) bool {
	if c.closed {
		return true
	}
	d := 0
	if s.src != c.flow.A {
		d = 1
	}
	h := &c.half[d]
	return !h.synSeen || h.isn != s.seq
}

func (a *Assembler) newConn(key flowKey, s *segment, t time.Time) *conn {
	if a.open >= a.opt.MaxFlows {
		a.evict(t)
	}
	a.nextID++
	a.stats.Flows++
	c := &conn{key: key, last: t, asm: a}
	c.flow = Flow{ID: a.nextID, A: s.src, B: s.dst, First: t, Account: a.budget.NewAccount()}
	switch s.flags & (tcpSYN | tcpACK) {
	case tcpSYN:
		c.flow.SYN = true
	case tcpSYN | tcpACK: // the request was missed; its answer names the client
		c.flow.SYN = true
		c.flow.A, c.flow.B = s.dst, s.src
	}
	a.conns[key] = c
	a.open++
	return c
}

// accept takes the bytes [seq, seq+len(data)+missing) of direction d.
func (a *Assembler) accept(c *conn, d int, seq uint32, data []byte, missing int, fin bool, t time.Time) {
	h := &c.half[d]
	if h.done {
		return
	}
	a.applyEvicted(c, d, t)
	if h.done || c.closed {
		return
	}
	// The direction being delivered is not the budget's to take.
	h.hold.Busy = true
	defer func() { h.hold.Busy = false }()
	if fin && !h.finSeen {
		h.finSeen, h.finSeq = true, seq+uint32(len(data)+missing)
	}
	if ahead := int32(seq - h.next); ahead > 0 {
		a.hold(c, d, seq, data, missing, fin, t)
		return
	}
	a.deliver(c, d, seq, data, missing, t)
	a.drain(c, d, t)
}

// deliver passes on what of [seq, seq+len(data)+missing) lies at or after
// h.next; seq must not be after h.next.
func (a *Assembler) deliver(c *conn, d int, seq uint32, data []byte, missing int, t time.Time) {
	h := &c.half[d]
	skip := int(h.next - seq)
	if skip >= len(data)+missing {
		a.checkFin(c, d)
		return // all of it was delivered before: a retransmission
	}
	if skip < len(data) {
		data = data[skip:]
	} else {
		missing -= skip - len(data)
		data = nil
	}
	fromA := d == 0
	if h.unknown {
		h.unknown = false
		a.h.Gap(&c.flow, fromA, -1, t)
	}
	if len(data) > 0 {
		h.next += uint32(len(data))
		// The capacity is cut: a handler appending to data must not
		// write into the packet's other bytes (nor a read-only mapping).
		a.h.Data(&c.flow, fromA, data[:len(data):len(data)], t)
	}
	if missing > 0 {
		h.next += uint32(missing)
		a.gap(c, d, missing, t)
	}
	a.checkFin(c, d)
}

func (a *Assembler) checkFin(c *conn, d int) {
	h := &c.half[d]
	if h.finSeen && int32(h.next-h.finSeq) >= 0 {
		h.done = true
		h.next = h.finSeq + 1
		a.release(c, d)
	}
}

func (a *Assembler) gap(c *conn, d int, n int, t time.Time) {
	a.stats.Gaps++
	a.stats.GapBytes += int64(n)
	a.h.Gap(&c.flow, d == 0, n, t)
}

// drain delivers the held segments that have become in order.
func (a *Assembler) drain(c *conn, d int, t time.Time) {
	h := &c.half[d]
	for h.heldCount() > 0 && !h.done {
		p := h.ooo[h.head]
		if int32(p.seq-h.next) > 0 {
			return
		}
		a.pop(c, d)
		a.deliver(c, d, p.seq, p.data, p.missing, t)
		a.recycle(p.data)
	}
}

// pop removes the earliest held segment of direction d; the caller
// recycles its data when done with it.
func (a *Assembler) pop(c *conn, d int) {
	h := &c.half[d]
	n := len(h.ooo[h.head].data)
	c.buffered -= n
	a.buffered -= n
	h.hold.Resize(c.flow.Account, c, h.hold.Size()-segmentCost(n))
	h.ooo[h.head] = pending{}
	h.head++
	if h.head == len(h.ooo) {
		h.ooo, h.head = h.ooo[:0], 0
	}
}

// release drops what is held for a finished direction.
func (a *Assembler) release(c *conn, d int) {
	for h := &c.half[d]; h.heldCount() > 0; {
		data := h.ooo[h.head].data
		a.pop(c, d)
		a.recycle(data)
	}
}

// Buffers of held segments are reused, so that reordering in steady state
// allocates little.
const (
	maxFreeBuffers  = 256
	freeBufferBytes = 2048 // what one full-size Ethernet segment needs
)

func (a *Assembler) recycle(b []byte) {
	if !a.stable && cap(b) == freeBufferBytes && len(a.free) < maxFreeBuffers {
		a.free = append(a.free, b[:0])
	}
}

// clone copies data into a reused buffer when it fits one; stable data
// is kept as it is (its capacity cut, so that nothing appends to it).
func (a *Assembler) clone(data []byte) []byte {
	if a.stable {
		return data[:len(data):len(data)]
	}
	if len(data) > freeBufferBytes {
		return slices.Clone(data)
	}
	var b []byte
	if n := len(a.free); n > 0 {
		b, a.free = a.free[n-1], a.free[:n-1]
	} else {
		b = make([]byte, 0, freeBufferBytes)
	}
	return append(b, data...)
}

// hold keeps an out-of-order segment until the bytes before it arrive,
// within the reassembly bounds and the memory budget.
func (a *Assembler) hold(c *conn, d int, seq uint32, data []byte, missing int, fin bool, t time.Time) {
	h := &c.half[d]
	cost := segmentCost(len(data))
	for {
		if c.buffered+len(data) > a.opt.MaxBufferedPerFlow || a.buffered+len(data) > a.opt.MaxBufferedTotal {
			a.overBudget(c)
		} else if h.hold.Grow(c.flow.Account, c, cost) {
			break
		} else {
			a.refusedHold(c, d, seq, len(data), t)
		}
		if h.heldCount() == 0 {
			// Nothing of this direction to give up: the hole before this
			// segment is lost.
			a.skipTo(c, d, seq, t)
		} else {
			a.skipTo(c, d, h.ooo[h.head].seq, t)
		}
		if h.done {
			return
		}
		if int32(seq-h.next) <= 0 {
			a.deliver(c, d, seq, data, missing, t)
			a.drain(c, d, t)
			return
		}
	}
	i, found := slices.BinarySearchFunc(h.ooo[h.head:], seq, func(p pending, seq uint32) int {
		return int(int32(p.seq - seq))
	})
	if found {
		p := &h.ooo[h.head+i]
		old := segmentCost(len(p.data))
		if len(p.data)+p.missing >= len(data)+missing {
			h.hold.Resize(c.flow.Account, c, h.hold.Size()-cost)
			return // a retransmission of a held segment
		}
		h.hold.Resize(c.flow.Account, c, h.hold.Size()-old)
		c.buffered += len(data) - len(p.data)
		a.buffered += len(data) - len(p.data)
		a.recycle(p.data)
		*p = pending{seq: seq, data: a.clone(data), missing: missing, fin: fin, t: t}
		return
	}
	if h.head > 0 && len(h.ooo) == cap(h.ooo) {
		// Reuse the popped front instead of growing.
		n := copy(h.ooo, h.ooo[h.head:])
		clear(h.ooo[n:])
		h.ooo, h.head = h.ooo[:n], 0
	}
	h.ooo = slices.Insert(h.ooo, h.head+i, pending{seq: seq, data: a.clone(data), missing: missing, fin: fin, t: t})
	c.buffered += len(data)
	a.buffered += len(data)
}

func (a *Assembler) overBudget(c *conn) {
	if c.warned {
		return
	}
	c.warned = true
	a.stats.warn("capture: connection " + strconv.Itoa(c.flow.ID) +
		": out-of-order data beyond the reassembly budget (" + strconv.Itoa(a.opt.MaxBufferedPerFlow) +
		" bytes per connection, " + strconv.Itoa(a.opt.MaxBufferedTotal) + " in all); declaring the missing bytes lost")
}

// skipTo declares lost the bytes of direction d before seq and delivers
// what then is in order.
func (a *Assembler) skipTo(c *conn, d int, seq uint32, t time.Time) {
	h := &c.half[d]
	if n := int(int32(seq - h.next)); n > 0 {
		if h.unknown {
			h.unknown = false
			a.h.Gap(&c.flow, d == 0, -1, t)
		}
		h.next = seq
		a.gap(c, d, n, t)
	}
	a.drain(c, d, t)
}

// flushHalf delivers everything held for direction d, with gaps for the
// holes, at the held segments' own times.
func (a *Assembler) flushHalf(c *conn, d int) {
	h := &c.half[d]
	t := c.last
	if h.heldCount() > 0 {
		t = h.ooo[h.head].t
	}
	a.applyEvicted(c, d, t)
	h.hold.Busy = true
	defer func() { h.hold.Busy = false }()
	for h.heldCount() > 0 && !h.done {
		a.skipTo(c, d, h.ooo[h.head].seq, h.ooo[h.head].t)
	}
	a.release(c, d)
}

// closeConn flushes c and tells the handler it ended.
func (a *Assembler) closeConn(c *conn, t time.Time) {
	if c.closed {
		return
	}
	a.flushHalf(c, 0)
	a.flushHalf(c, 1)
	c.closed = true
	a.open--
	a.h.Close(&c.flow, t)
	a.closed = append(a.closed, c)
	// Closed connections only absorb trailing packets; keep as many as
	// connections may be open.
	for len(a.closed) > a.opt.MaxFlows {
		a.forget(a.closed[0])
		a.closed[0] = nil
		a.closed = a.closed[1:]
	}
}

// forget removes c from the table, unless a newer connection on the same
// 4-tuple took its place.
func (a *Assembler) forget(c *conn) {
	if a.conns[c.key] == c {
		delete(a.conns, c.key)
	}
}

// evict closes the sixteenth of the open connections idle the longest.
func (a *Assembler) evict(t time.Time) {
	var open []*conn
	for _, c := range a.conns {
		if !c.closed {
			open = append(open, c)
		}
	}
	slices.SortFunc(open, func(x, y *conn) int {
		if c := x.last.Compare(y.last); c != 0 {
			return c
		}
		return x.flow.ID - y.flow.ID
	})
	n := max(1, len(open)/16)
	if !a.warnedFlows {
		a.warnedFlows = true
		a.stats.warn("capture: more than " + strconv.Itoa(a.opt.MaxFlows) +
			" connections open at once; closing those idle the longest (their later packets start new connections)")
	}
	for _, c := range open[:n] {
		a.stats.Evicted++
		a.closeConn(c, t)
		a.forget(c) // so a later packet starts a new connection
	}
}

// FlushIdle closes the connections that saw no packet for idle before now;
// live sources call it now and then.
func (a *Assembler) FlushIdle(now time.Time, idle time.Duration) {
	var stale []*conn
	for _, c := range a.conns {
		if !c.closed && now.Sub(c.last) > idle {
			stale = append(stale, c)
		}
	}
	slices.SortFunc(stale, func(x, y *conn) int { return x.flow.ID - y.flow.ID })
	for _, c := range stale {
		a.closeConn(c, c.last)
		a.forget(c)
	}
}

// Flush delivers everything held, with gaps for what never arrived, and
// closes every open connection, in order of ID, at the time of its last
// packet. Call it at the end of the input.
func (a *Assembler) Flush() {
	var open []*conn
	for _, c := range a.conns {
		if !c.closed {
			open = append(open, c)
		}
	}
	slices.SortFunc(open, func(x, y *conn) int { return x.flow.ID - y.flow.ID })
	for _, c := range open {
		a.closeConn(c, c.last)
	}
	a.applyEvictions(time.Time{}) // what is left is of closed connections
	clear(a.conns)
	a.closed = nil
	// Incomplete datagrams at the end of the input never complete.
	a.fragHold.Release()
	clear(a.datagrams)
}

// fragmentTimeout is how long the fragments of an incomplete IPv4 datagram
// are kept: Linux's default ipfrag_time.
const fragmentTimeout = 30 * time.Second

// MaxPendingDatagrams bounds the incomplete IPv4 datagrams whose fragments
// are held (Linux bounds them by bytes, ipfrag_high_thresh, 4 MiB). When a
// fragment of a new datagram would exceed it, every pending datagram is
// dropped, once with a warning.
const MaxPendingDatagrams = 4096

// defragment keeps an IPv4 fragment (see defrag.go for the rules) and
// reassembles the TCP segment of the datagram it completes. Fragments
// are rare, so this path may allocate.
func (a *Assembler) defragment(ip []byte, t time.Time) {
	if a.datagrams == nil {
		a.datagrams = make(map[datagramKey]*ipv4Datagram)
	}
	if a.fragments++; a.fragments >= 1024 {
		a.fragments = 0
		old := t.Add(-fragmentTimeout)
		for k, dg := range a.datagrams {
			if dg.first.Before(old) {
				a.releaseDatagram(dg.bytes)
				delete(a.datagrams, k)
			}
		}
	}
	frag, err := parseFragment(ip)
	if err == errFragNotIPv4 {
		return
	}
	key := frag.key
	if err != nil {
		// A receiver drops what it held of the datagram too, or those
		// fragments would take the place of the ones sent again.
		if dg := a.datagrams[key]; dg != nil {
			a.releaseDatagram(dg.bytes)
			delete(a.datagrams, key)
		}
		return
	}
	if _, ok := a.datagrams[key]; !ok {
		if len(a.datagrams) >= MaxPendingDatagrams {
			if !a.warnedFrags {
				a.warnedFrags = true
				a.stats.warn("capture: more than " + strconv.Itoa(MaxPendingDatagrams) +
					" incomplete IPv4 datagrams pending at packet " + strconv.FormatInt(a.stats.Packets, 10) +
					": their fragments were dropped, and will be whenever the limit is reached again")
			}
			clear(a.datagrams)
			a.fragHold.Release()
		}
	}
	if !a.chargeFragment(len(ip)) {
		return // no room even for this one alone: dropped, counted
	}
	dg := a.datagrams[key] // the charge may have dropped the pending ones
	if dg == nil {
		dg = &ipv4Datagram{first: t}
		a.datagrams[key] = dg
	}
	dg.bytes += int64(len(ip)) + fragmentCost
	complete, err := dg.add(&frag)
	if err != nil || complete {
		a.releaseDatagram(dg.bytes)
		delete(a.datagrams, key) // dropped or completed
	}
	if err != nil || !complete || key.proto != ipProtoTCP {
		return
	}
	payload, err := dg.payload()
	if err != nil {
		return
	}
	src, dst := netip.AddrFrom4(key.src), netip.AddrFrom4(key.dst)
	if decodeTCP(payload, src, dst, 0, &a.seg) == decodedTCP {
		a.stats.TCP++
		a.segment(&a.seg, t)
	}
}
