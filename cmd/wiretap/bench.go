package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/internal/loadgen"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

func newBenchCmd() *cobra.Command {
	var cfg loadgen.Config
	cmd := &cobra.Command{
		Use:   "bench --uri URI [-x N] [-y N] [-s BYTES] [-z DURATION] [-t TYPE] [-a] [-q N] [-c N] [--persistent] [--json]",
		Short: "PerfTest-style AMQP 0-9-1 load generator: rates and latency percentiles",
		Long: `bench publishes and consumes through an AMQP 0-9-1 broker (RabbitMQ, or
wiretap's own) like RabbitMQ's PerfTest: producers and consumers on their
own connections, one progress line a second with send/confirm/receive rates
and consumer latency percentiles, then a summary. It always stops by itself
after -z.`,
		Example: `  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -x 2 -y 2 -s 1000 -z 10s
  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -c 100 --persistent --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.URI == "" {
				return usageErr("bench: --uri is required")
			}
			if cfg.Duration <= 0 {
				return usageErr("bench: -z must be a positive duration")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if _, err := loadgen.Run(ctx, cfg, os.Stdout); err != nil {
				return inputErr(err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.URI, "uri", "", "broker URI, amqp://user:pass@host:port/vhost")
	fs.IntVarP(&cfg.Producers, "producers", "x", 1, "producer connections")
	fs.IntVarP(&cfg.Consumers, "consumers", "y", 1, "consumer connections")
	fs.IntVarP(&cfg.Size, "size", "s", 12, "message body size in bytes (at least 12)")
	fs.DurationVarP(&cfg.Duration, "time", "z", 10*time.Second, "run duration")
	fs.StringVarP(&cfg.ExchangeType, "type", "t", "direct", "exchange type: direct, fanout, topic or headers")
	fs.BoolVarP(&cfg.AutoAck, "autoack", "a", false, "consumers do not acknowledge")
	fs.IntVarP(&cfg.Prefetch, "qos", "q", 0, "consumer prefetch count (0: none)")
	fs.IntVarP(&cfg.ConfirmBatch, "confirm", "c", 0, "publisher confirms with at most N unconfirmed per producer (0: off)")
	fs.BoolVar(&cfg.Persistent, "persistent", false, "publish persistent messages (delivery-mode 2)")
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON lines instead of text")
	return cmd
}
