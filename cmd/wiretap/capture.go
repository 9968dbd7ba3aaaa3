package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/live"
	"github.com/wiretap-dev/wiretap/tui"
)

func init() { extraCommands = append(extraCommands, newCaptureCmd) }

func newCaptureCmd() *cobra.Command {
	var (
		f        decodeFlags
		iface    string
		bpf      string
		w        writeFlags
		engine   string
		headless bool
		memory   memoryFlag
		bufSize  string
	)
	cmd := &cobra.Command{
		Use:   "capture -i IFACE [-f BPF] [-B SIZE] [-w OUT.pcapng] [--headless]",
		Short: "Capture live traffic from an interface and decode it",
		Long: `capture listens on an interface (root or CAP_NET_RAW needed) and decodes
AMQP and PostgreSQL traffic as it passes: in the TUI, or printed like
'read' with --headless. -f takes a libpcap capture filter; -w records the
packets to a pcapng file as they are captured.`,
		Example: `  sudo wiretap capture -i lo -f 'tcp port 5672'
  sudo wiretap capture -i any -f 'tcp port 5432' --headless --format pqtrace`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if iface == "" {
				return usageErr("capture: -i IFACE is required")
			}
			if err := f.check(); err != nil {
				return err
			}
			budget, err := memory.option()
			if err != nil {
				return err
			}
			switch engine {
			case live.EngineAuto, "auto", live.EngineDumpcap, live.EngineAFPacket:
			default:
				return usageErr("capture: --engine %q: want auto, dumpcap or afpacket", engine)
			}
			if engine == "auto" {
				engine = live.EngineAuto
			}
			buffer, err := parseSize(bufSize)
			if err != nil || buffer < 0 || buffer > 1<<40 {
				return usageErr("capture: --buffer-size %s: want a size such as 64MiB, or 0 for the engine's default", bufSize)
			}
			ended := make(chan *capture.Stats, 1)
			var started atomic.Bool
			var dropped atomic.Int64
			src := func(ctx context.Context, h capture.Handler, tap func(*capture.Packet)) error {
				started.Store(true)
				stats, err := live.Run(ctx, &live.Config{
					Interface: iface, Filter: bpf, Engine: engine, Buffer: int(buffer),
					Options: &capture.Options{Tap: tap}, Dropped: &dropped,
				}, h)
				ended <- stats
				return err
			}
			// The title and the statistics view (S) say what the kernel
			// dropped so far.
			drops := func(o *tui.Options) {
				o.Dropped = dropped.Load
				o.Warnings = func() []string {
					if n := dropped.Load(); n > 0 {
						return []string{live.DroppedWarning(iface, n)}
					}
					return nil
				}
			}
			err = liveRun(&f, headless, "capture "+iface, w, false, src, budget, drops)
			// What the capture lost (kernel drops, a dumpcap that
			// stopped) is said at the end, as dumpcap does. The TUI
			// returns as the capture is told to stop: give it a moment.
			if !started.Load() {
				return err
			}
			select {
			case stats := <-ended:
				if stats != nil {
					warnStats(stats)
					// tcpdump's and dumpcap's last words.
					fmt.Fprintf(os.Stderr, "wiretap: capture %s: %d packets captured, %d dropped\n", iface, stats.Packets, stats.Dropped)
				}
			case <-time.After(2 * time.Second):
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&iface, "interface", "i", "", "interface to capture on (\"any\" for all)")
	cmd.Flags().StringVarP(&bpf, "filter-capture", "f", "", "libpcap capture filter, e.g. 'tcp port 5672'")
	w.register(cmd, "also write the captured packets to this pcapng file as they are captured")
	cmd.Flags().StringVar(&engine, "engine", live.EngineAuto, "capture engine: auto, dumpcap or afpacket")
	cmd.Flags().BoolVar(&headless, "headless", false, "print instead of opening the TUI")
	cmd.Flags().StringVarP(&bufSize, "buffer-size", "B", "0", "capture buffer (KiB, MiB, GiB; 0: the engine's default): what the kernel holds while the decoders catch up")
	memory.register(cmd)
	f.register(cmd)
	return cmd
}
