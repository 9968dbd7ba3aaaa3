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
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui"
)

// liveFlush is how often a headless live run writes what it printed.
const liveFlush = 50 * time.Millisecond

// liveSource starts a source of bytes that runs until ctx is done. tap, when
// not nil, receives every packet record (sources that have packets).
type liveSource func(ctx context.Context, h capture.Handler, tap func(*capture.Packet)) error

// liveRun runs src into a pipeline, headless or under the TUI. writeTo names
// a pcapng file to record to: packets as captured when the source has
// them (synthesised=false), else TCP packets synthesised from the streams.
func liveRun(f *decodeFlags, headless bool, title, writeTo string, synthesised bool, src liveSource, tuiOpts ...func(*tui.Options)) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var (
		rec      *pcapng.Writer
		recFile  *os.File
		recBuf   *bufio.Writer
		tap      func(*capture.Packet)
		handlers []capture.Handler
	)
	if writeTo != "" {
		fh, err := os.Create(writeTo)
		if err != nil {
			return inputErr(err)
		}
		recFile = fh
		recBuf = bufio.NewWriterSize(fh, 256<<10)
		rec = pcapng.NewWriter(recBuf)
		if synthesised {
			handlers = append(handlers, pcapng.NewSynth(rec))
		} else {
			tap = func(p *capture.Packet) {
				if err := rec.WritePacket(p); err != nil {
					fmt.Fprintln(os.Stderr, "wiretap: writing", writeTo+":", err)
				}
			}
		}
		defer func() {
			rec.Close()
			recBuf.Flush()
			recFile.Close()
		}()
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
		pl := pipeline.New(pipeline.Config{Options: f.options(), DecodeAs: decodeAs, Sink: sink})
		h := capture.MultiHandler(append([]capture.Handler{pl}, handlers...)...)
		err = src(ctx, capture.NewSerial(h), tap)
		close(stopFlush)
		<-flushed
		pl.Finish()
		if ferr := pr.finish(pl); ferr != nil && err == nil {
			err = ferr
		}
		if err != nil {
			return inputErr(err)
		}
		return nil
	}
	return runTUI(ctx, f, title, true, decodeAs, func(ctx context.Context, h capture.Handler) error {
		return src(ctx, capture.NewSerial(capture.MultiHandler(append([]capture.Handler{h}, handlers...)...)), tap)
	}, nil, tuiOpts...)
}
