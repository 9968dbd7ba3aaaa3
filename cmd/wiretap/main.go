// Command wiretap is a terminal inspector and debugger for AMQP 0-9-1,
// AMQP 1.0 and PostgreSQL wire traffic: from capture files, live capture, a
// proxy, or its own embedded broker. See the README for the commands.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries an exit status through cobra: 1 when the input cannot
// be used at all, 2 for wrong usage (INTERFACES.md, "Exit status").
type exitError struct {
	code int
	err  error
	// quiet: the reason was already said (by a process of ours that
	// exited with code).
	quiet bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return "exit status " + strconv.Itoa(e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

func inputErr(err error) error { return &exitError{code: 1, err: err} }

func main() {
	root := newRoot()
	cmd, err := root.ExecuteC()
	if err == nil {
		return
	}
	var se *signalExit
	if errors.As(err, &se) {
		signal.Reset(se.sig)
		syscall.Kill(os.Getpid(), se.sig)
		os.Exit(128 + int(se.sig)) // not reached unless the signal is blocked
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.quiet {
			fmt.Fprintln(os.Stderr, "wiretap:", ee.err)
		}
		os.Exit(ee.code)
	}
	// Anything cobra itself rejects (unknown flag, wrong argument count) is
	// a usage error.
	fmt.Fprintln(os.Stderr, "wiretap:", err)
	fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	os.Exit(2)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "wiretap",
		Short: "Inspect and debug AMQP 0-9-1, AMQP 1.0 and PostgreSQL wire traffic",
		Long: `wiretap decodes AMQP 0-9-1, AMQP 1.0 and PostgreSQL v3 traffic frame by frame,
from pcap/pcapng files, live capture, a proxy in front of a server, or its
own embedded broker, and shows it in a terminal UI or prints it.

With no command, wiretap starts its embedded RabbitMQ-compatible broker on
127.0.0.1:5672 and opens the TUI on its traffic (see 'wiretap broker --help').`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		// Plain wiretap is the broker with its defaults and the TUI on its
		// traffic (headless without a terminal).
		RunE: func(cmd *cobra.Command, args []string) error {
			bc := newBrokerCmd()
			if err := bc.ParseFlags(nil); err != nil {
				return err
			}
			return bc.RunE(bc, nil)
		},
	}
	var cpuProfile, memProfile, traceFile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to `FILE` (for developers)")
	root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a heap profile to `FILE` at exit (for developers)")
	root.PersistentFlags().MarkHidden("memprofile")
	root.PersistentFlags().StringVar(&traceFile, "trace", "", "write an execution trace to `FILE` (for developers; go tool trace)")
	root.PersistentFlags().MarkHidden("trace")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if isDecoderProcess() {
			// A proxy's decoding process has its own files beside the
			// forwarding process's.
			for _, f := range []*string{&cpuProfile, &memProfile, &traceFile} {
				if *f != "" {
					*f += ".decoder"
				}
			}
		}
		if traceFile != "" {
			fh, err := os.Create(traceFile)
			if err != nil {
				return inputErr(err)
			}
			if err := trace.Start(fh); err != nil {
				return inputErr(err)
			}
		}
		if cpuProfile == "" {
			return nil
		}
		fh, err := os.Create(cpuProfile)
		if err != nil {
			return inputErr(err)
		}
		return pprof.StartCPUProfile(fh)
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) {
		if cpuProfile != "" {
			pprof.StopCPUProfile()
		}
		if traceFile != "" {
			trace.Stop()
		}
		if memProfile != "" {
			if fh, err := os.Create(memProfile); err == nil {
				// The profile shows the heap as of the last collection:
				// one now, so that it counts every allocation.
				runtime.GC()
				pprof.WriteHeapProfile(fh)
				fh.Close()
			}
		}
	}
	root.AddCommand(newReadCmd())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	return root
}

// extraCommands lets each subcommand's file register itself.
var extraCommands []func() *cobra.Command
