package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
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

func runRead(path string, f *decodeFlags) error {
	out := bufio.NewWriterSize(os.Stdout, 256<<10)
	defer out.Flush()
	pr, err := newPrinter(f, out)
	if err != nil {
		return err
	}
	decodeAs, _ := f.decodeAsMap()
	pl := pipeline.New(pipeline.Config{Options: f.options(), DecodeAs: decodeAs, Sink: pr.Unit})
	stats, err := capture.ReadFile(path, pl, nil)
	if err != nil {
		if errors.Is(err, capture.ErrNotCapture) || stats == nil {
			return inputErr(err)
		}
	}
	pl.Finish()
	if err := pr.finish(pl); err != nil {
		return inputErr(fmt.Errorf("writing output: %w", err))
	}
	for _, w := range stats.Warnings {
		fmt.Fprintln(os.Stderr, "wiretap: warning:", w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiretap: warning:", err)
	}
	return nil
}
