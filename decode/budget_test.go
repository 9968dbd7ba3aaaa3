package decode

import (
	"strings"
	"testing"
)

type testHolder struct {
	name    string
	evicted []string
}

func (h *testHolder) Evict(_ *Hold, why string) { h.evicted = append(h.evicted, why) }

func TestBudgetEvictsOldestFirst(t *testing.T) {
	b := NewBudget(64 << 20) // share: 16 MiB
	if b.Share() != 16<<20 {
		t.Fatalf("share %d, want 16 MiB", b.Share())
	}
	var holds [5]Hold
	var owners [5]testHolder
	accts := make([]*Account, 5)
	for i := range holds {
		accts[i] = b.NewAccount()
		if !holds[i].Grow(accts[i], &owners[i], 15<<20) {
			t.Fatalf("hold %d refused", i)
		}
	}
	// Four fit in 64 MiB; the fifth evicted the oldest.
	if len(owners[0].evicted) != 1 || holds[0].Size() != 0 || accts[0].Used() != 0 {
		t.Fatalf("oldest not evicted: %q, size %d", owners[0].evicted, holds[0].Size())
	}
	if !strings.Contains(owners[0].evicted[0], "--max-memory 64MiB") {
		t.Errorf("eviction reason %q does not name the budget", owners[0].evicted[0])
	}
	for i := 1; i < 5; i++ {
		if len(owners[i].evicted) != 0 {
			t.Errorf("hold %d evicted", i)
		}
	}
	if b.Used() != 60<<20 || b.High() > b.Limit() || b.Evictions() != 1 {
		t.Errorf("used %d high %d evictions %d", b.Used(), b.High(), b.Evictions())
	}
	for i := range holds {
		holds[i].Release()
	}
	if b.Used() != 0 {
		t.Errorf("used %d after releasing everything", b.Used())
	}
}

func TestBudgetShare(t *testing.T) {
	b := NewBudget(64 << 20)
	a := b.NewAccount()
	var h1, h2, big Hold
	var o1, o2, o3 testHolder
	if !h1.Grow(a, &o1, 10<<20) || !h2.Grow(a, &o2, 4<<20) {
		t.Fatal("refused under the share")
	}
	// Past the connection's share: its own oldest goes, not another's.
	other := b.NewAccount()
	var h3 Hold
	var o4 testHolder
	if !h3.Grow(other, &o4, 8<<20) {
		t.Fatal("other refused")
	}
	if !h2.Grow(a, &o2, 4<<20) {
		t.Fatal("growth refused")
	}
	if len(o1.evicted) != 1 || !strings.Contains(o1.evicted[0], "its share") || len(o4.evicted) != 0 {
		t.Errorf("share: evicted %q / %q", o1.evicted, o4.evicted)
	}
	// A single hold larger than the share is refused outright.
	if small := NewBudget(8 << 20); small.Share() != 4<<20 {
		t.Errorf("an 8 MiB budget's share is %d, want half", small.Share())
	}
	if big.Grow(a, &o3, 17<<20) || b.Refusals() != 1 {
		t.Errorf("a hold past the share was granted (refusals %d)", b.Refusals())
	}
	// A busy hold is not evicted.
	h2.Busy = true
	var h4 Hold
	if h4.Grow(a, &o3, 9<<20) {
		t.Errorf("granted by evicting a busy hold")
	}
	if b.High() > b.Limit() {
		t.Errorf("high-water %d past the limit %d", b.High(), b.Limit())
	}
}

func TestBudgetNil(t *testing.T) {
	var b *Budget
	a := b.NewAccount()
	var h Hold
	if !h.Grow(a, nil, 1<<40) || a.Used() != 0 {
		t.Error("a nil budget charged or refused")
	}
	h.Release()
	unlimited := NewBudget(0)
	a = unlimited.NewAccount()
	if !h.Grow(a, nil, 1<<40) || unlimited.High() != 1<<40 {
		t.Error("an unlimited budget refused or did not count")
	}
}

func TestBudgetGrowAllocs(t *testing.T) {
	b := NewBudget(1 << 30)
	a := b.NewAccount()
	var h Hold
	var o testHolder
	n := testing.AllocsPerRun(1000, func() {
		h.Grow(a, &o, 100)
		h.Release()
	})
	if n != 0 {
		t.Errorf("Grow/Release allocate %v times", n)
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{{"512MiB", 512 << 20}, {"64KiB", 64 << 10}, {"2GiB", 2 << 30}, {"1048576", 1 << 20}, {"0", 0}, {"3M", 3 << 20}} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
		if c.want > 0 && FormatSize(c.want) != c.in && !strings.HasSuffix(c.in, "M") && c.in != "1048576" {
			t.Errorf("FormatSize(%d) = %q, want %q", c.want, FormatSize(c.want), c.in)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "1.5GiB", "12XB", "99999999999GiB"} {
		if _, err := ParseSize(bad); err == nil || !strings.HasPrefix(err.Error(), "decode: invalid size") {
			t.Errorf("ParseSize(%q): %v", bad, err)
		}
	}
}

func TestStreamReserve(t *testing.T) {
	b := NewBudget(1 << 20) // share 512 KiB
	a := b.NewAccount()
	var s Stream
	if !s.Reserve(a, 300<<10) || b.Used() != 300<<10 {
		t.Fatalf("reserve: used %d", b.Used())
	}
	if !s.Reserve(a, 100<<10) || b.Used() != 100<<10 {
		t.Fatalf("shrink: used %d", b.Used())
	}
	if s.Reserve(a, 600<<10) || b.Used() != 100<<10 {
		t.Fatalf("past the share: granted, or used %d", b.Used())
	}
	// A stream's reservation is not evicted to make room for another.
	var h Hold
	var o testHolder
	other := b.NewAccount()
	if !h.Grow(other, &o, 512<<10) {
		t.Fatal("other refused")
	}
	var h2 Hold
	if h2.Grow(other, &o, 500<<10) && b.Used() > b.Limit() {
		t.Fatal("past the limit")
	}
	if s.hold.Size() != 100<<10 {
		t.Errorf("the stream's reservation was evicted")
	}
	buf := s.Push([]byte("abc"))
	s.Keep(len(buf), nil)
	if s.hold.Size() != 0 {
		t.Errorf("emptied stream still reserves %d", s.hold.Size())
	}
	s.Reserve(a, 10)
	s.Reset(0)
	if s.hold.Size() != 0 || a.Used() != 0 {
		t.Errorf("reset stream still reserves %d", s.hold.Size())
	}
}

// TestBudgetEvictsLeastValuableFirst: windows of idle connections go
// first, the largest first; then partial state, the oldest first; the
// windows of active connections last.
func TestBudgetEvictsLeastValuableFirst(t *testing.T) {
	b := NewBudget(64 << 20) // share 16 MiB
	type held struct {
		h Hold
		o testHolder
		a *Account
	}
	charge := func(kind HoldKind, n int64) *held {
		t.Helper()
		x := &held{a: b.NewAccount()}
		x.h.Kind = kind
		if !x.h.Grow(x.a, &x.o, n) {
			t.Fatalf("a hold of %d refused", n)
		}
		return x
	}
	w1 := charge(HoldWindow, 6<<20)
	w2 := charge(HoldWindow, 10<<20)
	p1 := charge(HoldPartial, 8<<20)
	p2 := charge(HoldPartial, 8<<20)
	// w1 and w2's connections go quiet while p2's is fed.
	for range IdleTicks + 1 {
		p2.a.Touch()
	}
	p1.a.Touch()
	w3 := charge(HoldWindow, 14<<20) // active
	x := charge(HoldPartial, 16<<20) // 62 MiB in all
	if b.Evictions() != 0 {
		t.Fatalf("%d evictions under the limit", b.Evictions())
	}
	// 12 MiB more: the larger idle window goes, not the older one nor
	// the older partial state.
	y := charge(HoldPartial, 12<<20)
	if got := b.EvictionsByKind(); got != (EvictionCounts{IdleWindows: 1}) || len(w2.o.evicted) != 1 || len(w1.o.evicted) != 0 || w2.h.Size() != 0 {
		t.Fatalf("evictions %+v, w1 %q, w2 %q: want the larger idle window", got, w1.o.evicted, w2.o.evicted)
	}
	if !strings.Contains(w2.o.evicted[0], "the largest window of an idle connection going first") {
		t.Errorf("reason %q does not say why the window went first", w2.o.evicted[0])
	}
	// The other idle window goes before the older partial state.
	z1 := charge(HoldPartial, 6<<20)
	if got := b.EvictionsByKind(); got != (EvictionCounts{IdleWindows: 2}) || len(w1.o.evicted) != 1 || len(p1.o.evicted) != 0 {
		t.Fatalf("evictions %+v, w1 %q, p1 %q: want the idle window", got, w1.o.evicted, p1.o.evicted)
	}
	// No idle window left: the oldest partial state goes, not the window.
	z := charge(HoldPartial, 8<<20)
	if got := b.EvictionsByKind(); got != (EvictionCounts{IdleWindows: 2, Partials: 1}) || len(p1.o.evicted) != 1 || len(p2.o.evicted) != 0 || len(w3.o.evicted) != 0 {
		t.Fatalf("evictions %+v, p1 %q, w3 %q: want the oldest partial", got, p1.o.evicted, w3.o.evicted)
	}
	// Nothing partial to take (all busy): the active window goes last.
	for _, h := range []*held{p2, x, y, z1, z} {
		h.h.Busy = true
	}
	charge(HoldPartial, 10<<20)
	if got := b.EvictionsByKind(); got != (EvictionCounts{IdleWindows: 2, Partials: 1, ActiveWindows: 1}) || len(w3.o.evicted) != 1 {
		t.Fatalf("evictions %+v, w3 %q: want the active window", got, w3.o.evicted)
	}
	if !strings.Contains(w3.o.evicted[0], "no idle window or partial state was left") {
		t.Errorf("reason %q", w3.o.evicted[0])
	}
	if b.High() > b.Limit() || b.Evictions() != 4 || b.Refusals() != 0 {
		t.Errorf("high %d of %d, evictions %d, refusals %d", b.High(), b.Limit(), b.Evictions(), b.Refusals())
	}
}

// TestBudgetShareEvictsPartialBeforeWindow: past its share, a connection
// gives up its own partial state before its window, even an older window.
func TestBudgetShareEvictsPartialBeforeWindow(t *testing.T) {
	b := NewBudget(64 << 20) // share 16 MiB
	a := b.NewAccount()
	var win, part, grow Hold
	var ow, op, og testHolder
	win.Kind = HoldWindow
	if !win.Grow(a, &ow, 8<<20) || !part.Grow(a, &op, 4<<20) || !grow.Grow(a, &og, 2<<20) {
		t.Fatal("refused under the share")
	}
	if !grow.Grow(a, &og, 4<<20) { // 18 MiB: the partial goes
		t.Fatal("growth refused")
	}
	if len(op.evicted) != 1 || len(ow.evicted) != 0 || !strings.Contains(op.evicted[0], "its share") {
		t.Fatalf("partial %q, window %q: want the partial state first", op.evicted, ow.evicted)
	}
	if !grow.Grow(a, &og, 4<<20) { // 18 MiB again: only the window is left
		t.Fatal("growth refused")
	}
	if got := b.EvictionsByKind(); got != (EvictionCounts{Partials: 1, ActiveWindows: 1}) || a.Used() != 10<<20 {
		t.Errorf("evictions %+v, used %d", got, a.Used())
	}
}

// TestBudgetWithin: a decoder created within Within charges the account
// its connection's source opened, so the share bounds both.
func TestBudgetWithin(t *testing.T) {
	b := NewBudget(64 << 20)
	conn := b.NewAccount()
	var got *Account
	b.Within(conn, func() { got = b.NewAccount() })
	if got != conn {
		t.Fatal("NewAccount within Within opened another account")
	}
	if b.NewAccount() == conn {
		t.Fatal("Within left its account adopted")
	}
	var capHold, decHold Hold
	var o1, o2 testHolder
	if !capHold.Grow(conn, &o1, 10<<20) || !decHold.Grow(got, &o2, 10<<20) {
		t.Fatal("refused")
	}
	if len(o1.evicted) != 1 || conn.Used() != 10<<20 {
		t.Errorf("the shared account passed its share: evicted %q, used %d", o1.evicted, conn.Used())
	}
	var nb *Budget
	called := false
	nb.Within(conn, func() { called = true })
	if !called {
		t.Error("a nil budget's Within did not call fn")
	}
}

// TestBudgetOwnerlessNeverEvicted: a hold without an owner (bytes in
// use) is charged but never taken.
func TestBudgetOwnerlessNeverEvicted(t *testing.T) {
	b := NewBudget(4 << 20) // share 2 MiB
	a1, a2, a3 := b.NewAccount(), b.NewAccount(), b.NewAccount()
	var h1, h2, h3 Hold
	var o testHolder
	if !h1.Grow(a1, nil, 2<<20) || !h2.Grow(a2, nil, 2<<20) {
		t.Fatal("refused")
	}
	if h3.Grow(a3, &o, 1) || h1.Size() != 2<<20 || b.Refusals() != 1 || b.Evictions() != 0 {
		t.Errorf("an ownerless hold was taken: sizes %d %d, refusals %d", h1.Size(), h2.Size(), b.Refusals())
	}
}

// TestBudgetIdleFollowsActivity: idleness is the connection's, not the
// window's age: a window charged first whose connection stays busy is
// kept, and the quiet connection's smaller window goes.
func TestBudgetIdleFollowsActivity(t *testing.T) {
	b := NewBudget(32 << 20) // share 16 MiB
	busy, quiet := b.NewAccount(), b.NewAccount()
	var w1, w2, p Hold
	var o1, o2, op testHolder
	w1.Kind, w2.Kind = HoldWindow, HoldWindow
	if !w1.Grow(busy, &o1, 12<<20) || !w2.Grow(quiet, &o2, 8<<20) {
		t.Fatal("refused")
	}
	for range IdleTicks + 1 {
		busy.Touch()
	}
	if !p.Grow(b.NewAccount(), &op, 14<<20) {
		t.Fatal("refused")
	}
	if len(o2.evicted) != 1 || len(o1.evicted) != 0 || b.EvictionsByKind() != (EvictionCounts{IdleWindows: 1}) {
		t.Errorf("busy window %q, quiet window %q, evictions %+v", o1.evicted, o2.evicted, b.EvictionsByKind())
	}
	// Once the busy connection is quiet too, its window is idle.
	for range IdleTicks + 1 {
		quiet.Touch()
	}
	var q Hold
	if !q.Grow(quiet, &op, 8<<20) || len(o1.evicted) != 1 || b.EvictionsByKind() != (EvictionCounts{IdleWindows: 2}) {
		t.Errorf("busy window %q after its connection went quiet, evictions %+v", o1.evicted, b.EvictionsByKind())
	}
}
