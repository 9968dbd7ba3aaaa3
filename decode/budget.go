package decode

import "strconv"

// Budget is the memory budget shared by every decoder of one pipeline
// (issue 14): the state a decoder keeps between calls (a message being
// reassembled, a decompression window, units held for their container) is
// charged against it as a [Hold] before it is allocated, and given back
// when it is freed.
//
// A charge that does not fit makes room first by evicting other holds,
// the oldest first (the partial message waiting longest, the window opened
// longest ago): the evicted hold's owner frees its state and tells its
// connection what was dropped and why. A connection whose holds pass its
// share (see [Budget.Share]) evicts its own oldest first, so no single
// connection can take the whole budget. A charge that still does not fit
// is refused, and the requester drops that state itself.
//
// A Budget is not safe for concurrent use; the pipeline and the proxy
// decode under one lock. The zero Budget has no limit but still counts.
type Budget struct {
	limit, share int64

	used, high int64
	evictions  int
	refusals   int

	head, tail *Hold // charged holds, oldest first
}

// DefaultMaxMemory is --max-memory's default.
const DefaultMaxMemory = 512 << 20

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
func (b *Budget) Evictions() int { return b.evictions }

// Refusals counts charges refused because no room could be made.
func (b *Budget) Refusals() int { return b.refusals }

// Account is one connection's part of a budget. A nil Account, or one of
// a nil Budget, charges nothing and refuses nothing.
type Account struct {
	b    *Budget
	used int64
}

// NewAccount opens an account for one connection; b may be nil.
func (b *Budget) NewAccount() *Account {
	if b == nil {
		return nil
	}
	return &Account{b: b}
}

// Used is what the connection holds now.
func (a *Account) Used() int64 {
	if a == nil {
		return 0
	}
	return a.used
}

// Holder owns the state behind a [Hold]. Evict is called when the budget
// takes the hold back to make room: the holder must free that state (the
// hold is already released) and tell its connection; why says what
// reached which limit.
type Holder interface {
	Evict(h *Hold, why string)
}

// Hold is one piece of charged state. Its zero value is empty and
// uncharged; its owner embeds it next to the state it accounts for.
type Hold struct {
	acct       *Account
	owner      Holder
	n          int64
	prev, next *Hold
	linked     bool
	// Busy keeps the hold from being evicted while its owner is in the
	// middle of using it (a decompression context inside its own write).
	Busy bool
}

// Size is what the hold has charged.
func (h *Hold) Size() int64 { return h.n }

// Grow charges n more bytes to the hold, for owner on account a (a hold
// stays with the account and owner of its first charge). It reports false,
// charging nothing, when no room can be made; the caller must then not
// keep the bytes. Growing does not allocate.
func (h *Hold) Grow(a *Account, owner Holder, n int64) bool {
	if a == nil || a.b == nil || n <= 0 {
		return true
	}
	b := a.b
	if !h.linked {
		h.acct, h.owner = a, owner
	}
	if b.limit > 0 {
		if h.n+n > b.share || h.n+n > b.limit {
			b.refusals++
			return false
		}
		// The connection's own share first, then the whole budget.
		for a.used+n > b.share {
			if !b.evictOldest(a, h) {
				b.refusals++
				return false
			}
		}
		for b.used+n > b.limit {
			if !b.evictOldest(nil, h) {
				b.refusals++
				return false
			}
		}
	}
	if !h.linked {
		h.acct, h.owner, h.linked = a, owner, true
		h.prev, h.next = b.tail, nil
		if b.tail != nil {
			b.tail.next = h
		} else {
			b.head = h
		}
		b.tail = h
	}
	h.n += n
	a.used += n
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
	if h.prev != nil {
		h.prev.next = h.next
	} else {
		b.head = h.next
	}
	if h.next != nil {
		h.next.prev = h.prev
	} else {
		b.tail = h.prev
	}
	h.prev, h.next, h.linked = nil, nil, false
}

// evictOldest evicts the oldest hold of account a (nil: of any account)
// other than keep and busy ones; it reports whether it found one.
func (b *Budget) evictOldest(a *Account, keep *Hold) bool {
	for h := b.head; h != nil; h = h.next {
		if h == keep || h.Busy || (a != nil && h.acct != a) {
			continue
		}
		why := "the memory budget (--max-memory " + FormatSize(b.limit) + ") was reached"
		if a != nil {
			why = "this connection reached its share of the memory budget (" + FormatSize(b.share) + " of --max-memory " + FormatSize(b.limit) + ")"
		}
		owner, n := h.owner, h.n
		h.Release()
		b.evictions++
		if owner != nil {
			owner.Evict(h, why+": "+FormatSize(n)+" freed")
		}
		return true
	}
	return false
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
