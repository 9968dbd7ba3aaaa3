package amqp10

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestScanShortAgreesWithScanValue holds scanTo's quick paths (scanShort,
// a value described by a one-byte descriptor) to scanValue, which
// measures every value the long way: at every offset of the shipped AMQP
// 1.0 captures (real frames among the rest of the bytes), of encoded
// performatives and messages, and of thousands of their corruptions and
// truncations, at depths below, at and past maxDepth, both give the same
// value, or the same error. (One difference is older than the quick
// paths for lists and described values, and kept: a value of fixed width
// or with a one-byte size is measured at any depth, where scanValue
// refuses every value past maxDepth; it has nothing inside to recurse
// into.)
func TestScanShortAgreesWithScanValue(t *testing.T) {
	var inputs [][]byte
	files, _ := filepath.Glob("../../testdata/amqp10-*.pcapng")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, b)
	}
	if len(inputs) == 0 {
		t.Fatal("no AMQP 1.0 capture in testdata")
	}
	msg := AppendDescribed(nil, DescriptorHeader, AppendList(nil, AppendBool(nil, true)))
	msg = append(msg, AppendDescribed(nil, DescriptorProperties, AppendList(nil, AppendString(nil, "m-1"), AppendBinary(nil, []byte{1, 2}), AppendUint(nil, 7)))...)
	msg = append(msg, AppendDescribed(nil, DescriptorData, AppendBinary(nil, make([]byte, 16)))...)
	attach := AppendComposite(nil, DescriptorAttach, AppendString(nil, "link"), AppendUint(nil, 0), AppendBool(nil, false))
	seeds := [][]byte{msg, attach, AppendFrame(nil, 0, 0, attach), transferFrame(0, 0, 3, false, msg)}
	// Hand-made compounds at the edges of the quick path: a size of 0
	// (smaller than its count byte), a count past the size, an odd map,
	// an empty list8, a list8 cut short, a map8 of one pair.
	seeds = append(seeds,
		[]byte{0xc0, 0x00}, []byte{0xc0, 0x01, 0x05}, []byte{0xc1, 0x03, 0x01, 0x40, 0x40},
		[]byte{0xc0, 0x01, 0x00}, []byte{0xc0, 0x05, 0x02, 0x40}, []byte{0xc1, 0x03, 0x02, 0x40, 0x40},
		[]byte{0x00, 0x53, 0x70, 0xc0, 0x01, 0x00}, []byte{0x00, 0x53, 0x70, 0x00, 0x53, 0x70, 0x45},
		[]byte{0x00, 0x53}, []byte{0x00, 0x53, 0x70}, []byte{0x00, 0x53, 0x70, 0xa1, 0x05, 'a'})
	// And of four-byte sizes (go-amqp's lists and maps, large binaries):
	// a list32 and map32 message, a vbin32; a size under the count field,
	// a count past the size, an odd map32, sizes past the buffer and past
	// what an int holds, a str32 cut short.
	big := AppendDescribed(nil, DescriptorProperties, AppendList32(nil, AppendString(nil, "m-2"), AppendNull(nil)))
	big = append(big, AppendDescribed(nil, DescriptorApplicationProperties, append([]byte{0xd1, 0, 0, 0, 0x0b, 0, 0, 0, 2, 0xa1, 1, 'k'}, AppendUint(nil, 3)...))...)
	big = append(big, AppendDescribed(nil, DescriptorData, AppendBinary(nil, make([]byte, 300)))...)
	seeds = append(seeds, big,
		[]byte{0xd0, 0, 0, 0, 3, 0, 0, 0}, []byte{0xd0, 0, 0, 0, 5, 0, 0, 0, 9, 0x40}, []byte{0xd1, 0, 0, 0, 6, 0, 0, 0, 1, 0x40, 0x40},
		[]byte{0xd0, 0, 0, 0, 4, 0, 0, 0, 0}, []byte{0xd0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, []byte{0xb0, 0x7f, 0xff, 0xff, 0xff, 1},
		[]byte{0xb1, 0, 0, 0, 4, 'a', 'b'}, []byte{0x00, 0x53, 0x75, 0xb0, 0, 0, 0, 1, 7})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range seeds {
		inputs = append(inputs, s)
		for range 500 {
			c := append([]byte(nil), s...)
			for range 1 + rng.IntN(3) {
				c[rng.IntN(len(c))] = byte(rng.IntN(256))
			}
			inputs = append(inputs, c[:rng.IntN(len(c)+1)])
		}
	}
	checked := 0
	for _, b := range inputs {
		for off := 0; off <= len(b); off++ {
			for _, depth := range []int{0, maxDepth, maxDepth + 1} {
				var got Value
				gotErr := scanTo(b, off, depth, &got)
				want, wantErr := scanValue(b, off, depth)
				if depth > maxDepth && off < len(b) {
					// What scanTo always gave such a value, whole, at
					// any depth: what scanValue gives it at depth 0.
					if e := encodings[b[off]]; e.category == categoryFixed || e.category == categoryVariable && e.width == 1 {
						if w, err := scanValue(b, off, 0); err == nil {
							want, wantErr = w, nil
						}
					}
				}
				if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
					t.Fatalf("% x at %d, depth %d: scanTo error %v, scanValue %v", b, off, depth, gotErr, wantErr)
				}
				if gotErr == nil && got != want {
					t.Fatalf("% x at %d, depth %d: scanTo %+v, scanValue %+v", b, off, depth, got, want)
				}
				checked++
			}
		}
	}
	t.Logf("%d scans agree", checked)
}
