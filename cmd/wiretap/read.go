package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/hugeheap"
	"github.com/wiretap-dev/wiretap/pipeline"
)

func newReadCmd() *cobra.Command {
	var f decodeFlags
	cmd := &cobra.Command{
		Use:   "read FILE",
		Short: "Decode a pcap or pcapng file to stdout",
		Long: `read decodes every AMQP 0-9-1, AMQP 1.0 and PostgreSQL unit in a capture file
and prints them: one line each (text), one JSON object each (json), or as
libpq's PQtrace would (pqtrace).

Exit status: 0 when the input was read to its end, even with undecodable
traffic (reported in the output) or when cut short (a warning on stderr);
1 when it cannot be used at all; 2 for wrong usage.`,
		Example: `  wiretap read testdata/amqp091-pika.pcapng
  wiretap read --format json --filter 'amqp.method == "basic.publish"' cap.pcapng
  wiretap read --format pqtrace --conn 1 pg.pcapng`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			return runRead(args[0], &f)
		},
	}
	f.register(cmd)
	return cmd
}

// tuneReadGC sets the collector's pace and soft limit for read, leaving
// either to the environment when GOGC or GOMEMLIMIT is set there (the
// runtime has read them at start). It returns what stops the watch it
// keeps over the limit (see followLiveHeap).
func tuneReadGC(format string) (stop func()) {
	// Units are garbage as soon as they are printed: collect less often
	// than the default, but never let that take the heap past a few
	// hundred MiB (a soft limit the runtime meets by collecting sooner;
	// GOMEMLIMIT overrides it, as GOGC overrides the pace). How much
	// less often was measured twice.
	// With the heap in 4 KiB pages, a heap let grow to five times the
	// live data (400) landed nearly every allocation on a page never
	// touched, a fault of some 4 µs on a VM, and 200 ran as fast at a
	// third less peak RSS. With its first 128 MiB in huge pages (runRead),
	// 400 collects half as often for few more fresh pages: text ran 6-12%
	// faster on five shapes of eight (fanout 12%, SELECT 7%, AMQP 1.0
	// small 6%, the others within their spread; medians of eleven
	// alternated runs) at 15-40 MB more peak RSS (SELECT 70 -> 109 MB;
	// the 1 GB capture 76 -> 95 MB, 2.99 -> 2.65 s). JSON keeps 200: its
	// large AMQP 0-9-1 bodies ran 32% slower at 400.
	gcPercent := 200
	if format == "text" {
		gcPercent = 400
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	debug.SetMemoryLimit(readHeapLimit)
	done := make(chan struct{})
	go followLiveHeap(done)
	return func() { close(done) }
}

// readHeapLimit is read's soft limit while its live heap is small: what
// it prints is garbage at once, and a heap let grow to GOGC 400 would
// keep it for long.
const readHeapLimit = 192 << 20

// followLiveHeap raises the soft limit above a live heap that outgrows
// it: decompression windows the memory budget allows (20 connections of
// 64 MiB zstd windows: over a GiB of heap, mostly never touched), which
// the collector could not keep under the limit and would chase without
// pause. On those 20 connections: 8.8 s at a fixed limit, 4.0-4.4 s
// with the limit readHeapMargin above the live heap, at the same 390 MB
// of RSS (2.3-2.6 s at 600 MB with 128 MiB above it).
func followLiveHeap(done <-chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	limit := int64(readHeapLimit)
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if l := nextHeapLimit(int64(live[0].Value.Uint64()), limit); l != limit {
			limit = l
			debug.SetMemoryLimit(limit)
		}
	}
}

// readHeapMargin is how far above a live heap that outgrew
// readHeapLimit the limit is set: the garbage let accumulate before a
// collection.
const readHeapMargin = 32 << 20

// nextHeapLimit is the soft limit for a live heap of live bytes under
// limit: unchanged while the heap keeps a third of it free, else
// readHeapMargin above the live heap.
func nextHeapLimit(live, limit int64) int64 {
	if live+live/2 <= limit {
		return limit
	}
	return live + readHeapMargin
}

func runRead(path string, f *decodeFlags) error {
	out := bufio.NewWriterSize(os.Stdout, 256<<10)
	defer out.Flush()
	pr, err := newPrinter(f, out)
	if err != nil {
		return err
	}
	defer tuneReadGC(f.format)()
	// Decoding and printing overlap: text and JSON are rendered by worker
	// goroutines and written in order; pqtrace, which is stateful, prints on
	// one goroutine of its own.
	var sink func(*decode.Unit)
	var wait func() error
	var pl *pipeline.Pipeline
	staged := pr.render != nil
	var arena *decode.Arena
	if staged {
		// What of a unit need not be done by the decoding goroutine is
		// done by a stage of its own, beside it (pl is set before the
		// first unit reaches it). Each batch of units is released to the
		// decoders' arena once written: the units in flight are then all
		// the memory units take, and it stays in the caches.
		arena = decode.NewArena(0)
		r := newParallelRender(pr, func(u *decode.Unit) { pl.Stage(u) }, func(b []byte) []byte { return pl.LendStage(b) }, arena)
		sink, wait = r.add, r.close
	} else {
		s := newParallelSink(pr.Unit)
		sink, wait = s.add, func() error { s.close(); return nil }
	}
	decodeAs, _ := f.decodeAsMap()
	opt := f.options()
	// Every unit is garbage once printed: decoders may allocate them in
	// larger slabs. Text shows no field trees (a filter may look at a
	// few fields): what only they use need not be kept. JSON renders
	// every unit's tree, and AMQP 1.0 small ran 12% slower (wall, 18%
	// more CPU) rebuilding each message's sections.
	opt.Transient = true
	opt.FieldsSeldom = f.format == "text"
	opt.Arena = arena
	// Nothing is shown before the end of a call: a decoder may leave a
	// unit's work to finish on another goroutine (a CompressedMessages
	// inflating while the capture is read on), the order kept.
	opt.Defer = new(decode.Deferred)
	var in *capture.Input
	if path != "-" {
		// A file is mapped where it can be: the units keep its bytes
		// instead of copying them, valid until it is closed, once
		// every unit is written.
		if in, err = capture.Open(path); err != nil {
			wait()
			return inputErr(err)
		}
		defer in.Close()
		opt.StableInput = in.Stable()
	}
	// Fresh heap pages in 2 MiB faults rather than 4 KiB ones: the
	// decoders' slabs and long messages land on pages never touched
	// before, and on a VM a fault costs microseconds (see hugeheap).
	// The corpus shapes ran 1.1 to 2.3 times as fast, at the same peak
	// RSS; 128 MiB covers the largest heap a corpus shape reached (JSON
	// of AMQP 1.0 multi-frame messages, 74 MB). Advising costs a
	// collection, some 2 ms: not worth it for a small file.
	if in == nil || in.Size() < 0 || in.Size() >= 16<<20 {
		hugeheap.Advise(128 << 20)
	}
	pl = pipeline.New(pipeline.Config{Options: opt, DecodeAs: decodeAs, Sink: sink, Staged: staged})
	var stats *capture.Stats
	if path == "-" {
		// A capture piped in: `tcpdump -w - | wiretap read -`.
		stats, err = capture.Read(os.Stdin, "stdin", pl, nil)
	} else {
		stats, err = in.Read(pl, nil)
	}
	if err != nil && (errors.Is(err, capture.ErrNotCapture) || stats == nil) {
		wait()
		return inputErr(err)
	}
	pl.Finish()
	if werr := wait(); werr != nil {
		return inputErr(fmt.Errorf("writing output: %w", werr))
	}
	if err := pr.finish(pl); err != nil {
		return inputErr(fmt.Errorf("writing output: %w", err))
	}
	warnStats(stats)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiretap: warning:", err)
	}
	return nil
}

// warnStats prints a capture's warnings on stderr.
func warnStats(stats *capture.Stats) {
	for _, w := range stats.Warnings {
		fmt.Fprintln(os.Stderr, "wiretap: warning:", w)
	}
	if stats.MoreWarnings > 0 {
		fmt.Fprintln(os.Stderr, "wiretap: warning:", stats.MoreWarnings, "more warnings")
	}
}

// parallelSink hands units to fn on another goroutine, in batches, in
// order.
type parallelSink struct {
	fn   func(*decode.Unit)
	cur  []*decode.Unit
	full chan []*decode.Unit
	free chan []*decode.Unit
	done chan struct{}
}

const sinkBatch = 512

func newParallelSink(fn func(*decode.Unit)) *parallelSink {
	s := &parallelSink{
		fn:   fn,
		full: make(chan []*decode.Unit, 16),
		free: make(chan []*decode.Unit, 17),
		done: make(chan struct{}),
	}
	s.cur = make([]*decode.Unit, 0, sinkBatch)
	go func() {
		defer close(s.done)
		for b := range s.full {
			for i, u := range b {
				s.fn(u)
				b[i] = nil
			}
			select {
			case s.free <- b[:0]:
			default:
			}
		}
	}()
	return s
}

func (s *parallelSink) add(u *decode.Unit) {
	s.cur = append(s.cur, u)
	if len(s.cur) == sinkBatch {
		s.full <- s.cur
		select {
		case s.cur = <-s.free:
		default:
			s.cur = make([]*decode.Unit, 0, sinkBatch)
		}
	}
}

// close sends what is left and waits until every unit was handed to fn.
func (s *parallelSink) close() {
	if len(s.cur) > 0 {
		s.full <- s.cur
		s.cur = nil
	}
	close(s.full)
	<-s.done
}
