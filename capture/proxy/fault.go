package proxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultKind is what a fault rule does to the traffic.
type FaultKind int

const (
	// FaultDelay holds each read Delay (plus up to ±Jitter) before it is
	// written on, in order.
	FaultDelay FaultKind = iota
	// FaultThrottle writes at most Rate bytes a second.
	FaultThrottle
	// FaultCloseAfter cuts the connection once Bytes bytes have been
	// forwarded in the rule's direction (both directions together for
	// FaultBoth).
	FaultCloseAfter
	// FaultCloseWhen cuts the connection at the start of the first frame
	// the filter When matches: that frame is not forwarded.
	FaultCloseWhen
	// FaultDrop does not forward a frame the filter When matches.
	FaultDrop
	// FaultCorrupt forwards a frame the filter When matches with its last
	// byte inverted (AMQP 0-9-1's frame-end octet, a PostgreSQL message's
	// last byte).
	FaultCorrupt
)

// FaultDir is the direction a fault applies to.
type FaultDir int

const (
	FaultBoth     FaultDir = iota // both directions
	FaultToServer                 // client -> server
	FaultToClient                 // server -> client
)

func (d FaultDir) String() string {
	switch d {
	case FaultToServer:
		return "to-server"
	case FaultToClient:
		return "to-client"
	}
	return "both"
}

// has reports whether the direction toward the server (toServer) or the
// client is one d applies to.
func (d FaultDir) has(toServer bool) bool {
	return d == FaultBoth || (d == FaultToServer) == toServer
}

// Fault is one fault-injection rule, as ParseFault reads it:
//
//	RULE   = [ "on" ROUTE ] ACTION
//	ACTION = "delay" DURATION [ "jitter" DURATION ] [ DIR ]
//	       | "throttle" RATE [ DIR ]
//	       | ( "close" | "reset" ) "after" SIZE [ DIR ]
//	       | ( "close" | "reset" ) [ DIR ] "when" FILTER
//	       | ( "drop" | "corrupt" ) [ "all" ] [ DIR ] "when" FILTER
//	DIR    = "to-server" | "to-client" | "both"
//	SIZE   = a count of bytes: 100, 10KiB, 1MB, 2MiB, 1GiB
//	RATE   = SIZE "/s"
//	ROUTE  = a --listen address as given, or its number from 1
//
// FILTER is a display filter, the rest of the rule. close sends an
// orderly end (FIN) to both ends, reset a TCP reset. drop and corrupt act
// on the first matching frame of each connection, or on every one with
// "all". Durations are Go's (50ms, 1.5s). The direction defaults to both.
type Fault struct {
	Kind   FaultKind
	Dir    FaultDir
	Route  string        // "" for every route
	Delay  time.Duration // FaultDelay
	Jitter time.Duration // FaultDelay: each read is delayed Delay±Jitter
	Rate   int64         // FaultThrottle: bytes a second
	Bytes  int64         // FaultCloseAfter
	Reset  bool          // FaultCloseAfter, FaultCloseWhen: a TCP reset, not a FIN
	All    bool          // FaultDrop, FaultCorrupt: every match, not the first per connection
	When   string        // FaultCloseWhen, FaultDrop, FaultCorrupt: the display filter
	// Text is the rule as it was written.
	Text string
}

// Filtered reports whether the fault acts on frames chosen by a filter,
// which needs the connection's frames found on the forwarding path.
func (f *Fault) Filtered() bool {
	return f.Kind == FaultCloseWhen || f.Kind == FaultDrop || f.Kind == FaultCorrupt
}

// ParseFault reads one rule (see [Fault]). The filter is not compiled
// here: the caller checks it with the display-filter language.
func ParseFault(s string) (Fault, error) {
	f, err := parseFault(strings.TrimSpace(s))
	if err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	f.Text = strings.Join(strings.Fields(s), " ")
	if f.When != "" {
		// The filter as written: its spaces may be inside a string.
		head, _, _ := strings.Cut(f.Text, " when ")
		f.Text = head + " when " + f.When
	}
	return f, nil
}

func parseFault(s string) (Fault, error) {
	var f Fault
	words := strings.Fields(s)
	// The filter is the rest of the rule after the word "when".
	for i, w := range words {
		if w == "when" {
			idx := wordIndex(s, i)
			f.When = strings.TrimSpace(s[idx+len("when"):])
			words = words[:i]
			if f.When == "" {
				return f, errors.New("'when' needs a display filter after it")
			}
			break
		}
	}
	if len(words) >= 2 && words[0] == "on" {
		f.Route = words[1]
		words = words[2:]
	}
	if len(words) == 0 {
		return f, errors.New("want delay, throttle, close, reset, drop or corrupt")
	}
	action, args := words[0], words[1:]
	takeDir := func() error {
		if len(args) == 0 {
			return nil
		}
		d, ok := parseDir(args[len(args)-1])
		if !ok {
			return nil
		}
		f.Dir = d
		args = args[:len(args)-1]
		return nil
	}
	rest := func() error {
		if len(args) > 0 {
			return fmt.Errorf("unexpected %q", strings.Join(args, " "))
		}
		return nil
	}
	noWhen := func() error {
		if f.When != "" {
			return fmt.Errorf("%s takes no filter ('when' is for close, reset, drop and corrupt)", action)
		}
		return nil
	}
	var err error
	switch action {
	case "delay":
		if err := noWhen(); err != nil {
			return f, err
		}
		f.Kind = FaultDelay
		takeDir()
		if len(args) == 0 {
			return f, errors.New("delay needs a duration (delay 50ms, delay 50ms jitter 20ms)")
		}
		if f.Delay, err = parseDuration(args[0]); err != nil {
			return f, err
		}
		args = args[1:]
		if len(args) >= 2 && args[0] == "jitter" {
			if f.Jitter, err = parseDuration(args[1]); err != nil {
				return f, err
			}
			if f.Jitter > f.Delay {
				return f, fmt.Errorf("jitter %v is more than the delay %v", f.Jitter, f.Delay)
			}
			args = args[2:]
		}
		return f, rest()
	case "throttle":
		if err := noWhen(); err != nil {
			return f, err
		}
		f.Kind = FaultThrottle
		takeDir()
		if len(args) == 0 {
			return f, errors.New("throttle needs a rate (throttle 64KiB/s)")
		}
		num, ok := strings.CutSuffix(args[0], "/s")
		if !ok {
			return f, fmt.Errorf("rate %q: want a size a second, such as 64KiB/s", args[0])
		}
		if f.Rate, err = parseSize(num); err != nil {
			return f, err
		}
		if f.Rate <= 0 {
			return f, fmt.Errorf("rate %q: must be more than 0", args[0])
		}
		args = args[1:]
		return f, rest()
	case "close", "reset":
		f.Reset = action == "reset"
		if f.When != "" {
			f.Kind = FaultCloseWhen
			takeDir()
			return f, rest()
		}
		f.Kind = FaultCloseAfter
		takeDir()
		if len(args) != 2 || args[0] != "after" {
			return f, fmt.Errorf("want '%s after SIZE' or '%s when FILTER'", action, action)
		}
		if f.Bytes, err = parseSize(args[1]); err != nil {
			return f, err
		}
		return f, nil
	case "drop", "corrupt":
		f.Kind = FaultDrop
		if action == "corrupt" {
			f.Kind = FaultCorrupt
		}
		if f.When == "" {
			return f, fmt.Errorf("%s needs 'when FILTER': which frame to %s", action, action)
		}
		if len(args) > 0 && args[0] == "all" {
			f.All = true
			args = args[1:]
		}
		takeDir()
		return f, rest()
	}
	return f, fmt.Errorf("unknown action %q: want delay, throttle, close, reset, drop or corrupt", action)
}

// wordIndex is the byte offset of the i-th whitespace-separated word of s.
func wordIndex(s string, i int) int {
	off := 0
	for n := 0; ; n++ {
		for off < len(s) && (s[off] == ' ' || s[off] == '\t') {
			off++
		}
		if n == i {
			return off
		}
		for off < len(s) && s[off] != ' ' && s[off] != '\t' {
			off++
		}
	}
}

func parseDir(s string) (FaultDir, bool) {
	switch s {
	case "to-server", "client->server", "up":
		return FaultToServer, true
	case "to-client", "server->client", "down":
		return FaultToClient, true
	case "both":
		return FaultBoth, true
	}
	return 0, false
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want one such as 50ms or 1.5s", s)
	}
	return d, nil
}

// parseSize reads 100, 10KiB, 10KB (1,000s), 2MiB, 1GiB.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mul := s, int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mul = n, u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v*float64(mul) > 1<<62 {
		return 0, fmt.Errorf("size %q: want bytes such as 100, 10KiB or 1MB", s)
	}
	return int64(v * float64(mul)), nil
}

// FaultRule is a rule in a [FaultSet]: the fault, its number and whether
// it is on.
type FaultRule struct {
	Fault
	// N numbers the rules from 1 in order of addition.
	N    int
	on   atomic.Bool
	hits atomic.Int64
}

// On reports whether the rule is in force.
func (r *FaultRule) On() bool { return r.on.Load() }

// Hits counts the faults the rule injected (a delayed or throttled
// connection direction counts once).
func (r *FaultRule) Hits() int64 { return r.hits.Load() }

// String is the rule as listed: number, state, text, hits.
func (r *FaultRule) String() string {
	state := "on"
	if !r.On() {
		state = "off"
	}
	return fmt.Sprintf("%d [%s] %s (%d injected)", r.N, state, r.Text, r.Hits())
}

// FaultSet is the fault rules of a proxy; they may be added and turned on
// and off while it runs (the TUI's :fault). Reading the rules is one
// atomic load, so the forwarding path pays nothing for a set that is
// empty or whose rules are off.
type FaultSet struct {
	mu    sync.Mutex // serialises changes
	rules atomic.Pointer[[]*FaultRule]
	// active counts the rules that are on, for the fast path.
	active atomic.Int32
	// Check, when set, vets a rule before Add takes it (the caller's
	// compile of the filter, the route named): its error is Add's.
	Check func(Fault) error
}

// NewFaultSet returns a set holding faults, each on.
func NewFaultSet(faults ...Fault) *FaultSet {
	s := &FaultSet{}
	for _, f := range faults {
		s.add(f)
	}
	return s
}

// Rules returns the rules in order of addition.
func (s *FaultSet) Rules() []*FaultRule {
	if s == nil {
		return nil
	}
	if p := s.rules.Load(); p != nil {
		return *p
	}
	return nil
}

// Add parses a rule and adds it, on; it returns the rule.
func (s *FaultSet) Add(rule string) (*FaultRule, error) {
	f, err := ParseFault(rule)
	if err != nil {
		return nil, err
	}
	if s.Check != nil {
		if err := s.Check(f); err != nil {
			return nil, err
		}
	}
	return s.add(f), nil
}

func (s *FaultSet) add(f Fault) *FaultRule {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.Rules()
	r := &FaultRule{Fault: f, N: len(old) + 1}
	r.on.Store(true)
	rules := append(append([]*FaultRule(nil), old...), r)
	s.rules.Store(&rules)
	s.active.Add(1)
	return r
}

// Set turns rule n (from 1) on or off.
func (s *FaultSet) Set(n int, on bool) (*FaultRule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rules := s.Rules()
	if n < 1 || n > len(rules) {
		if len(rules) == 0 {
			return nil, fmt.Errorf("fault %d: there are no rules (add one: :fault add RULE)", n)
		}
		return nil, fmt.Errorf("fault %d: want 1 to %d", n, len(rules))
	}
	r := rules[n-1]
	if r.on.Swap(on) != on {
		if on {
			s.active.Add(1)
		} else {
			s.active.Add(-1)
		}
	}
	return r, nil
}

// anyOn reports whether some rule is on (a nil set has none).
func (s *FaultSet) anyOn() bool { return s != nil && s.active.Load() > 0 }

// forRoute reports whether rule r applies to route i (listen address l).
func (r *FaultRule) forRoute(i int, l string) bool {
	return r.Route == "" || r.Route == l || r.Route == strconv.Itoa(i+1)
}

// jittered is d ± up to j, drawn uniformly.
func jittered(d, j time.Duration) time.Duration {
	if j <= 0 {
		return d
	}
	return d - j + time.Duration(rand.Int64N(int64(2*j)+1))
}
