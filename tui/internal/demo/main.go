// Command demo runs the TUI over synthetic units, for trying the program
// in a real terminal (and taking screenshots) without a capture:
//
//	go run ./tui/internal/demo -n 1000000
//	go run ./tui/internal/demo -live
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

func main() {
	n := flag.Int("n", 100000, "units to generate")
	live := flag.Bool("live", false, "trickle units in as a live source would")
	flag.Parse()

	ch := make(chan []*decode.Unit, 64)
	var sent atomic.Int64
	go func() {
		defer close(ch)
		g := fake.New(1)
		for done := 0; done < *n; {
			b := g.Units(min(1024, *n-done))
			done += len(b)
			ch <- b
			sent.Store(int64(done))
			if *live {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	opt := tui.Options{
		Title: fmt.Sprintf("demo (%d synthetic units)", *n),
		Live:  *live,
		Units: ch,
		ExportPcapng: func(w io.Writer, units iter.Seq[*decode.Unit]) error {
			n := 0
			for range units {
				n++
			}
			_, err := fmt.Fprintf(w, "demo: %d units would be written\n", n)
			return err
		},
	}
	if !*live {
		opt.Progress = func() (int64, int64) { return sent.Load(), int64(*n) }
	}
	if err := tui.Run(context.Background(), opt); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}
