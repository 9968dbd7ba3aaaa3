package main

import (
	"bufio"
	"context"
	"io"
	"iter"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui"
)

// batcher collects units from the pipeline and hands them to the TUI in
// batches: a full batch at once, a partial one after a short delay, so a
// live source shows up promptly and a file streams in without one channel
// send per unit.
type batcher struct {
	mu    sync.Mutex
	cur   []*decode.Unit
	bytes int // of the units in cur
	out   chan []*decode.Unit
	timer *time.Timer
}

// A batch is cut at batchSize units or batchBytes of their bytes,
// whichever comes first, so that what waits in the channel for the TUI
// (16 batches at most: some 20 MB of small units) stays small beside the store's memory budget
// however large the units are.
const (
	batchSize  = 4096
	batchBytes = 256 << 10
	batchDelay = 30 * time.Millisecond
)

func newBatcher() *batcher {
	b := &batcher{out: make(chan []*decode.Unit, 16)}
	b.timer = time.AfterFunc(time.Hour, b.flushTimer)
	b.timer.Stop()
	return b
}

func (b *batcher) add(u *decode.Unit) {
	b.mu.Lock()
	b.cur = append(b.cur, u)
	b.bytes += len(u.Raw)
	var full []*decode.Unit
	if len(b.cur) >= batchSize || b.bytes >= batchBytes {
		full, b.cur, b.bytes = b.cur, make([]*decode.Unit, 0, min(2*len(b.cur), batchSize)), 0
	} else if len(b.cur) == 1 {
		b.timer.Reset(batchDelay)
	}
	b.mu.Unlock()
	if full != nil {
		b.out <- full
	}
}

func (b *batcher) flushTimer() {
	b.mu.Lock()
	full := b.cur
	b.cur, b.bytes = nil, 0
	b.mu.Unlock()
	if len(full) > 0 {
		b.out <- full
	}
}

// close sends what is left and closes the channel.
func (b *batcher) close() {
	b.timer.Stop()
	b.flushTimer()
	close(b.out)
}

// runTUI runs src into a pipeline whose units feed the TUI. progress, when
// set, reports how much of a file has been read.
func runTUI(ctx context.Context, f *decodeFlags, title string, live bool, decodeAs map[uint16]decode.Proto,
	src func(ctx context.Context, h capture.Handler) error, progress func() (int64, int64), more ...func(*tui.Options)) error {
	if f.filter != "" {
		if _, err := compileFilter(f.filter); err != nil {
			return err
		}
	}
	if err := needTerminal(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := newBatcher()
	errs := make(chan error, 16)
	staged, flushStage := f.wrapSink(b.add)
	popt := f.options()
	if !live {
		// A file: a decoder may leave a unit's work to finish on another
		// goroutine (a CompressedMessages inflating while the capture is
		// read on), the order kept, as `read` does. Live, units are shown
		// as they come.
		popt.Defer = new(decode.Deferred)
	}
	pl := pipeline.New(pipeline.Config{Options: popt, DecodeAs: decodeAs, Sink: staged})
	go func() {
		defer b.close()
		err := src(ctx, pl)
		pl.Finish()
		flushStage()
		if err != nil && ctx.Err() == nil {
			errs <- err
		}
	}()
	opt := tui.Options{
		Title:        title,
		Live:         live,
		Units:        b.out,
		Progress:     progress,
		Err:          errs,
		ExportPcapng: exportPcapng,
		ShowSecrets:  f.showSecrets,
		Filter:       f.filter,
		Conn:         f.conn,
	}
	for _, set := range more {
		set(&opt)
	}
	tuneGC(ctx, opt.Memory)
	return tui.Run(ctx, opt)
}

// tuneGC sets the collector for the TUI, unless GOGC or GOMEMLIMIT in the
// environment say otherwise. The TUI keeps units: its heap is mostly live
// data.
//
// With a memory budget (the process's: the unit store holds the live heap
// to half of it) the heap gets the budget as its soft limit and the
// default GOGC paces collection below it, so a heap well under the budget
// is not collected each time it grows by a quarter (replaying a million
// small units: a third less CPU). Should the live heap pass three
// quarters of the budget all the same (the store could not spill: no
// temporary directory), a limit it cannot keep would have the collector
// run without pause, and the heap is collected each time it grows by a
// quarter instead, as it is without a budget.
func tuneGC(ctx context.Context, budget int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if budget <= 0 {
		debug.SetGCPercent(25)
		return
	}
	// An eighth below the budget: the collector returns freed memory to
	// the system a little after it is freed, and memory that is not the
	// heap's (stacks, the runtime's own) is counted by the limit only in
	// part.
	debug.SetMemoryLimit(budget - budget/8)
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() > uint64(budget)/4*3 {
				debug.SetMemoryLimit(math.MaxInt64)
				debug.SetGCPercent(25)
				return
			}
		}
	}()
}

// exportPcapng writes units as a capture of synthesised TCP packets: the
// bytes of each connection's units, in order, with a handshake and FIN.
func exportPcapng(w io.Writer, units iter.Seq[*decode.Unit]) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	pw := pcapng.NewWriter(bw)
	syn := pcapng.NewSynth(pw)
	flows := map[*decode.Conn]*capture.Flow{}
	var order []*capture.Flow
	var last time.Time
	for u := range units {
		last = u.Time()
		if u.Conn == nil || u.Parent != nil || len(u.Raw) == 0 {
			continue
		}
		fl := flows[u.Conn]
		if fl == nil {
			fl = &capture.Flow{ID: len(flows) + 1, A: u.Conn.Client, B: u.Conn.Server, SYN: true, First: u.Time()}
			flows[u.Conn] = fl
			order = append(order, fl)
		}
		syn.Data(fl, u.Dir == decode.DirF, u.Raw, u.Time())
	}
	for _, fl := range order {
		syn.Close(fl, last)
	}
	if err := syn.Err(); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}

// fileProgress tracks a file being read for the TUI's progress bar.
type fileProgress struct{ done, total atomic.Int64 }

func (p *fileProgress) set(read, total int64) { p.done.Store(read); p.total.Store(total) }
func (p *fileProgress) get() (int64, int64)   { return p.done.Load(), p.total.Load() }

// needTerminal refuses to start the TUI without a terminal to draw on
// (stdout) and to read keys from (stdin, or the process's /dev/tty), in
// one line rather than bubbletea's error.
func needTerminal() error {
	if !term.IsTerminal(os.Stdout.Fd()) {
		return usageErr("the terminal UI needs a terminal, and stdout is not one; use 'wiretap read' (or --headless) for output to a file or a pipe")
	}
	if !term.IsTerminal(os.Stdin.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return usageErr("the terminal UI needs a terminal to read keys from, and has none (stdin is not one, /dev/tty cannot be opened); use 'wiretap read' (or --headless)")
		}
		tty.Close()
	}
	return nil
}
