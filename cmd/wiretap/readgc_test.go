package main

import (
	"runtime/debug"
	"testing"
)

// TestReadGCLeavesEnvironment checks that read's collector settings give
// way to GOGC and GOMEMLIMIT in the environment, which the runtime read
// at start (set here by hand, as it would have).
func TestReadGCLeavesEnvironment(t *testing.T) {
	pct, lim := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	defer func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(lim) }()
	current := func() (int, int64) {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p, debug.SetMemoryLimit(-1)
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	for format, want := range map[string]int{"text": 400, "json": 200} {
		tuneReadGC(format)()
		if p, l := current(); p != want || l != 192<<20 {
			t.Errorf("%s, empty environment: GOGC %d, limit %d; want %d, %d", format, p, l, want, 192<<20)
		}
	}

	t.Setenv("GOGC", "55")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(55)
	debug.SetMemoryLimit(1 << 30)
	tuneReadGC("text")()
	if p, l := current(); p != 55 || l != 1<<30 {
		t.Errorf("GOGC=55 GOMEMLIMIT=1GiB: read set GOGC %d, limit %d; want them left at 55, %d", p, l, 1<<30)
	}
}

// TestNextHeapLimit: the soft limit stays while the live heap leaves a
// third of it free, and is raised past a heap that outgrows it.
func TestNextHeapLimit(t *testing.T) {
	for _, tc := range []struct{ live, limit, want int64 }{
		{10 << 20, readHeapLimit, readHeapLimit},
		{128 << 20, readHeapLimit, readHeapLimit},
		{129 << 20, readHeapLimit, 129<<20 + readHeapMargin},
		{1300 << 20, readHeapLimit, 1300<<20 + readHeapMargin},
		{1300 << 20, 1300<<20 + readHeapMargin, 1300<<20 + readHeapMargin},
		{1400 << 20, 1300<<20 + readHeapMargin, 1400<<20 + readHeapMargin},
	} {
		if got := nextHeapLimit(tc.live, tc.limit); got != tc.want {
			t.Errorf("live %d MiB, limit %d MiB: %d MiB, want %d MiB", tc.live>>20, tc.limit>>20, got>>20, tc.want>>20)
		}
	}
}
