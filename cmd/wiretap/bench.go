package main

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wiretap-dev/wiretap/internal/loadgen"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

// secondsValue is a duration flag that also takes PerfTest's bare seconds
// ("-z 10" is "-z 10s").
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string { return v.d.String() }
func (v secondsValue) Type() string   { return "duration" }
func (v secondsValue) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		*v.d = time.Duration(n * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func durationFlag(fs *pflag.FlagSet, p *time.Duration, name, short string, def time.Duration, usage string) {
	*p = def
	fs.VarP(secondsValue{p}, name, short, usage)
}

func newBenchCmd() *cobra.Command {
	var (
		cfg   loadgen.Config
		flags []string
		// --protocol amqp1.0: the go-amqp generator of bench10.go.
		protocol string
		b10      bench10Config
	)
	cmd := &cobra.Command{
		Use:   "bench --uri URI [-x N] [-y N] [-s BYTES] [-z DURATION] [-t TYPE] [-a] [-q N] [-c N] [-r RATE] [--queues N] [--json]",
		Short: "PerfTest-style AMQP load generator (0-9-1; 1.0 with --protocol amqp1.0): rates and latency percentiles",
		Long: `bench publishes and consumes through an AMQP 0-9-1 broker (RabbitMQ, or
wiretap's own) like RabbitMQ's PerfTest, with PerfTest's flag names:
producers and consumers on their own connections, one progress line a
second with send/confirm/receive rates and latency percentiles, then a
summary with the count of messages per latency range (<=1 ms, <=5 ms,
<=50 ms, <=500 ms, <=1000 ms, >1 s).

The measured time is -z, read from the clock between the first and the
last snapshot (so within milliseconds of -z, however long setting up or
stopping takes, confirms or not); --warm-up runs before it and is not
counted; every rate is divided by the measured time. bench declares the exchange
wiretap.bench-TYPE and its queues, and deletes them at the end unless
--keep. With --json each line is one JSON object; the last is
{"summary": ...}, the same with either --client.

--client wiretap (the default) speaks AMQP through wiretap's own codec;
--client amqp091-go through github.com/rabbitmq/amqp091-go, so that a
comparison does not rest on wiretap's codec alone.`,
		Example: `  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -x 2 -y 2 -s 1000 -z 10s
  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -c 1000 -q 1000 --multi-ack-every 100 --json
  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -t fanout -y 10 --queue-pattern 'perf-test-%d' --queue-pattern-from 1 --queue-pattern-to 10
  wiretap bench --uri amqp://guest:guest@127.0.0.1:5672/ -t topic --bindings 1000 --size-dist 16:0.9,4096:0.1 -r 5000 --warm-up 2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.URI == "" {
				return usageErr("bench: --uri is required")
			}
			if cfg.Duration <= 0 {
				return usageErr("bench: -z must be a positive duration")
			}
			switch protocol {
			case "amqp0-9-1":
			case "amqp1.0":
				if cfg.Size < 12 || b10.credit <= 0 || b10.inflight <= 0 {
					return usageErr("bench: --protocol amqp1.0 needs -s of at least 12, a positive --credit and --inflight")
				}
				b10.uri, b10.queue, b10.size, b10.duration = cfg.URI, cfg.Queue, cfg.Size, cfg.Duration
				b10.settled, b10.keep, b10.id, b10.json = cfg.AutoAck, cfg.Keep, cfg.ID, cfg.JSON
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				if _, err := runBench10(ctx, b10, os.Stdout); err != nil {
					return inputErr(err)
				}
				return nil
			default:
				return usageErr("bench: --protocol %q: want amqp0-9-1 or amqp1.0", protocol)
			}
			for _, f := range flags {
				switch f {
				case "persistent":
					cfg.Persistent = true
				default:
					return usageErr("bench: -f %q: only persistent is supported", f)
				}
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("bench: %s", strings.TrimPrefix(err.Error(), "loadgen: "))
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
	fs.StringVar(&cfg.Client, "client", loadgen.ClientWiretap, "AMQP client: wiretap (its own codec) or amqp091-go")
	fs.IntVarP(&cfg.Producers, "producers", "x", 1, "producer connections")
	fs.IntVarP(&cfg.Consumers, "consumers", "y", 1, "consumer connections")
	fs.IntVarP(&cfg.Size, "size", "s", 12, "message body size in bytes (at least 12)")
	fs.StringVar(&cfg.SizeDist, "size-dist", "", "message sizes drawn by weight, SIZE:WEIGHT,... (e.g. 16:0.9,4096:0.1); overrides -s")
	durationFlag(fs, &cfg.Duration, "time", "z", 10*time.Second, "measured run duration (10s, or bare seconds as in PerfTest)")
	durationFlag(fs, &cfg.WarmUp, "warm-up", "", 0, "run this long before measuring (not counted)")
	durationFlag(fs, &cfg.Interval, "interval", "i", time.Second, "time between progress lines")
	fs.StringVarP(&cfg.ExchangeType, "type", "t", "direct", "exchange type: direct, fanout, topic or headers")
	fs.StringVarP(&cfg.Exchange, "exchange", "e", "", `exchange name (default "wiretap.bench-TYPE"; amq.* names are used, not declared; amq.default is the default exchange)`)
	fs.StringVarP(&cfg.Queue, "queue", "u", "", `queue name (default "wiretap.bench.RANDOM")`)
	fs.StringVarP(&cfg.RoutingKey, "routing-key", "k", "", "routing key of every binding and publish (default: each queue's name)")
	fs.IntVar(&cfg.Queues, "queues", 0, "number of queues; consumer and producer i use queue i mod N (default 1)")
	fs.StringVar(&cfg.QueuePattern, "queue-pattern", "", "queue names, %d replaced by each number of the range (e.g. perf-test-%d)")
	fs.IntVar(&cfg.QueuePatternFrom, "queue-pattern-from", 0, "first number of --queue-pattern (default 1)")
	fs.IntVar(&cfg.QueuePatternTo, "queue-pattern-to", 0, "last number of --queue-pattern (default from + --queues - 1)")
	fs.IntVar(&cfg.Bindings, "bindings", 0, "extra bindings that match nothing (direct and topic), to route through a large table")
	fs.BoolVarP(&cfg.AutoAck, "autoack", "a", false, "consumers do not acknowledge")
	fs.IntVarP(&cfg.MultiAckEvery, "multi-ack-every", "A", 0, "acknowledge every N deliveries with one multiple ack")
	fs.IntVarP(&cfg.Prefetch, "qos", "q", 0, "consumer prefetch count (0: none)")
	fs.IntVarP(&cfg.ConfirmBatch, "confirm", "c", 0, "publisher confirms with at most N unconfirmed per producer (0: off)")
	fs.Float64VarP(&cfg.Rate, "rate", "r", 0, "messages a second per producer (0: no limit)")
	fs.BoolVar(&cfg.Persistent, "persistent", false, "publish persistent messages (delivery-mode 2) to durable queues")
	fs.StringSliceVarP(&flags, "flag", "f", nil, "message flags as in PerfTest: persistent (same as --persistent)")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave the exchange and queues in place at the end")
	fs.StringVar(&cfg.ID, "id", "", `name of the run in the output (default "test-HHMMSS-mmm")`)
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON lines instead of text")
	fs.StringVar(&protocol, "protocol", "amqp0-9-1", "amqp0-9-1, or amqp1.0: one go-amqp sender and receiver, quiver's rates (-s, -z, -u, -a for settled, --keep, --id, --json apply)")
	fs.IntVar(&b10.credit, "credit", 10000, "amqp1.0: the receiver's link credit")
	fs.IntVar(&b10.inflight, "inflight", 1000, "amqp1.0: unsettled deliveries the sender keeps in flight")
	fs.StringVar(&b10.address, "address", "", `amqp1.0: the link address (default "/queues/QUEUE"; RabbitMQ 3.x's plugin: /amq/queue/QUEUE)`)
	return cmd
}
