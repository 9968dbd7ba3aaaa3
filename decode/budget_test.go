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
