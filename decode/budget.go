package decode

import "strconv"

// Budget is the memory budget shared by every decoder of one pipeline
// and by the capture layer that feeds it (issue 14): the state kept
// between calls (a message being reassembled, a decompression window,
// units held for their container, out-of-order TCP segments, incomplete
// IP datagrams, pcapng interface tables) is charged against it as a
// [Hold] before it is allocated, and given back when it is freed.
//
// A charge that does not fit makes room first by evicting other holds,
// the least valuable first (see [Budget.Evictions] for the order): the
// evicted hold's owner frees its state and tells its connection what was
// dropped and why. A connection whose holds pass its share (see
// [Budget.Share]) evicts its own first, so no single connection can take
// the whole budget. A charge that still does not fit is refused, and the
// requester drops that state itself. A hold without an owner (bytes in
// use, such as a [Stream]'s reservation or an interface table) is never
// evicted.
//
// A Budget is not safe for concurrent use; the pipeline and the proxy
// decode under one lock, and the capture layer charges it only when it
// calls the pipeline on the same goroutine. The zero Budget has no limit
// but still counts.
type Budget struct {
	limit, share int64

	used, high int64
	evicted    [rankCount]int
	refusals   int

	// clock counts activity (charges and [Account.Touch]); an account
	// that saw none for IdleTicks of it is idle.
	clock uint64

	partials holdList // evictable partial state, in order of first charge
	// windows are the evictable windows and contexts, in order of their
	// connection's last activity (the idlest first): idle ones are a
	// prefix.
	windows holdList

	// adopt, while set, is what NewAccount returns (see [Budget.Within]).
	adopt *Account
}

// DefaultMaxMemory is --max-memory's default.
const DefaultMaxMemory = 512 << 20

// IdleTicks is how long a connection must have been quiet for its
// windows to go before any partial state: that many charges and
// deliveries of bytes, to any connection, since its last one.
const IdleTicks = 4096

// HoldKind says what a hold keeps, which decides when it is evicted.
type HoldKind uint8

const (
	// HoldPartial (the zero kind) is state waiting for more input: a
	// message or delivery being reassembled, out-of-order segments
	// waiting for a hole, an incomplete IP datagram. Dropping it loses
	// that one piece.
	HoldPartial HoldKind = iota
	// HoldWindow is a decompression window or context: dropping it loses
	// what its connection compresses until a new frame, but it is the
	// largest state there is, and an idle connection may never use it
	// again.
	HoldWindow
)

// Eviction ranks, in the order holds are taken.
const (
	rankIdleWindow = iota
	rankPartial
	rankWindow
	rankCount
)

// NewBudget returns a budget of limit bytes (<= 0: no limit). Each
// connection may hold a quarter of it, or up to 16 MiB if that is more,
// but never more than half: no single connection can take it all.
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit}
	if limit > 0 {
		b.share = max(limit/4, min(limit/2, 16<<20), 1)
	}
	return b
}

// Limit is the budget in bytes (0: none).
func (b *Budget) Limit() int64 { return b.limit }

// Share is what one connection may hold at once (0: no limit).
func (b *Budget) Share() int64 { return b.share }

// Used is what is charged now.
func (b *Budget) Used() int64 { return b.used }

// High is the most ever charged at once (the high-water mark); it never
// exceeds the limit.
func (b *Budget) High() int64 { return b.high }

// Evictions counts holds dropped to make room for another charge.
func (b *Budget) Evictions() int {
	n := 0
	for _, e := range b.evicted {
		n += e
	}
	return n
}

// EvictionCounts counts the evictions by what was taken, in the order
// the budget takes them: first the windows of idle connections, the
// largest first (the most memory, and the least likely to be used
// again); then partial state, the oldest first (the message or hole
// waiting longest is the least likely to complete); last the windows of
// active connections, the largest first (dropping one costs the rest of
// its connection's compressed stream until a new frame). Within one
// connection's share the same order holds, except that the connection
// is active: its oldest partial state goes first, then its largest
// window.
type EvictionCounts struct {
	IdleWindows, Partials, ActiveWindows int
}

// EvictionsByKind returns the evictions counted by what was taken.
func (b *Budget) EvictionsByKind() EvictionCounts {
	return EvictionCounts{b.evicted[rankIdleWindow], b.evicted[rankPartial], b.evicted[rankWindow]}
}

// Refusals counts charges refused because no room could be made.
func (b *Budget) Refusals() int { return b.refusals }

// Account is one connection's part of a budget: every layer that keeps
// state for the connection (reassembly, the pipeline, its decoder)
// charges the same account, so the share bounds them together. A nil
// Account, or one of a nil Budget, charges nothing and refuses nothing.
type Account struct {
	b    *Budget
	used int64
	last uint64 // the budget's clock at the connection's last activity
	// partials and windows are the account's evictable holds of each
	// kind, in order of first charge.
	partials, windows holdList
}

// NewAccount opens an account for one connection; b may be nil. Within
// [Budget.Within], it returns that account instead.
func (b *Budget) NewAccount() *Account {
	if b == nil {
		return nil
	}
	if b.adopt != nil {
		return b.adopt
	}
	b.clock++
	return &Account{b: b, last: b.clock}
}

// touch records activity on the account: its windows move to the end
// of the budget's, the least idle.
func (a *Account) touch() {
	b := a.b
	b.clock++
	a.last = b.clock
	for h := a.windows.head; h != nil; h = h.link[inAccount].next {
		if b.windows.tail != h {
			b.windows.remove(h, inBudget)
			b.windows.push(h, inBudget)
		}
	}
}

// Within calls fn with NewAccount returning a: a pipeline creates a
// connection's decoder within it, so that the decoder charges the
// account the capture layer opened for the connection. a may be nil (fn
// is then just called), and must be of b.
func (b *Budget) Within(a *Account, fn func()) {
	if b == nil || a == nil || a.b != b {
		fn()
		return
	}
	prev := b.adopt
	b.adopt = a
	defer func() { b.adopt = prev }()
	fn()
}

// Budget is the budget the account is part of (nil for a nil account).
func (a *Account) Budget() *Budget {
	if a == nil {
		return nil
	}
	return a.b
}

// Used is what the connection holds now.
func (a *Account) Used() int64 {
	if a == nil {
		return 0
	}
	return a.used
}

// Touch records activity on the connection (bytes delivered to it), so
// that its windows do not count as idle.
func (a *Account) Touch() {
	if a == nil || a.b == nil {
		return
	}
	a.touch()
}

func (a *Account) idle() bool { return a.b.clock-a.last > IdleTicks }

// Holder owns the state behind a [Hold]. Evict is called when the budget
// takes the hold back to make room: the holder must free that state (the
// hold is already released) and tell its connection; why says what
// reached which limit and why this state went first. Evict may be called
// from inside another owner's charge: it must not feed more input to
// anything.
type Holder interface {
	Evict(h *Hold, why string)
}

// Hold is one piece of charged state. Its zero value is empty and
// uncharged; its owner embeds it next to the state it accounts for.
type Hold struct {
	acct   *Account
	owner  Holder
	n      int64
	start  uint64 // the clock when the hold was first charged
	linked bool   // charged (n > 0 or an account set by a charge)
	listed bool   // in its budget's and account's eviction lists
	kind   HoldKind
	// link[inBudget] links the budget's list of the hold's kind,
	// link[inAccount] the account's.
	link [2]holdLink
	// Kind says what the hold keeps (set it before the first charge).
	Kind HoldKind
	// Busy keeps the hold from being evicted while its owner is in the
	// middle of using it (a decompression context inside its own write).
	Busy bool
}

// Size is what the hold has charged.
func (h *Hold) Size() int64 { return h.n }

// The two lists a hold is on: its budget's and its account's, of its kind.
const (
	inBudget = iota
	inAccount
)

type holdLink struct{ prev, next *Hold }

type holdList struct{ head, tail *Hold }

// push appends h to the list, linked through h.link[side].
func (l *holdList) push(h *Hold, side int) {
	h.link[side] = holdLink{prev: l.tail}
	if l.tail != nil {
		l.tail.link[side].next = h
	} else {
		l.head = h
	}
	l.tail = h
}

// remove unlinks h from the list it is on through h.link[side].
func (l *holdList) remove(h *Hold, side int) {
	k := h.link[side]
	if k.prev != nil {
		k.prev.link[side].next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		k.next.link[side].prev = k.prev
	} else {
		l.tail = k.prev
	}
	h.link[side] = holdLink{}
}

func (b *Budget) list(k HoldKind) *holdList {
	if k == HoldWindow {
		return &b.windows
	}
	return &b.partials
}

func (a *Account) list(k HoldKind) *holdList {
	if k == HoldWindow {
		return &a.windows
	}
	return &a.partials
}

// Grow charges n more bytes to the hold, for owner on account a (a hold
// stays with the account and owner of its first charge; a nil owner
// makes it one that is never evicted). It reports false, charging
// nothing, when no room can be made; the caller must then not keep the
// bytes. Growing does not allocate.
func (h *Hold) Grow(a *Account, owner Holder, n int64) bool {
	if a == nil || a.b == nil || n <= 0 {
		return true
	}
	b := a.b
	if !h.linked {
		h.acct, h.owner = a, owner
	}
	h.acct.touch()
	if b.limit > 0 {
		if h.n+n > b.share || h.n+n > b.limit {
			b.refusals++
			return false
		}
		// The connection's own share first, then the whole budget.
		for h.acct.used+n > b.share {
			if !b.evict(h.acct, h) {
				b.refusals++
				return false
			}
		}
		for b.used+n > b.limit {
			if !b.evict(nil, h) {
				b.refusals++
				return false
			}
		}
	}
	if !h.linked {
		h.acct, h.owner, h.linked, h.start = a, owner, true, b.clock
		if owner != nil {
			h.listed, h.kind = true, h.Kind
			b.list(h.kind).push(h, inBudget)
			a.list(h.kind).push(h, inAccount)
		}
	}
	h.n += n
	h.acct.used += n
	b.used += n
	if b.used > b.high {
		b.high = b.used
	}
	return true
}

// Resize sets the hold's charge to n bytes: less gives back the
// difference, more is charged as [Hold.Grow] charges it (false: refused,
// the charge unchanged).
func (h *Hold) Resize(a *Account, owner Holder, n int64) bool {
	switch {
	case n <= 0:
		h.Release()
	case n < h.n:
		d := h.n - n
		h.acct.used -= d
		h.acct.b.used -= d
		h.n = n
	case n > h.n:
		return h.Grow(a, owner, n-h.n)
	}
	return true
}

// Release gives back everything the hold charged; the hold may be used
// again.
func (h *Hold) Release() {
	if !h.linked {
		return
	}
	a := h.acct
	b := a.b
	a.used -= h.n
	b.used -= h.n
	h.n = 0
	if h.listed {
		b.list(h.kind).remove(h, inBudget)
		a.list(h.kind).remove(h, inAccount)
		h.listed = false
	}
	h.linked = false
}

// evictable reports whether h may be taken to make room for keep.
func evictable(h, keep *Hold) bool { return h != keep && !h.Busy }

// victim chooses the hold to evict for a charge to keep: of account a
// when a is not nil (the connection's share), else of any account. Each
// step is cheap where evictions can be many: partial state is taken from
// the front of a list; windows, each at least a few hundred KiB, are
// walked only as far as the idle ones go, unless nothing else is left.
func (b *Budget) victim(a *Account, keep *Hold) (*Hold, int) {
	if a != nil {
		// The connection is active (it is charging): its oldest partial
		// state first, then its largest window.
		for h := a.partials.head; h != nil; h = h.link[inAccount].next {
			if evictable(h, keep) {
				return h, rankPartial
			}
		}
		return largest(a.windows.head, keep, inAccount), rankWindow
	}
	var idle *Hold
	for h := b.windows.head; h != nil && h.acct.idle(); h = h.link[inBudget].next {
		if evictable(h, keep) && (idle == nil || h.n > idle.n) {
			idle = h
		}
	}
	if idle != nil {
		return idle, rankIdleWindow
	}
	for h := b.partials.head; h != nil; h = h.link[inBudget].next {
		if evictable(h, keep) {
			return h, rankPartial
		}
	}
	return largest(b.windows.head, keep, inBudget), rankWindow
}

// largest returns the largest evictable hold of a list linked through
// link[side] (the first of equals), or nil.
func largest(h, keep *Hold, side int) *Hold {
	var best *Hold
	for ; h != nil; h = h.link[side].next {
		if evictable(h, keep) && (best == nil || h.n > best.n) {
			best = h
		}
	}
	return best
}

// evict evicts the least valuable hold of account a (nil: of any account)
// other than keep and busy ones; it reports whether it found one.
func (b *Budget) evict(a *Account, keep *Hold) bool {
	h, rank := b.victim(a, keep)
	if h == nil {
		return false
	}
	why := "the memory budget (--max-memory " + FormatSize(b.limit) + ") was reached"
	if a != nil {
		why = "this connection reached its share of the memory budget (" + FormatSize(b.share) + " of --max-memory " + FormatSize(b.limit) + ")"
	}
	owner, n := h.owner, h.n
	h.Release()
	b.evicted[rank]++
	if owner != nil {
		owner.Evict(h, why+": "+FormatSize(n)+" freed, "+rankWhy[rank])
	}
	return true
}

var rankWhy = [rankCount]string{
	rankIdleWindow: "the largest window of an idle connection going first",
	rankPartial:    "the oldest partial state going first",
	rankWindow:     "the largest window going first (no idle window or partial state was left)",
}

// FormatSize renders a byte count the way --max-memory takes it: a whole
// number of GiB, MiB or KiB when it is one, else bytes.
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// FormatBytes renders a byte count for reading: bytes below 1 KiB, else
// one decimal of the largest binary unit under it ("113.9MiB").
func FormatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	f, i := float64(n)/1024, 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + string(units[i]) + "iB"
}

// ParseSize reads a size such as 512MiB, 64KiB, 2GiB or 1048576 (bytes).
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	num := s
	for _, u := range [...]struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			mult, num = u.mult, s[:len(s)-len(u.suffix)]
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, &sizeError{s}
	}
	return v * mult, nil
}

type sizeError struct{ s string }

func (e *sizeError) Error() string {
	return "decode: invalid size " + strconv.Quote(e.s) + " (want a number of bytes, KiB, MiB or GiB)"
}
