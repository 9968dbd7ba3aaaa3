package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// BenchmarkRead reads each corpus shape (scripts/corpus.sh; the shipped
// captures when it was not recorded) from memory through capture.Read and
// the pipeline, units handed to a sink that only counts them: what `read`
// costs before any rendering. ns/unit and allocs/unit are per unit
// decoded; B/s is capture bytes. WIRETAP_BENCH_SHAPES=a,b picks shapes.
func BenchmarkRead(b *testing.B) {
	files, _ := filepath.Glob("../testdata/corpus/*.pcapng")
	// The scale-MB captures (up to 10 GB) are for timing read, not for a
	// benchmark that holds its file in memory.
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "scale-") })
	if s := os.Getenv("WIRETAP_BENCH_SHAPES"); s != "" {
		files = nil
		for _, n := range strings.Split(s, ",") {
			files = append(files, "../testdata/corpus/"+n+".pcapng")
		}
	}
	if len(files) == 0 {
		files = []string{"../testdata/amqp091-pika.pcapng", "../testdata/pgsql-libpq.pcapng", "../testdata/amqp10-proton.pcapng"}
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Skip(err)
		}
		b.Run(strings.TrimSuffix(filepath.Base(path), ".pcapng"), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			units := 0
			for b.Loop() {
				p := New(Config{Sink: func(*decode.Unit) { units++ }})
				if _, err := capture.Read(bytes.NewReader(data), path, p, nil); err != nil {
					b.Fatal(err)
				}
				p.Finish()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
		})
	}
}
