//go:build linux

package hugeheap

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the PMD size on the architectures Go supports on Linux
// (amd64, arm64 with 4 KiB pages, ...); a system with another size
// reports it in /sys, read by Advise.
const hugePage uintptr = 2 << 20

// Advise marks n bytes of fresh heap for transparent huge pages and
// returns how many bytes it marked: 0 when the kernel has them off
// ("never"), when WIRETAP_HUGEPAGES=0 asks not to, or when madvise
// refuses. Call it first thing, before the heap has grown: it allocates
// n bytes (touching none of them), advises the 2 MiB-aligned part, drops
// them and collects, so that the allocator hands the range out again.
func Advise(n int) int {
	if os.Getenv("WIRETAP_HUGEPAGES") == "0" {
		return 0
	}
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		return 0
	}
	size := hugePage
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"); err == nil {
		if v := parseUint(bytes.TrimSpace(b)); v > 0 && v&(v-1) == 0 {
			size = v
		}
	}
	if uintptr(n) < 2*size {
		return 0 // no whole huge page would be sure to fit
	}
	// Collection off while the ballast is made: an allocation this far
	// past the heap's goal would start a cycle of its own, whose marking
	// took 6 ms at start (gctrace), before the one below.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	// A fresh span of this size comes straight from the OS: the runtime
	// knows it is zero and writes nothing to it.
	ballast := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(ballast)))
	beg := (p + size - 1) &^ (size - 1)
	end := (p + uintptr(n)) &^ (size - 1)
	done := 0
	if end > beg {
		// Aligned within ballast: the slice keeps it alive until here.
		if unix.Madvise(ballast[beg-p:end-p], unix.MADV_HUGEPAGE) == nil {
			done = int(end - beg)
		}
	}
	runtime.KeepAlive(ballast)
	ballast = nil
	runtime.GC()
	return done
}

func parseUint(b []byte) uintptr {
	var v uintptr
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		v = v*10 + uintptr(c-'0')
	}
	return v
}
