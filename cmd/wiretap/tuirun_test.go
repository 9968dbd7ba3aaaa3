package main

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestBatcherCutsByBytes: batches of large units are cut by their bytes,
// not only by their count, so what waits for the TUI stays small.
func TestBatcherCutsByBytes(t *testing.T) {
	b := newBatcher()
	// At most a MiB of bytes in a batch (64 of them may wait in the
	// channel), whatever batchBytes is tuned to.
	const n, size, most = 40, 100 << 10, 1 << 20
	go func() {
		for i := range n {
			b.add(&decode.Unit{N: i + 1, Raw: make([]byte, size)})
		}
		b.close()
	}()
	units, batches := 0, 0
	for batch := range b.out {
		bytes := 0
		for _, u := range batch {
			bytes += len(u.Raw)
		}
		if bytes-size >= most {
			t.Fatalf("a batch of %d units holds %d bytes", len(batch), bytes)
		}
		units += len(batch)
		batches++
	}
	if units != n || batches < n*size/(most+size) {
		t.Fatalf("%d units in %d batches", units, batches)
	}
}
