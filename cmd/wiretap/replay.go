package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/tui"
)

func init() { extraCommands = append(extraCommands, newReplayCmd) }

func newReplayCmd() *cobra.Command {
	var f decodeFlags
	var memory memoryFlag
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Browse a pcap or pcapng file in the terminal UI",
		Long: `replay opens a capture file in the TUI. Units stream in while the file is
read, so the first screen appears at once even for a large capture.
--memory is a memory budget: the newest units are kept in memory within
half of it (the rest is the garbage collector's and the decoders'), and
the older ones frozen to temporary files (removed at exit) and rebuilt
when shown, filtered or exported, so memory does not grow with the
capture; the title shows the memory in use.
Press ? in the TUI for every key.`,
		Example: "  wiretap replay testdata/amqp091-pika.pcapng",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			budget, err := memory.option()
			if err != nil {
				return err
			}
			path := args[0]
			// Refuse what is not a capture before the screen changes.
			if err := capture.Probe(path); err != nil {
				return inputErr(err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			decodeAs, _ := f.decodeAsMap()
			var prog fileProgress
			var warns atomic.Pointer[[]string]
			src := func(ctx context.Context, h capture.Handler) error {
				st, err := capture.ReadFile(path, h, &capture.Options{Progress: prog.set})
				if st == nil || (len(st.Warnings) == 0 && st.MoreWarnings == 0) {
					return err
				}
				w := append([]string(nil), st.Warnings...)
				if st.MoreWarnings > 0 {
					w = append(w, strconv.Itoa(st.MoreWarnings)+" more warnings")
				}
				warns.Store(&w)
				// The status line says so when the file is read, as read
				// says it on stderr; the statistics view lists them.
				// (A file cut short is among the warnings.)
				return errors.New("capture: " + plural(len(w), "warning") + ", the first: " + w[0] + " (S: the statistics list them)")
			}
			sources := func(o *tui.Options) {
				budget(o)
				o.Warnings = func() []string {
					if w := warns.Load(); w != nil {
						return *w
					}
					return nil
				}
			}
			return runTUI(ctx, &f, path, false, decodeAs, src, prog.get, sources)
		},
	}
	f.register(cmd)
	memory.register(cmd)
	return cmd
}
