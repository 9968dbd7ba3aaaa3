package capture

import (
	"bytes"
	"os"
	"runtime"
	"time"
)

// openPressureClock reads the machine's CPU pressure, the first line of
// /proc/pressure/cpu ("some avg10=0.00 avg60=0.00 avg300=0.00
// total=MICROSECONDS": the kernel's Documentation/accounting/psi.rst), in
// which total is the time some runnable task waited for a CPU. It
// returns nil without PSI (a kernel before 4.20, or psi=0).
func openPressureClock() (stallClock, func()) {
	f, err := os.Open("/proc/pressure/cpu")
	if err != nil {
		return nil, nil
	}
	var buf [256]byte
	return func() (time.Duration, bool) {
		n, _ := f.ReadAt(buf[:], 0)
		us, ok := parsePressureTotal(buf[:n])
		return time.Duration(us) * time.Microsecond, ok
	}, func() { f.Close() }
}

// parsePressureTotal reads total= of the "some" line.
func parsePressureTotal(b []byte) (int64, bool) {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	if !bytes.HasPrefix(line, []byte("some ")) {
		return 0, false
	}
	_, num, found := bytes.Cut(line, []byte(" total="))
	if !found {
		return 0, false
	}
	return parseDecimal(num)
}

// openThreadClock reads the calling thread's
// /proc/thread-self/schedstat (Documentation/scheduler/sched-stats.rst:
// time on the CPU, time waiting on a runqueue, both in nanoseconds, and
// the count of slices), of which it returns the wait. The file is the
// thread's that opens it, so the caller must be locked to its thread.
func openThreadClock() (stallClock, func()) {
	f, err := os.Open("/proc/thread-self/schedstat")
	if err != nil {
		return nil, nil
	}
	var buf [96]byte
	return func() (time.Duration, bool) {
		n, _ := f.ReadAt(buf[:], 0)
		_, wait, ok := parseSchedstat(buf[:n])
		return wait, ok
	}, func() { f.Close() }
}

// parseSchedstat reads "RUN WAIT SLICES\n".
func parseSchedstat(b []byte) (run, wait time.Duration, ok bool) {
	r, rest, found := bytes.Cut(b, []byte{' '})
	if !found {
		return 0, 0, false
	}
	w, _, found := bytes.Cut(rest, []byte{' '})
	if !found {
		return 0, 0, false
	}
	rn, ok1 := parseDecimal(r)
	wn, ok2 := parseDecimal(w)
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return time.Duration(rn), time.Duration(wn), true
}

// parseDecimal reads the whole of b as a non-negative decimal int64.
func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' || v > (1<<63-1-9)/10 {
			return 0, false
		}
		v = 10*v + int64(c-'0')
	}
	return v, true
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }
