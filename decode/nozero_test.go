package decode

import (
	"bytes"
	"testing"
)

// TestMakeNoZero: an empty slice with at least the room asked for, its
// own memory (two never overlap), whatever it held written over by
// appends; nothing for nothing.
func TestMakeNoZero(t *testing.T) {
	if b := MakeNoZero(0); b != nil {
		t.Errorf("MakeNoZero(0) = %v", b)
	}
	for _, n := range []int{1, 7, 4096, 100 << 10, 3 << 20} {
		a, b := MakeNoZero(n), MakeNoZero(n)
		if len(a) != 0 || cap(a) < n || len(b) != 0 || cap(b) < n {
			t.Fatalf("n=%d: len %d cap %d, len %d cap %d", n, len(a), cap(a), len(b), cap(b))
		}
		a = append(a, bytes.Repeat([]byte{0xaa}, n)...)
		b = append(b, bytes.Repeat([]byte{0x55}, n)...)
		if &a[0] == &b[0] || bytes.Count(a, []byte{0xaa}) != n || bytes.Count(b, []byte{0x55}) != n {
			t.Fatalf("n=%d: the two slices share memory", n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = MakeNoZero(64 << 10) }); n != 1 {
		t.Errorf("%v allocations a call, want 1", n)
	}
}

// BenchmarkMakeNoZero against make: the clearing it spares.
func BenchmarkMakeNoZero(b *testing.B) {
	const n = 256 << 10
	b.Run("make", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			_ = append(make([]byte, 0, n), 1)
		}
	})
	b.Run("nozero", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			_ = append(MakeNoZero(n), 1)
		}
	})
}
