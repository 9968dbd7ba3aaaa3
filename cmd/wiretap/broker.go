package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/broker/mgmt"
	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/tui"
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
	maxLength      int64
	maxLengthBytes int64
	users          []string
	management     string
	tlsListen      string
	tlsCert        string
	tlsKey         string
	tlsCA          string
	definitions    string
	exportDefs     string
	configFile     string
	fileUsers      *auth.Store // from --config
	// verifyChecksums and checksumPublish are --verify-checksums and
	// --checksum-publish (AMQP 1.0 end-to-end checksums at the broker).
	verifyChecksums bool
	checksumPublish string
	// noTap is --no-tap: the broker alone, its traffic neither decoded
	// nor printed.
	noTap bool
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
	fs.Int64Var(&bf.maxLength, "default-max-length", 0, "messages a queue declared without x-max-length may hold, oldest dropped first (0: no limit)")
	fs.Int64Var(&bf.maxLengthBytes, "default-max-length-bytes", 0, "body bytes a queue declared without x-max-length-bytes may hold (0: no limit)")
	fs.StringArrayVar(&bf.users, "user", nil, "add a user `NAME:PASSWORD` with full permissions on \"/\" (repeatable)")
	fs.StringVar(&bf.management, "management", "127.0.0.1:15672", "`ADDR` of RabbitMQ's management HTTP API subset (\"\" for none)")
	fs.StringVar(&bf.tlsListen, "tls-listen", "", "AMQPS `ADDR` to accept TLS clients on (RabbitMQ's is 5671; needs --tls-cert and --tls-key)")
	fs.StringVar(&bf.tlsCert, "tls-cert", "", "PEM certificate for --tls-listen")
	fs.StringVar(&bf.tlsKey, "tls-key", "", "PEM key for --tls-cert")
	fs.StringVar(&bf.tlsCA, "tls-ca", "", "PEM CA bundle: ask TLS clients for certificates signed by it and offer EXTERNAL")
	fs.StringVar(&bf.configFile, "config", "", "RabbitMQ-style configuration `FILE` (rabbitmq.conf keys: listeners, limits, default user and vhost); flags win")
	fs.StringVar(&bf.definitions, "definitions", "", "load RabbitMQ definitions JSON (rabbitmqctl export_definitions) at start")
	fs.StringVar(&bf.exportDefs, "export-definitions", "", "write the broker's definitions JSON to `FILE` when it stops")
	fs.BoolVar(&bf.verifyChecksums, "verify-checksums", false, "recompute AMQP 1.0 x-opt-crc-32 / x-opt-adler-32 footer checksums on arrival and on delivery; report mismatches")
	fs.StringVar(&bf.checksumPublish, "checksum-publish", "", "add an `ALG` (crc-32 or adler-32) checksum footer to AMQP 1.0 messages published without a footer")
	fs.Lookup("checksum-publish").NoOptDefVal = "crc-32"
	fs.BoolVar(&bf.noTap, "no-tap", false, "with --headless: run the broker alone, its traffic neither decoded nor printed (a test server, a benchmark target)")
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
		DefaultMaxLength:    bf.maxLength, DefaultMaxLengthBytes: bf.maxLengthBytes,
	}
	switch bf.checksumPublish {
	case "", "crc-32", "adler-32":
		cfg.VerifyChecksums, cfg.ChecksumPublish = bf.verifyChecksums, bf.checksumPublish
	default:
		return cfg, usageErr("broker: --checksum-publish %q: want crc-32 or adler-32", bf.checksumPublish)
	}
	if (bf.tlsListen != "") != (bf.tlsCert != "" && bf.tlsKey != "") {
		return cfg, usageErr("broker: --tls-listen needs --tls-cert and --tls-key, and they need --tls-listen")
	}
	if bf.tlsListen != "" {
		cert, err := tls.LoadX509KeyPair(bf.tlsCert, bf.tlsKey)
		if err != nil {
			return cfg, inputErr(fmt.Errorf("broker: loading the TLS certificate: %w", err))
		}
		cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		if bf.tlsCA != "" {
			pem, err := os.ReadFile(bf.tlsCA)
			if err != nil {
				return cfg, inputErr(fmt.Errorf("broker: --tls-ca: %w", err))
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return cfg, inputErr(fmt.Errorf("broker: --tls-ca %s: no certificate in it", bf.tlsCA))
			}
			cfg.TLS.ClientCAs = pool
			cfg.TLS.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	cfg.Users = bf.fileUsers
	if len(bf.users) > 0 {
		st := bf.fileUsers
		if st == nil {
			st = brokerDefaultUsers()
		}
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
instead, with every flag of 'read'; with --headless --no-tap it runs the
broker alone, nothing decoded (a test server, a benchmark target). A tap
that falls behind the traffic never slows the broker: what it could not
decode is shown as gaps, and the total is said on stderr at the end.

Point any AMQP 0-9-1 client at it instead of RabbitMQ; the default user is
guest/guest, from loopback only, as in RabbitMQ. The same listener speaks
AMQP 1.0 too, as RabbitMQ 4 does (SASL PLAIN, addresses /queues/NAME and
/exchanges/NAME/KEY): its bare messages are stored and delivered as the
bytes that arrived. The broker announces
product "RabbitMQ" (clients gate RabbitMQ's semantics on it) and says what it
is in its platform and information properties.

In the TUI, b opens the broker panel (exchanges, queues, bindings,
connections, channels, consumers, users, latency histograms) and :route
EXCHANGE KEY explains a route against the live topology; each publish's
route is also in its units (broker.route.* fields, filterable). RabbitMQ's management HTTP API (the part
tools use) answers on --management.

Messages live in memory: durable queues and persistent messages are
accepted, but nothing survives a restart.`

func newBrokerCmd() *cobra.Command {
	var (
		f        decodeFlags
		bf       brokerFlags
		w        writeFlags
		headless bool
		memory   memoryFlag
	)
	cmd := &cobra.Command{
		Use:   "broker [--listen ADDR] [--tls-listen ADDR --tls-cert F --tls-key F] [--management ADDR] [--definitions FILE] [--headless] [-w OUT.pcapng]",
		Short: "Run the embedded RabbitMQ-compatible broker and watch its traffic",
		Long:  brokerLong,
		Example: `  wiretap broker
  wiretap broker --listen 127.0.0.1:5673 --headless --format json
  wiretap broker --headless -w session.pcapng`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if bf.configFile != "" {
				bc, err := parseBrokerConfig(bf.configFile)
				if err != nil {
					return err
				}
				if err := bc.apply(cmd.Flags()); err != nil {
					return err
				}
				bf.fileUsers = bc.users
				for _, n := range bc.notes {
					fmt.Fprintln(os.Stderr, n)
				}
			}
			budget, err := memory.option()
			if err != nil {
				return err
			}
			return runBroker(&f, &bf, headless, w, budget)
		},
	}
	w.register(cmd, "record the broker's traffic to this pcapng file as it passes (synthesised TCP)")
	cmd.Flags().BoolVar(&headless, "headless", false, "print instead of opening the TUI")
	memory.register(cmd)
	bf.register(cmd)
	f.register(cmd)
	return cmd
}

// runBroker listens first, so a taken port is one clear line before any
// TUI starts; without a terminal it runs headless.
func runBroker(f *decodeFlags, bf *brokerFlags, headless bool, w writeFlags, tuiOpts ...func(*tui.Options)) error {
	if err := f.check(); err != nil {
		return err
	}
	if !headless && !(term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())) {
		headless = true
	}
	if bf.noTap && !headless {
		return usageErr("broker: --no-tap needs --headless (the TUI shows the tap's units)")
	}
	if bf.noTap && w.path != "" {
		return usageErr("broker: --no-tap and -w: the recording is made by the tap")
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
	if headless {
		fmt.Fprintf(os.Stderr, "broker: listening on %s (AMQP 0-9-1; guest/guest from loopback)\n", ln.Addr())
	}
	var tln net.Listener
	if bf.tlsListen != "" {
		l, err := net.Listen("tcp", bf.tlsListen)
		if err != nil {
			ln.Close()
			return inputErr(fmt.Errorf("broker: --tls-listen: %w", err))
		}
		tln = tls.NewListener(l, cfg.TLS)
		if headless {
			fmt.Fprintf(os.Stderr, "broker: listening on %s (AMQPS)\n", l.Addr())
		}
	}
	var defs []byte
	if bf.definitions != "" {
		if defs, err = os.ReadFile(bf.definitions); err != nil {
			ln.Close()
			return inputErr(fmt.Errorf("broker: --definitions: %w", err))
		}
	}
	var mln net.Listener
	if bf.management != "" {
		if mln, err = net.Listen("tcp", bf.management); err != nil {
			// The broker is still useful without its management API.
			fmt.Fprintf(os.Stderr, "broker: management API not started: %v\n", err)
		} else if headless {
			fmt.Fprintf(os.Stderr, "broker: management API on http://%s/api/\n", mln.Addr())
		}
	}
	// Errors and notes the TUI would hide go to stderr once it has ended.
	var notes []string
	var running atomic.Pointer[broker.Broker]
	// Publishes in the tap get broker.route.* fields.
	f.stage = func(next func(*decode.Unit)) unitStage {
		return &broker.RouteAnnotator{Next: next, Explain: func(vhost, exchange, key string, headers amqp091.Table) (state.Route, error) {
			b := running.Load()
			if b == nil {
				return state.Route{}, errors.New("the broker has not started")
			}
			return b.ExplainPublish(vhost, exchange, key, headers)
		}, Version: func() uint64 {
			if b := running.Load(); b != nil {
				return b.TopologyVersion()
			}
			return 0
		}}
	}
	logs := make(chan error, 64)
	src := func(ctx context.Context, h capture.Handler, _ func(*capture.Packet)) error {
		c := cfg
		if !bf.noTap {
			c.Tap = capture.NewSerial(h)
		}
		if headless {
			c.Log = func(msg string) { fmt.Fprintln(os.Stderr, msg) }
		} else {
			// The TUI's status line shows what the broker logs; a burst
			// it cannot show is not waited for.
			c.Log = func(msg string) {
				select {
				case logs <- errors.New(msg):
				default:
				}
			}
		}
		b, err := broker.New(c)
		if err != nil {
			ln.Close()
			return err
		}
		running.Store(b)
		if defs != nil {
			warns, err := b.LoadDefinitions(defs)
			if err != nil {
				ln.Close()
				return fmt.Errorf("--definitions %s: %w", bf.definitions, err)
			}
			for _, w := range warns {
				notes = append(notes, "broker: definitions: "+w)
			}
		}
		if mln != nil {
			srv := &http.Server{Handler: mgmt.New(mgmt.Config{Source: b, Users: b.UserStore(), Definitions: mgmtDefinitions{b}, Log: c.Log}),
				ReadHeaderTimeout: 10 * time.Second}
			go srv.Serve(mln)
			defer srv.Close()
		}
		if tln != nil {
			done := make(chan struct{})
			go func() { b.Serve(ctx, tln); close(done) }()
			defer func() { <-done }()
		}
		err = b.Serve(ctx, ln)
		if bf.exportDefs != "" {
			if data, xerr := b.ExportDefinitions(""); xerr != nil {
				notes = append(notes, "broker: --export-definitions: "+xerr.Error())
			} else if werr := os.WriteFile(bf.exportDefs, data, 0o600); werr != nil {
				notes = append(notes, "broker: --export-definitions: "+werr.Error())
			}
		}
		b.Close()
		if handed, dropped := b.TapStats(); dropped > 0 {
			// The gaps are in the units; the total says how much of the
			// session the units cover.
			notes = append(notes, fmt.Sprintf("broker: the tap's decoder fell behind: %d of %d bytes (%.1f%%) not decoded, shown as gaps",
				dropped, handed, 100*float64(dropped)/float64(max(handed, 1))))
		}
		return err
	}
	defer func() {
		for _, n := range notes {
			fmt.Fprintln(os.Stderr, n)
		}
	}()
	brokerLog := func(o *tui.Options) {
		o.Err = mergeErrs(o.Err, logs)
	}
	exportDefs := func(o *tui.Options) {
		o.ExportDefinitions = func(w io.Writer) error {
			b := running.Load()
			if b == nil {
				return errors.New("the broker has not started")
			}
			data, err := b.ExportDefinitions("")
			if err == nil {
				_, err = w.Write(data)
			}
			return err
		}
	}
	panel := func(o *tui.Options) {
		o.Broker = runningBroker{&running}
		o.Routes = runningBroker{&running}
	}
	return liveRun(f, headless, "broker "+ln.Addr().String(), w, true, src, append([]func(*tui.Options){exportDefs, brokerLog, panel}, tuiOpts...)...)
}

func brokerDefaultUsers() *auth.Store { return auth.NewDefaultStore() }

// mgmtDefinitions gives the management API the broker's definitions.
type mgmtDefinitions struct{ b *broker.Broker }

func (d mgmtDefinitions) ExportDefinitions(vhost string) ([]byte, error) {
	return d.b.ExportDefinitions(vhost)
}

func (d mgmtDefinitions) ImportDefinitions(data []byte) error {
	_, err := d.b.LoadDefinitions(data)
	return err
}

// mergeErrs passes on what a and b deliver; it closes when a does (the
// source's end).
func mergeErrs(a <-chan error, b <-chan error) <-chan error {
	out := make(chan error, 16)
	go func() {
		defer close(out)
		for {
			select {
			case err, ok := <-a:
				if !ok {
					return
				}
				out <- err
			case err := <-b:
				out <- err
			}
		}
	}()
	return out
}

// runningBroker gives the TUI the broker once it runs: the broker is
// made inside the TUI's source, after the TUI has started, so until then
// every snapshot is empty.
type runningBroker struct {
	p *atomic.Pointer[broker.Broker]
}

var (
	_ state.Source         = runningBroker{}
	_ state.RouteExplainer = (*broker.Broker)(nil)
)

func (r runningBroker) Overview() state.Overview {
	if b := r.p.Load(); b != nil {
		return b.Overview()
	}
	return state.Overview{}
}

func (r runningBroker) Connections() []state.Connection {
	if b := r.p.Load(); b != nil {
		return b.Connections()
	}
	return nil
}

func (r runningBroker) Channels() []state.Channel {
	if b := r.p.Load(); b != nil {
		return b.Channels()
	}
	return nil
}

func (r runningBroker) Exchanges() []state.Exchange {
	if b := r.p.Load(); b != nil {
		return b.Exchanges()
	}
	return nil
}

func (r runningBroker) Queues() []state.Queue {
	if b := r.p.Load(); b != nil {
		return b.Queues()
	}
	return nil
}

func (r runningBroker) Consumers() []state.Consumer {
	if b := r.p.Load(); b != nil {
		return b.Consumers()
	}
	return nil
}

func (r runningBroker) Bindings() []state.Binding {
	if b := r.p.Load(); b != nil {
		return b.Bindings()
	}
	return nil
}

func (r runningBroker) Users() []state.User {
	if b := r.p.Load(); b != nil {
		return b.Users()
	}
	return nil
}

func (r runningBroker) VHosts() []state.VHost {
	if b := r.p.Load(); b != nil {
		return b.VHosts()
	}
	return nil
}

func (r runningBroker) Permissions() []state.Permission {
	if b := r.p.Load(); b != nil {
		return b.Permissions()
	}
	return nil
}

func (r runningBroker) CloseConnection(name, reason string) bool {
	if b := r.p.Load(); b != nil {
		return b.CloseConnection(name, reason)
	}
	return false
}

func (r runningBroker) ExplainRoute(vhost, exchange, routingKey string, headers map[string]any) (state.Route, error) {
	if b := r.p.Load(); b != nil {
		return b.ExplainRoute(vhost, exchange, routingKey, headers)
	}
	return state.Route{}, errors.New("wiretap: the broker has not started")
}
