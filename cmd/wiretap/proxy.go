package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
	"github.com/wiretap-dev/wiretap/tui"
)

func init() { extraCommands = append(extraCommands, newProxyCmd) }

func newProxyCmd() *cobra.Command {
	var (
		f        decodeFlags
		listens  []string
		ups      []string
		certs    []string
		keys     []string
		w        writeFlags
		headless bool
		decBuf   int
	)
	cmd := &cobra.Command{
		Use:   "proxy --listen ADDR --upstream ADDR [--tls-cert F --tls-key F] [-w OUT.pcapng] [--headless]",
		Short: "Sit in front of a server as a TCP proxy and decode what passes",
		Long: `proxy accepts clients on --listen, connects each to --upstream and decodes the
traffic both ways. --listen/--upstream may be repeated in pairs to proxy
several servers at once. With --tls-cert and --tls-key the proxy
terminates TLS toward its clients; an upstream written tls://host:port is
reached over TLS. No privileges are needed.`,
		Example: `  wiretap proxy --listen 127.0.0.1:15672 --upstream 127.0.0.1:5672
  wiretap proxy --listen :6432 --upstream db:5432 --headless --format pqtrace`,
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
			if decBuf <= 0 {
				return usageErr("--decode-buffer %d: must be positive", decBuf)
			}
			routes := make([]proxy.Route, len(listens))
			for i := range listens {
				routes[i] = proxy.Route{Listen: listens[i], Upstream: ups[i]}
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
			src := func(ctx context.Context, h capture.Handler, _ func(*capture.Packet)) error {
				p := &proxy.Proxy{Routes: routes, Handler: h, Log: logf, DecodeBuffer: decBuf}
				return p.Serve(ctx)
			}
			proxyLog := func(o *tui.Options) { o.Err = mergeErrs(o.Err, logs) }
			return liveRun(&f, headless, "proxy "+strings.Join(listens, ","), w, true, src, proxyLog)
		},
	}
	cmd.Flags().StringArrayVar(&listens, "listen", nil, "address to accept clients on (repeatable)")
	cmd.Flags().StringArrayVar(&ups, "upstream", nil, "server to forward to, host:port or tls://host:port (repeatable)")
	cmd.Flags().StringArrayVar(&certs, "tls-cert", nil, "PEM certificate to terminate TLS with")
	cmd.Flags().StringArrayVar(&keys, "tls-key", nil, "PEM key for --tls-cert")
	w.register(cmd, "record the proxied traffic to this pcapng file as it passes (synthesised TCP)")
	cmd.Flags().BoolVar(&headless, "headless", false, "print instead of opening the TUI")
	cmd.Flags().IntVar(&decBuf, "decode-buffer", capture.DefaultDecoupledBuffer, "bytes held for a decoder that is behind the traffic; past them it is given gaps (\"N bytes not decoded: decoder behind\") and forwarding goes on")
	f.register(cmd)
	return cmd
}
