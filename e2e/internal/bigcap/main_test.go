package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
)

// TestRunCopies writes a real capture three times over and reads the result
// back: three times the connections, each carrying the original's bytes in
// both directions, from distinct client addresses.
func TestRunCopies(t *testing.T) {
	in := filepath.Join("..", "..", "..", "testdata", "amqp091-pika.pcapng")
	orig := &recorder{index: make(map[int]int)}
	if err := readInto(in, orig); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "big.pcapng")
	const copies = 3
	if err := run(in, out, copies, 1000); err != nil {
		t.Fatal(err)
	}
	got := &recorder{index: make(map[int]int)}
	if err := readInto(out, got); err != nil {
		t.Fatal(err)
	}
	if len(got.flows) != copies*len(orig.flows) {
		t.Fatalf("%d connections, want %d", len(got.flows), copies*len(orig.flows))
	}
	clients := make(map[string]bool)
	for _, f := range got.flows {
		clients[f.A.String()] = true
	}
	if len(clients) != len(got.flows) {
		t.Errorf("%d distinct clients for %d connections", len(clients), len(got.flows))
	}
	want := streams(orig)
	for k, s := range streams(got) {
		w := want[k%len(orig.flows)]
		for d := range 2 {
			if !bytes.Equal(s[d], w[d]) {
				t.Errorf("connection %d direction %d: %d bytes differ from the original's %d", k+1, d, len(s[d]), len(w[d]))
			}
		}
	}
}

func readInto(path string, r *recorder) error {
	_, err := capture.ReadFile(path, r, nil)
	return err
}

// streams returns each flow's bytes from A ([0]) and from B ([1]).
func streams(r *recorder) [][2][]byte {
	s := make([][2][]byte, len(r.flows))
	for _, e := range r.events {
		if e.kind != 'd' {
			continue
		}
		d := 1
		if e.fromA {
			d = 0
		}
		s[e.flow][d] = append(s[e.flow][d], e.data...)
	}
	return s
}
