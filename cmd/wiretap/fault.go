package main

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/proxy"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui"
)

// faultHelp is the rule grammar, for --help and the TUI's :fault.
const faultHelp = `Fault rules (--fault, repeatable; the TUI's ':fault add RULE'):
  delay DURATION [jitter DURATION] [DIR]   hold each read, e.g. delay 50ms jitter 20ms
  throttle RATE [DIR]                      at most RATE, e.g. throttle 64KiB/s
  close|reset after SIZE [DIR]             cut after SIZE forwarded, e.g. close after 10KiB
  close|reset [DIR] when FILTER            cut before the first frame FILTER matches
  drop [all] [DIR] when FILTER             do not forward the first (every) matching frame
  corrupt [all] [DIR] when FILTER          forward it with its last byte inverted
DIR is to-server, to-client or both (the default); 'on ROUTE' first (a
--listen address or its number) limits a rule to one route. close sends a
FIN to both ends, reset a TCP reset. FILTER is a display filter, e.g.
  --fault 'close when amqp.method == "basic.ack"'
Each fault injected is a "fault" unit on its connection, after the frame
it is about, and a line on stderr.`

// faultChecker vets a rule for the proxy's routes: the route it names
// exists and its filter compiles (with the error --filter gives).
func faultChecker(listens []string) func(proxy.Fault) error {
	return func(f proxy.Fault) error {
		if f.Route != "" {
			ok := false
			for i, l := range listens {
				if f.Route == l || f.Route == strconv.Itoa(i+1) {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("fault %q: no route %q: want a --listen address (%s) or its number from 1", f.Text, f.Route, strings.Join(listens, ", "))
			}
		}
		if f.When != "" {
			if _, err := filter.Compile(f.When); err != nil {
				return fmt.Errorf("fault %q: %s", f.Text, strings.TrimPrefix(err.Error(), "filter: "))
			}
		}
		return nil
	}
}

// parseFaults reads the --fault flags into a set, or a usage error.
func parseFaults(rules, listens []string) (*proxy.FaultSet, error) {
	set := proxy.NewFaultSet()
	set.Check = faultChecker(listens)
	for _, r := range rules {
		if _, err := set.Add(r); err != nil {
			return nil, usageErr("--fault: %s", strings.TrimPrefix(err.Error(), "fault "))
		}
	}
	return set, nil
}

// filterCache compiles each rule's filter once, for every connection.
type filterCache struct {
	mu sync.Mutex
	m  map[string]*filter.Filter
}

func (c *filterCache) get(expr string) *filter.Filter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.m[expr]; ok {
		return f
	}
	f, err := filter.Compile(expr)
	if err != nil {
		f = nil
	}
	if c.m == nil {
		c.m = map[string]*filter.Filter{}
	}
	c.m[expr] = f
	return f
}

// newInspector returns the proxy's Inspect: a pipeline of its own per
// connection, fed whole frames, whose units the rules' filters judge.
func newInspector(f *decodeFlags, decodeAs map[uint16]decode.Proto) func(client, server netip.AddrPort) proxy.Inspector {
	cache := &filterCache{}
	return func(client, server netip.AddrPort) proxy.Inspector {
		in := &inspector{cache: cache}
		opt := decode.DefaultOptions()
		opt.ShowSecrets = true // judged, never shown
		opt.MaxFrame, opt.MaxBuffered, opt.MaxMessage, opt.MaxDecompressed = f.maxFrame, f.maxBuffered, f.maxMessage, f.maxDecompressed
		in.pl = pipeline.New(pipeline.Config{Options: opt, DecodeAs: decodeAs, Sink: func(u *decode.Unit) {
			in.units = append(in.units, u)
		}})
		in.flow = &capture.Flow{ID: 1, A: client, B: server, SYN: true, First: time.Now()}
		return in
	}
}

type inspector struct {
	cache *filterCache
	pl    *pipeline.Pipeline
	flow  *capture.Flow
	units []*decode.Unit
}

func (in *inspector) Frame(toServer bool, frame []byte, t time.Time) {
	clear(in.units)
	in.units = in.units[:0]
	in.pl.Data(in.flow, toServer, frame, t)
}

func (in *inspector) Match(when string) (string, bool) {
	flt := in.cache.get(when)
	if flt == nil {
		return "", false
	}
	for _, u := range in.units {
		if u.Type != "gap" && flt.Match(u) {
			return u.Summary, true
		}
	}
	return "", false
}

func (in *inspector) Close() { in.pl.Close(in.flow, time.Now()) }

// faultControl is the TUI's :fault on the proxy's rules.
type faultControl struct{ set *proxy.FaultSet }

func (c faultControl) List() []string {
	var out []string
	for _, r := range c.set.Rules() {
		out = append(out, r.String())
	}
	return out
}

func (c faultControl) Set(n int, on bool) (string, error) {
	r, err := c.set.Set(n, on)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

func (c faultControl) Add(rule string) (string, error) {
	r, err := c.set.Add(rule)
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

var _ tui.FaultControl = faultControl{}
