package capture_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// fuzzSeeds are small captures in every format and link type the reader
// takes, with reordered, retransmitted and cut segments.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	segs := conversation(cli, srv)
	segs6 := conversation("[2001:db8::1]:40000", "[2001:db8::2]:5432")
	for _, link := range []uint16{1, 113, 276, 0, 108, 101} {
		var recs []record
		for i, s := range segs {
			recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(link, s.ip(0), 1)})
		}
		for i, s := range segs6 {
			recs = append(recs, record{t: time.Unix(int64(i), 5), data: frame(link, s.ip(i%2), 0)})
		}
		seeds = append(seeds, pcapFile(binary.LittleEndian, link%2 == 0, uint32(link), recs))
		seeds = append(seeds, ngSection(binary.BigEndian, []ngIface{{link: link, tsresol: 9}}, recs))
	}
	return seeds
}

// FuzzReadCapture feeds arbitrary bytes to the capture reader and
// reassembly: nothing may panic or hang, and the Handler contract must hold
// (the recorder panics on empty Data and on calls after Close).
func FuzzReadCapture(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	files, _ := filepath.Glob("testdata/*.pcap*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil && len(b) < 32<<10 {
			f.Add(b)
		}
	}
	opt := &capture.Options{MaxFlows: 8, MaxBufferedPerFlow: 4096, MaxBufferedTotal: 16384}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRecorder()
		stats, err := capture.Read(bytes.NewReader(data), "fuzz", r, opt)
		if err != nil {
			return
		}
		for id, n := range r.closed {
			if n != 1 {
				t.Fatalf("flow %d closed %d times", id, n)
			}
		}
		if len(r.closed) != stats.Flows { // every flow ends with one Close
			t.Fatalf("%d flows closed of %d", len(r.closed), stats.Flows)
		}
	})
}

// TestWriteFuzzCorpus writes the seeds to testdata/fuzz when
// WIRETAP_WRITE_CORPUS is set.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("WIRETAP_WRITE_CORPUS") == "" {
		t.Skip("set WIRETAP_WRITE_CORPUS=1 to rewrite testdata/fuzz/FuzzReadCapture")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReadCapture")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range fuzzSeeds() {
		sum := sha256.Sum256(s)
		content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:8])), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
