//go:build linux

package hugeheap

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestAdvise runs Advise in a child process (it must come before the
// heap grows, and marks the process's heap for good) and checks in
// /proc/self/smaps that the range it marked is a mapping with the
// "hg" flag, inside the heap's arenas.
func TestAdvise(t *testing.T) {
	if os.Getenv("HUGEHEAP_CHILD") != "" {
		child()
		return
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		// The kernel's setting, not a missing peer: Advise then does
		// nothing at all.
		t.Skipf("transparent huge pages are off or absent (%q, %v)", mode, err)
	}
	for _, tc := range []struct {
		env  string
		want bool
	}{{"", true}, {"WIRETAP_HUGEPAGES=0", false}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdvise$")
		cmd.Env = append(os.Environ(), "HUGEHEAP_CHILD=1", tc.env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: child: %v\n%s", tc.env, err, out)
		}
		got := string(out)
		if tc.want && !strings.Contains(got, "advised 67108864 hg-mapping 1") {
			t.Errorf("%s: want 64 MiB advised and a mapping flagged hg covering it; child says:\n%s", tc.env, got)
		}
		if tc.want && !strings.Contains(got, "collections 1 gcpercent 123") {
			t.Errorf("want one collection and the collector's setting kept; child says:\n%s", got)
		}
		if !tc.want && !strings.Contains(got, "advised 0 ") {
			t.Errorf("%s: want nothing advised; child says:\n%s", tc.env, got)
		}
	}
}

// child advises 64 MiB and more (the aligned part of 66 MiB is at least
// 64), reports what Advise returned and whether mappings flagged hg
// cover a fresh allocation of 32 MiB, which the allocator should hand
// out of the advised range.
func child() {
	debug.SetGCPercent(123)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n := Advise(66 << 20)
	runtime.ReadMemStats(&after)
	// Advise collects once (the ballast's own allocation must not start
	// a cycle of its own), and leaves the collector's setting as it was.
	os.Stdout.WriteString("collections " + strconv.Itoa(int(after.NumGC-before.NumGC)) + " gcpercent " + strconv.Itoa(debug.SetGCPercent(100)) + "\n")
	if n > 64<<20 {
		n = 64 << 20
	}
	b := make([]byte, 32<<20)
	p := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	covered := 0
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		os.Stdout.WriteString("smaps: " + err.Error() + "\n")
		os.Exit(0)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lo, hi uint64
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			a, b, _ := strings.Cut(fields[0], "-")
			lo, _ = strconv.ParseUint(a, 16, 64)
			hi, _ = strconv.ParseUint(b, 16, 64)
			continue
		}
		if strings.HasPrefix(line, "VmFlags:") && strings.Contains(line, " hg") {
			if from, to := max(lo, p), min(hi, p+uint64(len(b))); to > from {
				covered += int(to - from)
			}
		}
	}
	// The allocation need not start on a 2 MiB boundary: all of it but
	// its first and last huge page must be in the advised range.
	ok := 0
	if covered >= len(b)-4<<20 {
		ok = 1
	}
	os.Stdout.WriteString("advised " + strconv.Itoa(n) + " hg-mapping " + strconv.Itoa(ok) + " (" + strconv.Itoa(covered) + " bytes of the allocation)\n")
	os.Exit(0)
}
