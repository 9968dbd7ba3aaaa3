package decode

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestPieces: what is kept reads back as what was added, in order; shared
// pieces are kept as the very bytes and charged their length, copied ones
// are charged the chunks' capacity, never more than twice what was copied;
// a refusal keeps nothing.
func TestPieces(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		b := NewBudget(1 << 30)
		a := b.NewAccount()
		var h Hold
		var p Pieces
		var want []byte
		shared, copied := 0, 0
		for range rng.IntN(40) {
			q := make([]byte, rng.IntN(5000))
			for i := range q {
				q[i] = byte(rng.Uint32())
			}
			sh := rng.IntN(2) == 0
			if !p.Add(q, sh, 1<<20, &h, a, nil) {
				t.Fatal("refused")
			}
			want = append(want, q...)
			if sh {
				shared += len(q)
				if n := len(p.list); len(q) > 0 && &p.list[n-1][0] != &q[0] {
					t.Fatal("a shared piece was copied")
				}
			} else {
				copied += len(q)
			}
			if used := h.Size(); used < int64(shared+copied) || used > int64(shared+2*copied) {
				t.Fatalf("round %d: %d shared and %d copied, %d charged", round, shared, copied, used)
			}
		}
		if c := p.Concat([]byte("tail")); !bytes.Equal(c, append(append([]byte(nil), want...), "tail"...)) {
			t.Fatalf("round %d: Concat is not the bytes kept and the tail", round)
		}
		j, _ := p.Join()
		if got := p.AppendTo(nil); !bytes.Equal(got, want) || !bytes.Equal(j, want) && len(want) > 0 || p.Len() != len(want) {
			t.Fatalf("round %d: kept %d bytes, not the %d added", round, len(got), len(want))
		}
		h.Release()
	}
	// A budget that refuses: nothing is kept.
	b := NewBudget(100)
	var h Hold
	var p Pieces
	if p.Add(make([]byte, 200), true, 1<<20, &h, b.NewAccount(), nil) || p.Len() != 0 || h.Size() != 0 {
		t.Fatal("a refused piece was kept")
	}
}
