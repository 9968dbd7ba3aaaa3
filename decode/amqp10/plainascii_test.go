package amqp10

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func plainASCIISlow(v []byte) bool {
	for _, c := range v {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// TestPlainASCII holds the word-at-a-time check to the byte loop: every
// byte value at every place of buffers of 1 to 24 bytes otherwise plain
// (the word and the tail), and random buffers near the limits.
func TestPlainASCII(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for at := 0; at < n; at++ {
			for c := 0; c < 256; c++ {
				v := bytes.Repeat([]byte{'a'}, n)
				v[at] = byte(c)
				if got, want := plainASCII(v), plainASCIISlow(v); got != want {
					t.Fatalf("%q: plainASCII %v, want %v", v, got, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	edges := []byte{0x1f, 0x20, 0x21, '"', '\\', 0x7e, 0x7f, 0x80, 0xff, 0x00, 'A'}
	for range 200000 {
		v := make([]byte, r.IntN(40))
		for i := range v {
			if r.IntN(4) == 0 {
				v[i] = edges[r.IntN(len(edges))]
			} else {
				v[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		if got, want := plainASCII(v), plainASCIISlow(v); got != want {
			t.Fatalf("%q: plainASCII %v, want %v", v, got, want)
		}
	}
}

// BenchmarkPlainASCII checks a link name as long as go-amqp's (54
// bytes), as every transfer's summary does.
func BenchmarkPlainASCII(b *testing.B) {
	v := []byte("9Cf4Bo-kAhvbJ7aThyAcgYJ6LVM5esmJ8uRlYTh6nPO5HYndiacbSw")
	b.SetBytes(int64(len(v)))
	for b.Loop() {
		if !plainASCII(v) {
			b.Fatal("not plain")
		}
	}
}
