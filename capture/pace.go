package capture

import "time"

// A pacer keeps a decoder to the CPU time the machine can spare. Every
// paceWindow of work it looks at how long, during that window, work was
// kept waiting for a CPU: on Linux the machine's CPU pressure (PSI's
// "some" time, /proc/pressure/cpu: some runnable thread, the server's,
// a client's, the forwarding's or the decoder's own, had no CPU), else
// the decoder thread's own wait. Waiting past a tenth of the window
// means the decoder is competing with the traffic, so the pacer has it
// sleep for a multiple of the time it worked, doubling the multiple
// while the pressure lasts and shrinking it once a window passes
// without. A decoder asleep falls behind, and its lane drops what does
// not fit, reported as gaps ([GapDecoderBehind]); the traffic is never
// slowed by it.
//
// Why not a lower scheduling priority (nice 19, SCHED_IDLE) on the
// decoder's thread, which would be the kernel doing the same: a Go
// thread holds a P and, at times, runtime locks; one the kernel keeps off
// the CPU for a long time (a nice-19 thread beside busy nice-0 ones waits
// in the order of a second) stalls the other threads that need them, and
// every garbage collection's stop-the-world waits for it, forwarding
// included. A pacer's decoder runs at the process's own priority and
// sleeps holding nothing.
type pacer struct {
	stall stallClock
	close func()
	// locked: the stall clock is the thread's own, and the goroutine
	// locked to it.
	locked bool
	// ratio is the time asleep per unit of time worked; 0 while the CPU
	// is to spare.
	ratio float64
	// stalled is the clock at the start of the window.
	stalled time.Duration
	start   time.Time
	// sleep is time.Sleep (a test's fake).
	sleep func(time.Duration)
}

// stallClock returns a running total of time work waited for a CPU; ok
// is false when it cannot tell.
type stallClock func() (stalled time.Duration, ok bool)

const (
	// paceWindow is the work between two looks at the clock: long enough
	// that the kernel has had the occasion to run the threads that were
	// waiting (its slice is a few milliseconds), short enough that a
	// decoder that competes does so briefly.
	paceWindow = 5 * time.Millisecond
	// paceContended is the share of its window work may spend waiting
	// for a CPU and the window still count as spare CPU.
	paceContended = 0.10
	// paceMaxRatio bounds the sleep at 49 times the work: a decoder on a
	// saturated machine still works 2% of the time, and so shows some of
	// the traffic, and notices when the load goes.
	paceMaxRatio = 49
)

// newPacer returns a pacer for the calling goroutine, or nil where the
// machine cannot tell contention. Call its close when done, on the same
// goroutine.
func newPacer() *pacer {
	if stall, closeStall := openPressureClock(); stall != nil {
		if _, ok := stall(); ok {
			return &pacer{stall: stall, close: closeStall, sleep: time.Sleep}
		}
		closeStall()
	}
	lockThread()
	stall, closeStall := openThreadClock()
	if stall != nil {
		if _, ok := stall(); ok {
			return &pacer{stall: stall, close: func() { closeStall(); unlockThread() }, locked: true, sleep: time.Sleep}
		}
		closeStall()
	}
	unlockThread()
	return nil
}

// begin starts a window of work now (after the decoder slept or waited
// for bytes, which are not work).
func (p *pacer) begin(now time.Time) {
	p.start = now
	p.stalled, _ = p.stall()
}

// check ends the window when it has lasted paceWindow, sleeping as long
// as the pacer judges, and begins the next one.
func (p *pacer) check(now time.Time) {
	worked := now.Sub(p.start)
	if worked < paceWindow {
		return
	}
	stalled, ok := p.stall()
	if !ok {
		p.start = now
		return
	}
	d := p.judge(stalled-p.stalled, worked)
	if d > 0 {
		p.sleep(d)
		now = time.Now()
	}
	p.begin(now)
}

// judge updates the ratio from a window of worked in which work waited
// stalled for a CPU, and returns how long to sleep.
func (p *pacer) judge(stalled, worked time.Duration) time.Duration {
	if float64(stalled) > paceContended*float64(worked) {
		p.ratio = min(max(2*p.ratio, 1), paceMaxRatio)
	} else if p.ratio *= 0.75; p.ratio < 0.1 {
		p.ratio = 0
	}
	return time.Duration(p.ratio * float64(worked))
}
