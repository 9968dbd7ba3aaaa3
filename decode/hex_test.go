package decode

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestAppendHex: AppendHex writes what hex.AppendEncode writes, for every
// byte value and every length around its four-byte steps.
func TestAppendHex(t *testing.T) {
	p := make([]byte, 600)
	for i := range p {
		p[i] = byte(i*37 + i/256)
	}
	for n := 0; n <= len(p); n++ {
		if got, want := AppendHex([]byte(`x"`), p[:n]), hex.AppendEncode([]byte(`x"`), p[:n]); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: %q, want %q", n, got, want)
		}
	}
}

func BenchmarkAppendHex(b *testing.B) {
	p := make([]byte, 128<<10)
	for i := range p {
		p[i] = byte(i * 37)
	}
	dst := make([]byte, 0, 2*len(p))
	b.SetBytes(int64(len(p)))
	b.Run("std", func(b *testing.B) {
		for b.Loop() {
			dst = hex.AppendEncode(dst[:0], p)
		}
	})
	b.Run("table", func(b *testing.B) {
		for b.Loop() {
			dst = AppendHex(dst[:0], p)
		}
	})
}
