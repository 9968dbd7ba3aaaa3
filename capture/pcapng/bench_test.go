package pcapng_test

import (
	"bytes"
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// BenchmarkSynth measures turning a byte stream into pcapng packets, as
// the proxy and the broker do with -w.
func BenchmarkSynth(b *testing.B) {
	for _, size := range []int{100, 16384} {
		b.Run(map[int]string{100: "100B", 16384: "16KiB"}[size], func(b *testing.B) {
			w := pcapng.NewWriter(io.Discard)
			s := pcapng.NewSynth(w)
			f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.0.0.1:1"), B: netip.MustParseAddrPort("10.0.0.2:2"), SYN: true}
			data := bytes.Repeat([]byte{'x'}, size)
			t := time.Unix(1, 0)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				s.Data(f, true, data, t)
			}
			if err := s.Err(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
