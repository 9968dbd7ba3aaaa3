package pgwire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// dataRowLens builds a DataRow body of the given column lengths (-1 for
// NULL).
func dataRowLens(lens ...int) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(lens)))
	for _, l := range lens {
		b = binary.BigEndian.AppendUint32(b, uint32(int32(l)))
		for i := 0; i < l; i++ {
			b = append(b, byte('a'+i%26))
		}
	}
	return b
}

// TestCheckDataRowFastAgrees: the fast walk of checkDataRow says what the
// cursor's walk says, error for error, on good rows and on rows cut,
// extended and corrupted at random.
func TestCheckDataRowFastAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bodies := [][]byte{nil, {0}, {0, 0}, {0xff, 0xff}, dataRowLens(), dataRowLens(-1), dataRowLens(0, 3, -1, 7)}
	for range 20000 {
		lens := make([]int, r.IntN(6))
		for i := range lens {
			lens[i] = r.IntN(12) - 1
		}
		b := dataRowLens(lens...)
		switch r.IntN(4) {
		case 1:
			b = b[:r.IntN(len(b)+1)]
		case 2:
			b = append(b, byte(r.IntN(256)))
		case 3:
			if len(b) > 0 {
				b[r.IntN(len(b))] = byte(r.IntN(256))
			}
		}
		bodies = append(bodies, b)
	}
	for _, b := range bodies {
		fast, slow := checkDataRow(b), checkDataRowSlow(b)
		if (fast == nil) != (slow == nil) || (fast != nil && fast.Error() != slow.Error()) {
			t.Fatalf("body % x: checkDataRow %v, the cursor %v", b, fast, slow)
		}
	}
}

// BenchmarkCheckDataRow checks a row of ten short columns, as every
// DataRow of a SELECT is checked.
func BenchmarkCheckDataRow(b *testing.B) {
	body := dataRowLens(4, 8, -1, 12, 1, 6, 20, 3, 0, 9)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := checkDataRow(body); err != nil {
			b.Fatal(err)
		}
	}
}
