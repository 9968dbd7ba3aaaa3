package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui"
)

// liveFlush is how often a headless live run writes what it printed.
const liveFlush = 50 * time.Millisecond

// liveSource starts a source of bytes that runs until ctx is done. tap, when
// not nil, receives every packet record (sources that have packets).
type liveSource func(ctx context.Context, h capture.Handler, tap func(*capture.Packet)) error

// liveRun runs src into a pipeline, headless or under the TUI. w.path
// names a pcapng file to record to as traffic passes: packets as captured
// when the source has them (synthesised=false), else TCP packets
// synthesised from the streams.
func liveRun(f *decodeFlags, headless bool, title string, w writeFlags, synthesised bool, src liveSource, tuiOpts ...func(*tui.Options)) error {
	if w.redact && w.path == "" {
		return usageErr("--redact: it applies to the -w file; give -w FILE")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var (
		tap    func(*capture.Packet)
		record capture.Handler
	)
	if w.path != "" {
		rec, err := openRecording(w, synthesised)
		if err != nil {
			return inputErr(err)
		}
		if synthesised {
			record = rec
		} else {
			tap = rec.WritePacket
		}
		defer rec.end()
	}
	// The recording is the Serial's recorder: the sources' Decoupled give
	// it a buffer and goroutine of its own, so a decoder behind neither
	// delays the file nor costs it bytes.
	newSerial := func(h capture.Handler) *capture.Serial {
		s := capture.NewSerial(h)
		if record != nil {
			s.SetRecorder(record)
		}
		return s
	}
	decodeAs, _ := f.decodeAsMap()
	if headless {
		out := bufio.NewWriterSize(os.Stdout, 64<<10)
		defer out.Flush()
		pr, err := newPrinter(f, out)
		if err != nil {
			return err
		}
		// A live source prints as it goes: what was printed reaches stdout
		// within liveFlush, without a write per unit.
		var mu sync.Mutex
		sink := func(u *decode.Unit) {
			if pr.trace != nil && u.Type == "gap" && u.Parent == nil && u.Conn != nil {
				// pqtrace has no line for what was not decoded: say it
				// apart, as for unrecognised connections.
				for _, w := range u.Warnings() {
					fmt.Fprintf(os.Stderr, "wiretap: conn %d %s: %s\n", u.Conn.ID, u.Dir, w)
				}
			}
			mu.Lock()
			pr.Unit(u)
			mu.Unlock()
		}
		stopFlush := make(chan struct{})
		flushed := make(chan struct{})
		go func() {
			defer close(flushed)
			t := time.NewTicker(liveFlush)
			defer t.Stop()
			held := false
			for {
				select {
				case <-t.C:
					mu.Lock()
					held, _ = pr.flushLive(held)
					out.Flush()
					mu.Unlock()
				case <-stopFlush:
					return
				}
			}
		}()
		staged, flushStage := f.wrapSink(sink)
		pl := pipeline.New(pipeline.Config{Options: f.options(), DecodeAs: decodeAs, Sink: staged})
		watch := newProtoWatch(pl, func(msg string) { fmt.Fprintln(os.Stderr, msg) })
		err = src(ctx, newSerial(watch), tap)
		close(stopFlush)
		<-flushed
		watch.finish(time.Now())
		pl.Finish()
		flushStage()
		if ferr := pr.finish(pl); ferr != nil && err == nil {
			err = ferr
		}
		if err != nil {
			return inputErr(err)
		}
		return nil
	}
	return runTUI(ctx, f, title, true, decodeAs, func(ctx context.Context, h capture.Handler) error {
		return src(ctx, newSerial(h), tap)
	}, nil, tuiOpts...)
}
