//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMeasures runs each measurement small: every round is timed, a file
// is read whole both ways, an empty file is refused, and median picks the
// middle of unsorted times.
func TestMeasures(t *testing.T) {
	for _, advice := range []int{unix.MADV_NOHUGEPAGE, unix.MADV_HUGEPAGE} {
		d, err := touchRounds(4<<20, 3, advice)
		if err != nil {
			t.Fatal(err)
		}
		if len(d) != 3 || d[0] <= 0 || d[1] <= 0 || d[2] <= 0 {
			t.Errorf("advice %d: rounds %v", advice, d)
		}
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	mapped, buffered, size, err := readFile(path, 2)
	if err != nil || size != 3<<20 || len(mapped) != 2 || len(buffered) != 2 {
		t.Errorf("readFile: %v %v %d %v", mapped, buffered, size, err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	if _, _, _, err := readFile(empty, 2); err == nil {
		t.Error("an empty file was measured")
	}
	if d := chase(1<<20, 1<<14); d <= 0 || d > time.Millisecond {
		t.Errorf("chase: %v a load", d)
	}
	if d, ok := pingPong(1000); ok && (d <= 0 || d > 10*time.Millisecond) {
		t.Errorf("pingPong: %v a round trip", d)
	}
	if m := median([]time.Duration{5, 1, 3}); m != 3 {
		t.Errorf("median of 5, 1, 3: %v", m)
	}
}
