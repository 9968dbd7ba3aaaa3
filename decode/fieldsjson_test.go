package decode

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONPlain checks AppendJSONPlain against AppendJSONString on
// random values: where it says a value is plain, the two write the same
// bytes; where it says not, some byte of the value needed escaping or
// was not ASCII, and nothing was appended.
func TestAppendJSONPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := [][]byte{
		[]byte("abcdefghijklmnopqrstuvwxyz0123456789 -:.+"),
		[]byte("abc\"\\\x00\x1f\x7f\x80\xff\n\t é"),
	}
	plain, other := 0, 0
	for i := range 20000 {
		alpha := alphabets[i%2]
		v := make([]byte, rng.IntN(40))
		for j := range v {
			v[j] = alpha[rng.IntN(len(alpha))]
		}
		if i%7 == 0 && len(v) > 0 {
			v[rng.IntN(len(v))] = byte(rng.IntN(256)) // any byte, anywhere
		}
		prefix := []byte(`{"x":`)
		got, ok := AppendJSONPlain(bytes.Clone(prefix), v)
		needs := false
		for _, c := range v {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				needs = true
			}
		}
		if ok == needs {
			t.Fatalf("%q: plain=%v, but a byte needing escaping or not ASCII: %v", v, ok, needs)
		}
		if !ok {
			other++
			if !bytes.Equal(got, prefix) {
				t.Fatalf("%q: not plain, yet %q appended", v, got[len(prefix):])
			}
			continue
		}
		plain++
		if want := AppendJSONString(bytes.Clone(prefix), string(v)); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, AppendJSONString writes %s", v, got, want)
		}
	}
	if plain < 1000 || other < 1000 {
		t.Fatalf("random values not varied enough: %d plain, %d not", plain, other)
	}
}

func BenchmarkAppendJSONPlain(b *testing.B) {
	v := []byte("9bf31c7ff062936a96d3c8bd1f8f2ff3")
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		buf, _ = AppendJSONPlain(buf[:0], v)
	}
}
