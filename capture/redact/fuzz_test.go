package redact_test

import (
	"bytes"
	"testing"

	"github.com/wiretap-dev/wiretap/capture/redact"
)

// FuzzConn: whatever the bytes, a Conn returns as many as it is given,
// each either unchanged or an asterisk, and never panics.
func FuzzConn(f *testing.F) {
	f.Add([]byte("AMQP\x00\x00\x09\x01\x01\x00\x00\x00\x00\x00\x10\x00\x0a\x00\x0b\x00\x00\x00\x00\x05PLAIN\x00\x00\x00\x03abc\x00\xce"), []byte{}, uint8(3))
	f.Add([]byte("\x00\x00\x00\x08\x04\xd2\x16\x2f\x00\x00\x00\x10\x00\x03\x00\x00user\x00u\x00\x00p\x00\x00\x00\x08pw\x00\x00"), []byte("NR\x00\x00\x00\x08\x00\x00\x00\x03"), uint8(7))
	f.Add([]byte("AMQP\x03\x01\x00\x00\x00\x00\x00\x1a\x02\x01\x00\x00\x00\x53\x41\xc0\x0d\x02\xa3\x05PLAIN\xa0\x04\x00u\x00p"), []byte{}, uint8(5))
	f.Fuzz(func(t *testing.T, client, server []byte, split uint8) {
		c := redact.NewConn()
		n := int(split)%8 + 1
		feed := func(fromClient bool, b []byte) {
			for len(b) > 0 {
				k := min(n, len(b))
				in := append([]byte(nil), b[:k]...)
				out := c.Redact(fromClient, in)
				if len(out) != k {
					t.Fatalf("%d bytes in, %d out", k, len(out))
				}
				for i := range out {
					if out[i] != b[i] && out[i] != redact.Mask {
						t.Fatalf("byte %q became %q", b[i], out[i])
					}
				}
				if !bytes.Equal(in, b[:k]) {
					t.Fatal("Redact changed its input")
				}
				b = b[k:]
			}
		}
		half := len(server) / 2
		feed(true, client[:len(client)/2])
		feed(false, server[:half])
		feed(true, client[len(client)/2:])
		feed(false, server[half:])
	})
}
