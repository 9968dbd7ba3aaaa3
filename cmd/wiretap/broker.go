package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/capture"
)

func init() { extraCommands = append(extraCommands, newBrokerCmd) }

// brokerFlags are the broker's own flags (the decode flags come beside
// them for --headless).
type brokerFlags struct {
	listen         string
	frameMax       uint32
	channelMax     uint16
	heartbeat      time.Duration
	maxConnections int
	maxChannels    int
	maxMessage     int64
	watermark      int64
	users          []string
}

func (bf *brokerFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&bf.listen, "listen", "127.0.0.1:5672", "AMQP `ADDR` to accept clients on")
	fs.Uint32Var(&bf.frameMax, "frame-max", broker.DefaultFrameMax, "frame_max offered in connection.tune")
	fs.Uint16Var(&bf.channelMax, "channel-max", broker.DefaultChannelMax, "channel_max offered in connection.tune")
	fs.DurationVar(&bf.heartbeat, "heartbeat", broker.DefaultHeartbeat, "heartbeat offered in connection.tune (0s: none)")
	fs.IntVar(&bf.maxConnections, "max-connections", 0, "open connections allowed (0: no limit)")
	fs.IntVar(&bf.maxChannels, "max-channels", 0, "channels one connection may open (0: channel_max alone)")
	fs.Int64Var(&bf.maxMessage, "max-message-size", broker.DefaultMaxMessage, "largest message body accepted, in bytes")
	fs.Int64Var(&bf.watermark, "memory-high-watermark", 0, "message bytes held above which publishers are blocked (0: 40% of RAM)")
	fs.StringArrayVar(&bf.users, "user", nil, "add a user `NAME:PASSWORD` with full permissions on every vhost (repeatable)")
}

func (bf *brokerFlags) config() (broker.Config, error) {
	hb := bf.heartbeat
	if hb == 0 {
		hb = -1 // offered as none
	}
	cfg := broker.Config{
		FrameMax: bf.frameMax, ChannelMax: bf.channelMax, Heartbeat: hb,
		MaxConnections: bf.maxConnections, MaxChannels: bf.maxChannels, MaxMessage: bf.maxMessage,
		MemoryHighWatermark: bf.watermark,
	}
	if len(bf.users) > 0 {
		st := brokerDefaultUsers()
		for _, u := range bf.users {
			name, pass, ok := strings.Cut(u, ":")
			if !ok || name == "" {
				return cfg, usageErr("--user %q: want NAME:PASSWORD", u)
			}
			st.PutUser(name, pass, []string{"administrator"})
			if err := st.SetPermissions(name, "/", ".*", ".*", ".*"); err != nil {
				return cfg, usageErr("--user: %v", err)
			}
		}
		cfg.Users = st
	}
	return cfg, nil
}

const brokerLong = `broker runs wiretap's embedded AMQP 0-9-1 broker, compatible with RabbitMQ 3.10
(exchanges of every type, queues with their x- arguments, dead-lettering,
publisher confirms, transactions, qos, RabbitMQ's error codes and texts),
and opens the TUI on its own traffic: every frame of every client, decoded
as 'wiretap read' decodes a capture. With --headless it prints the units
instead, with every flag of 'read'.

Point any AMQP 0-9-1 client at it instead of RabbitMQ; the default user is
guest/guest, from loopback only, as in RabbitMQ. The broker announces
product "RabbitMQ" (clients gate RabbitMQ's semantics on it) and says what it
is in its platform and information properties.

Messages live in memory: durable queues and persistent messages are
accepted, but nothing survives a restart.`

func newBrokerCmd() *cobra.Command {
	var (
		f        decodeFlags
		bf       brokerFlags
		writeTo  string
		headless bool
	)
	cmd := &cobra.Command{
		Use:   "broker [--listen ADDR] [--headless] [-w OUT.pcapng]",
		Short: "Run the embedded RabbitMQ-compatible broker and watch its traffic",
		Long:  brokerLong,
		Example: `  wiretap broker
  wiretap broker --listen 127.0.0.1:5673 --headless --format json
  wiretap broker --headless -w session.pcapng`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBroker(&f, &bf, headless, writeTo)
		},
	}
	cmd.Flags().StringVarP(&writeTo, "write", "w", "", "record the broker's traffic to this pcapng file (synthesised TCP)")
	cmd.Flags().BoolVar(&headless, "headless", false, "print instead of opening the TUI")
	bf.register(cmd)
	f.register(cmd)
	return cmd
}

// runBroker listens first, so a taken port is one clear line before any
// TUI starts; without a terminal it runs headless.
func runBroker(f *decodeFlags, bf *brokerFlags, headless bool, writeTo string) error {
	if err := f.check(); err != nil {
		return err
	}
	cfg, err := bf.config()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", bf.listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return inputErr(fmt.Errorf("broker: %s is in use (a RabbitMQ already running?): choose another address with --listen", bf.listen))
		}
		return inputErr(fmt.Errorf("broker: %w", err))
	}
	if !headless && !(term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())) {
		headless = true
	}
	if headless {
		fmt.Fprintf(os.Stderr, "broker: listening on %s (AMQP 0-9-1; guest/guest from loopback)\n", ln.Addr())
	}
	src := func(ctx context.Context, h capture.Handler, _ func(*capture.Packet)) error {
		c := cfg
		c.Tap = capture.NewSerial(h)
		if headless {
			c.Log = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
		}
		b, err := broker.New(c)
		if err != nil {
			ln.Close()
			return err
		}
		err = b.Serve(ctx, ln)
		b.Close()
		return err
	}
	return liveRun(f, headless, "broker "+ln.Addr().String(), writeTo, true, src)
}

func brokerDefaultUsers() *auth.Store { return auth.NewDefaultStore() }
