package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
)

func init() { extraCommands = append(extraCommands, newReplayCmd) }

func newReplayCmd() *cobra.Command {
	var f decodeFlags
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Browse a pcap or pcapng file in the terminal UI",
		Long: `replay opens a capture file in the TUI. Units stream in while the file is
read, so the first screen appears at once even for a large capture.
Press ? in the TUI for every key.`,
		Example: "  wiretap replay testdata/amqp091-pika.pcapng",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
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
			src := func(ctx context.Context, h capture.Handler) error {
				_, err := capture.ReadFile(path, h, &capture.Options{Progress: prog.set})
				return err
			}
			return runTUI(ctx, &f, path, false, decodeAs, src, prog.get)
		},
	}
	f.register(cmd)
	return cmd
}
