package capture

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// The capture layer's state charged to the pipeline's memory budget
// (--max-memory, issue 14): each connection's out-of-order segments on
// the connection's account (Flow.Account, which the pipeline and the
// connection's decoder charge too, so one share bounds them all), and
// the incomplete IPv4 datagrams and the pcapng interface table on an
// account of the capture's own. The fixed bounds (Options'
// MaxBufferedPerFlow and MaxBufferedTotal, MaxPendingDatagrams,
// MaxInterfaces) stay; the budget comes on top of them.

// Budgeted is implemented by handlers that decode under a memory budget
// ([pipeline.Pipeline]): a source that calls such a handler on its own
// goroutine charges its own state to the same budget (a [decode.Budget]
// is not safe for concurrent use, so a handler that decodes elsewhere,
// such as a [Decoupled], must not expose it).
type Budgeted interface {
	Budget() *decode.Budget
}

// Warner is implemented by handlers that show what a source dropped as
// a unit of its own on the connection (a "warning" unit), in order with
// the units around it. Handlers that are not told get the message in
// [Stats.Warnings].
type Warner interface {
	// Warning says msg about flow f, on the direction from A (fromA) or
	// from B, at time t; summary is its one-line summary.
	Warning(f *Flow, fromA bool, summary, msg string, t time.Time)
}

// budgetOf is the budget a source charges: Options.Budget, else the
// handler's.
func budgetOf(h Handler, o *Options) *decode.Budget {
	if o != nil && o.Budget != nil {
		return o.Budget
	}
	if b, ok := h.(Budgeted); ok {
		return b.Budget()
	}
	return nil
}

// What held state costs besides its bytes.
const (
	// pendingCost is one held segment's entry in its queue.
	pendingCost = int64(unsafe.Sizeof(pending{}))
	// fragmentCost is charged per fragment besides the packet's bytes:
	// its record and its datagram's entry come to well under 200 bytes
	// (defrag.go), but the charge stays what gopacket's ip4defrag, used
	// before, was measured to keep (100k fragments of 1 KiB, about
	// 200 MB), so the budget's limits on fragments did not move.
	fragmentCost = 1024
	// interfaceCost is one pcapng interface in the reader's table.
	interfaceCost = int64(unsafe.Sizeof(ngInterface{}))
)

// segmentCost is what holding a segment of n bytes costs: the reused
// buffer it is copied to, or a copy of its own.
func segmentCost(n int) int64 {
	return max(int64(n), freeBufferBytes) + pendingCost
}

func dirName(c *conn, d int) string {
	if d == 0 {
		return "from " + c.flow.A.String()
	}
	return "from " + c.flow.B.String()
}

// Evict implements [decode.Holder]: the budget took back the
// out-of-order segments held for one direction of c. They are freed at
// once; the connection is told, and the bytes from the hole to the end
// of the last of them are reported lost, when the assembler next has the
// stack (Evict may be called from inside a decoder's charge, which must
// not be fed more bytes).
func (c *conn) Evict(hold *decode.Hold, why string) {
	d := 0
	if hold == &c.half[1].hold {
		d = 1
	}
	h := &c.half[d]
	a := c.asm
	end := h.next
	held := 0
	for _, p := range h.ooo[h.head:] {
		if e := p.seq + uint32(len(p.data)+p.missing); int32(e-end) > 0 {
			end = e
		}
		held += len(p.data)
		a.recycle(p.data)
	}
	clear(h.ooo)
	h.ooo, h.head = h.ooo[:0], 0
	c.buffered -= held
	a.buffered -= held
	if !h.evicted {
		h.evicted, h.evictedTo, h.evictedHeld, h.evictWhy = true, end, held, why
		a.evictedQ = append(a.evictedQ, c)
	} else {
		h.evictedHeld += held
		if int32(end-h.evictedTo) > 0 {
			h.evictedTo = end
		}
	}
}

// applyEvictions tells the connections whose held segments the budget
// took, and reports their bytes lost.
func (a *Assembler) applyEvictions(t time.Time) {
	for len(a.evictedQ) > 0 {
		c := a.evictedQ[0]
		a.evictedQ[0] = nil
		a.evictedQ = a.evictedQ[1:]
		a.applyEvicted(c, 0, t)
		a.applyEvicted(c, 1, t)
	}
	a.evictedQ = a.evictedQ[:0]
}

func (a *Assembler) applyEvicted(c *conn, d int, t time.Time) {
	h := &c.half[d]
	if !h.evicted {
		return
	}
	h.evicted = false
	if c.closed || h.done {
		return
	}
	lost := int64(int32(h.evictedTo - h.next))
	a.stats.BudgetDrops++
	a.budgetWarning(c, d, "memory budget: out-of-order segments dropped",
		"capture: connection "+strconv.Itoa(c.flow.ID)+" "+dirName(c, d)+": "+strconv.Itoa(h.evictedHeld)+
			" bytes of out-of-order segments waiting for the bytes at sequence "+strconv.FormatUint(uint64(h.next), 10)+
			" dropped: "+h.evictWhy+"; the "+strconv.FormatInt(max(lost, 0), 10)+" bytes up to sequence "+
			strconv.FormatUint(uint64(h.evictedTo), 10)+" are reported lost", t)
	a.skipTo(c, d, h.evictedTo, t)
	a.checkFin(c, d)
	if c.half[0].done && c.half[1].done {
		a.closeConn(c, t)
	}
}

// refusedHold says that the budget had no room for an out-of-order
// segment of n bytes at seq: the first time on each connection as a
// unit; every time in Stats.BudgetDrops.
func (a *Assembler) refusedHold(c *conn, d int, seq uint32, n int, t time.Time) {
	a.stats.BudgetDrops++
	if c.warnedBudget {
		return
	}
	c.warnedBudget = true
	a.budgetWarning(c, d, "memory budget: out-of-order segment not held",
		"capture: connection "+strconv.Itoa(c.flow.ID)+" "+dirName(c, d)+": an out-of-order segment of "+strconv.Itoa(n)+
			" bytes at sequence "+strconv.FormatUint(uint64(seq), 10)+" not held: the memory budget (--max-memory "+
			decode.FormatSize(a.budget.Limit())+", "+decode.FormatSize(a.budget.Share())+" a connection) has no room for it; "+
			"the bytes missing before it are reported lost (later refusals on this connection are counted, not said)", t)
}

func (a *Assembler) budgetWarning(c *conn, d int, summary, msg string, t time.Time) {
	if w, ok := a.h.(Warner); ok {
		w.Warning(&c.flow, d == 0, summary, msg, t)
		return
	}
	a.stats.warn(msg)
}

// Evict implements [decode.Holder] for the table of incomplete IPv4
// datagrams: the budget took it back, so every pending fragment is
// dropped (which one to drop the budget does not say), with one warning.
func (a *Assembler) Evict(_ *decode.Hold, why string) {
	a.dropFragments("capture: incomplete IPv4 datagrams dropped at packet " + strconv.FormatInt(a.stats.Packets, 10) +
		": " + why)
}

// dropFragments drops every pending fragment; msg is said the first time.
func (a *Assembler) dropFragments(msg string) {
	a.stats.BudgetDrops++
	if !a.warnedFragBudget {
		a.warnedFragBudget = true
		a.stats.warn(msg + " (and will be whenever the memory budget is reached again)")
	}
	a.fragHold.Release()
	clear(a.datagrams)
}

// chargeFragment charges a fragment of n bytes to the budget; it reports false when there is no room even after dropping
// the pending ones.
func (a *Assembler) chargeFragment(n int) bool {
	cost := int64(n) + fragmentCost
	if a.fragHold.Grow(a.fragAcct, a, cost) {
		return true
	}
	if a.fragHold.Size() == 0 {
		a.stats.BudgetDrops++
		return false
	}
	a.dropFragments("capture: incomplete IPv4 datagrams dropped at packet " + strconv.FormatInt(a.stats.Packets, 10) +
		": the memory budget (--max-memory " + decode.FormatSize(a.budget.Limit()) + ", " +
		decode.FormatSize(a.budget.Share()) + " for them) has no room for more")
	if !a.fragHold.Grow(a.fragAcct, a, cost) {
		a.stats.BudgetDrops++
		return false
	}
	return true
}

// releaseDatagram gives back what a datagram's fragments were charged.
func (a *Assembler) releaseDatagram(bytes int64) {
	if bytes > 0 && a.fragHold.Size() > 0 {
		a.fragHold.Resize(a.fragAcct, a, a.fragHold.Size()-min(bytes, a.fragHold.Size()))
	}
}

// chargeInterface charges one more interface to the budget, growing the
// table's capacity in steps; false: no room (the interface is not kept).
func (r *ngReader) chargeInterface() bool {
	if r.acct == nil {
		return true
	}
	if len(r.ifaces) < cap(r.ifaces) {
		return true
	}
	more := max(16, cap(r.ifaces))
	if !r.hold.Grow(r.acct, nil, int64(more)*interfaceCost) {
		return false
	}
	grown := make([]ngInterface, len(r.ifaces), cap(r.ifaces)+more)
	copy(grown, r.ifaces)
	r.ifaces = grown
	return true
}
