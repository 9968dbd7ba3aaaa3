package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
	"github.com/wiretap-dev/wiretap/tui"
)

func init() { extraCommands = append(extraCommands, newProxyCmd) }

func newProxyCmd() *cobra.Command {
	var (
		f         decodeFlags
		listens   []string
		ups       []string
		certs     []string
		keys      []string
		w         writeFlags
		headless  bool
		decBuf    int
		memory    memoryFlag
		upTLS     string
		noInt     bool
		faults    []string
		decCPU    string
		inProcess bool
	)
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR --upstream ADDR [--tls-cert F --tls-key F] [--fault RULE] [-w OUT.pcapng] [--headless]",
		Short: "Sit in front of a server as a TCP proxy and decode what passes",
		Long: `proxy accepts clients on --listen, connects each to --upstream and decodes the
traffic both ways. --listen/--upstream may be repeated in pairs to proxy
several servers at once. No privileges are needed.

TLS is intercepted, so that encrypted sessions are decoded in clear: the
proxy speaks each protocol's own TLS start (PostgreSQL's SSLRequest,
answered S, and a GSSENCRequest answered N; a ClientHello from the first
byte for AMQPS or PostgreSQL 17's direct TLS) and terminates it with
--tls-cert/--tls-key, or else with a certificate issued by wiretap's own
CA, made on first use ('wiretap ca' shows where it is, to trust it).
--no-intercept passes TLS through untouched instead. Toward the server,
--upstream-tls auto sends the proxy's own SSLRequest for a PostgreSQL
client that asked for TLS and uses TLS when the server accepts; an
upstream written tls://host:port is reached over TLS.

The proxy is two processes: the one started forwards, and a second one,
the same binary, decodes and prints or runs the TUI, at the lowest
priority (--decode-cpu), so that neither decoding nor the screen can
delay the traffic.

Connections the proxy could not complete (an upstream that refused, a TLS
handshake that failed) and resets are units of type "proxy" on their
connection, and lines on stderr (the TUI's status line).

--fault injects faults, toxiproxy-style, to see how clients meet them.
Delays, throttles and "close after" never wait for decoding. A rule with a
filter must judge a frame before it leaves: on its route the proxy finds
each frame with the protocol's framing (AMQP 0-9-1 and 1.0 frame sizes,
PostgreSQL message lengths), decodes it with a decoder of its own and holds
it until it is whole; other routes are not slowed.

` + faultHelp + `

In the TUI, ':fault' lists the rules, ':fault off N' and ':fault on N'
toggle them live and ':fault add RULE' adds one (a rule with a filter added
live applies to connections accepted after it).`,
		Example: `  wiretap proxy --listen 127.0.0.1:15672 --upstream 127.0.0.1:5672
  wiretap proxy --listen :6432 --upstream db:5432 --headless --format pqtrace
  wiretap proxy --listen :15672 --upstream 127.0.0.1:5672 --fault 'delay 50ms jitter 20ms to-client'
  wiretap proxy --listen :15672 --upstream 127.0.0.1:5672 --fault 'close when amqp.method == "basic.ack"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(listens) == 0 || len(listens) != len(ups) {
				return usageErr("proxy: give --listen and --upstream in pairs")
			}
			if len(certs) != len(keys) || (len(certs) != 0 && len(certs) != len(listens) && len(certs) != 1) {
				return usageErr("proxy: give --tls-cert and --tls-key together, once or once per --listen")
			}
			if err := f.check(); err != nil {
				return err
			}
			budget, err := memory.option()
			if err != nil {
				return err
			}
			if decBuf <= 0 {
				return usageErr("--decode-buffer %d: must be positive", decBuf)
			}
			switch upTLS {
			case "auto", "require", "disable":
			default:
				return usageErr("--upstream-tls %q: want auto, require or disable", upTLS)
			}
			switch decCPU {
			case "spare", "all":
			default:
				return usageErr("--decode-cpu %q: want spare or all", decCPU)
			}
			set, err := parseFaults(faults, listens)
			if err != nil {
				return err
			}
			decodeAs, _ := f.decodeAsMap()
			routes := make([]proxy.Route, len(listens))
			for i := range listens {
				routes[i] = proxy.Route{Listen: listens[i], Upstream: ups[i], UpstreamTLS: upTLS}
				if len(certs) == 1 {
					routes[i].TLSCert, routes[i].TLSKey = certs[0], keys[0]
				} else if len(certs) > 0 {
					routes[i].TLSCert, routes[i].TLSKey = certs[i], keys[i]
				}
			}
			// Failed and reset connections: a line on stderr, or in the
			// TUI's status line (a burst it cannot show is not waited for).
			logs := make(chan error, 64)
			logf := func(msg string) { fmt.Fprintln(os.Stderr, msg) }
			if !headless {
				logf = func(msg string) {
					select {
					case logs <- errors.New(msg):
					default:
					}
				}
			}
			title := "proxy " + strings.Join(listens, ",")
			if isDecoderProcess() {
				return runDecoder(&f, headless, title, budget, decCPU == "all")
			}
			if !inProcess {
				p := &proxy.Proxy{Routes: routes, DecodeBuffer: decBuf, NoIntercept: noInt,
					Faults: set, Inspect: newInspector(&f, decodeAs)}
				// What the decoding process would refuse is refused here,
				// before anything listens.
				if f.filter != "" {
					if _, err := compileFilter(f.filter); err != nil {
						return err
					}
				}
				if w.redact && w.path == "" {
					return usageErr("--redact: it applies to the -w file; give -w FILE")
				}
				if !headless {
					if err := needTerminal(); err != nil {
						return err
					}
				}
				return runForwarder(p, set, headless, w, decCPU == "all")
			}
			var running atomic.Pointer[proxy.Proxy]
			src := func(ctx context.Context, h capture.Handler, _ func(*capture.Packet)) error {
				p := &proxy.Proxy{Routes: routes, Handler: h, Log: logf, DecodeBuffer: decBuf, NoIntercept: noInt,
					Faults: set, Inspect: newInspector(&f, decodeAs), DecodeAnyCPU: decCPU == "all"}
				running.Store(p)
				return p.Serve(ctx)
			}
			// After the run (and the TUI) is over: how much of the traffic
			// the units cover.
			defer func() {
				if p := running.Load(); p != nil {
					if note := decoderNote(p.DecodeStats()); note != "" {
						fmt.Fprintln(os.Stderr, note)
					}
				}
			}()
			proxyLog := func(o *tui.Options) {
				o.Err = mergeErrs(o.Err, logs)
				o.Faults = faultControl{set}
			}
			return liveRun(&f, headless, title, w, true, src, proxyLog, budget)
		},
	}
	cmd.Flags().StringArrayVar(&listens, "listen", nil, "address to accept clients on (repeatable)")
	cmd.Flags().StringArrayVar(&ups, "upstream", nil, "server to forward to, host:port or tls://host:port (repeatable)")
	cmd.Flags().StringArrayVar(&certs, "tls-cert", nil, "PEM certificate to terminate TLS with")
	cmd.Flags().StringArrayVar(&keys, "tls-key", nil, "PEM key for --tls-cert")
	cmd.Flags().StringVar(&upTLS, "upstream-tls", "auto", "TLS toward the server for a PostgreSQL client that asked for it: auto (ask the server), require, disable")
	cmd.Flags().StringArrayVar(&faults, "fault", nil, "inject a fault (repeatable): delay, throttle, close/reset after SIZE or when FILTER, drop/corrupt when FILTER; see above")
	cmd.Flags().BoolVar(&noInt, "no-intercept", false, "pass TLS through untouched (undecoded) instead of terminating it with wiretap's CA")
	w.register(cmd, "record the proxied traffic to this pcapng file as it passes (synthesised TCP)")
	cmd.Flags().BoolVar(&headless, "headless", false, "print instead of opening the TUI")
	cmd.Flags().IntVar(&decBuf, "decode-buffer", capture.DefaultDecoupledBuffer, "bytes held for a decoder that is behind the traffic; past them it is given gaps (\"N bytes not decoded: decoder behind\") and forwarding goes on")
	cmd.Flags().StringVar(&decCPU, "decode-cpu", "spare", "CPU time the decoding process may take: spare (SCHED_IDLE, nice 19, a session of its own: what the server, the clients and the forwarding leave; it falls behind, with gaps, on a busy machine) or all (the default priority: as much as it needs, taken from the traffic)")
	cmd.Flags().BoolVar(&inProcess, "decode-in-process", false, "decode in the forwarding process, as before the split (for comparisons)")
	cmd.Flags().MarkHidden("decode-in-process")
	memory.register(cmd)
	f.register(cmd)
	return cmd
}

// decoderNote is the end-of-run line of a proxy whose decoder fell
// behind, "" when it decoded everything.
func decoderNote(handed, dropped int64) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf("proxy: the decoder fell behind: %d of %d bytes (%.1f%%) not decoded, shown as gaps",
		dropped, handed, 100*float64(dropped)/float64(max(handed, 1)))
}
