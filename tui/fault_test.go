package tui

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// fakeFaults is a FaultControl over plain rules.
type fakeFaults struct {
	rules []string
	on    []bool
}

func (f *fakeFaults) line(i int) string {
	state := "on"
	if !f.on[i] {
		state = "off"
	}
	return fmt.Sprintf("%d [%s] %s (0 injected)", i+1, state, f.rules[i])
}

func (f *fakeFaults) List() []string {
	var out []string
	for i := range f.rules {
		out = append(out, f.line(i))
	}
	return out
}

func (f *fakeFaults) Set(n int, on bool) (string, error) {
	if n < 1 || n > len(f.rules) {
		return "", fmt.Errorf("fault %d: want 1 to %d", n, len(f.rules))
	}
	f.on[n-1] = on
	return f.line(n - 1), nil
}

func (f *fakeFaults) Add(rule string) (string, error) {
	if strings.HasPrefix(rule, "bad") {
		return "", errors.New(`fault "bad": unknown action "bad"`)
	}
	f.rules = append(f.rules, rule)
	f.on = append(f.on, true)
	return f.line(len(f.rules) - 1), nil
}

func (d *driver) command(line string) {
	d.keys(":")
	d.typeText(line)
	d.keys("enter")
}

// TestFaultCommand: :fault lists the proxy's rules, turns them off and
// on, adds one and says why a bad one is refused; other sources say it
// is for the proxy.
func TestFaultCommand(t *testing.T) {
	ff := &fakeFaults{rules: []string{"delay 50ms"}, on: []bool{true}}
	d := newDriver(t, Options{Title: "proxy 127.0.0.1:15672", Live: true, Faults: ff}, 160, 30)
	d.command("fault")
	d.contains("faults: 1 [on] delay 50ms (0 injected)")
	d.command("fault off 1")
	d.contains("fault 1 [off] delay 50ms")
	if ff.on[0] {
		t.Fatal(":fault off 1 left the rule on")
	}
	d.command("fault on 1")
	d.contains("fault 1 [on] delay 50ms")
	d.command(`fault add drop when amqp.method == "basic.ack"`)
	d.contains(`fault added: 2 [on] drop when amqp.method == "basic.ack"`)
	d.command("fault add bad rule")
	d.contains(`unknown action "bad"`)
	d.command("fault off 7")
	d.contains("fault 7: want 1 to 2")
	d.command("fault off x")
	d.contains("want a rule number")
	if len(ff.rules) != 2 {
		t.Fatalf("rules %v", ff.rules)
	}

	other := withUnits(t, 3, 160, 30)
	other.command("fault")
	other.contains("fault injection is for the proxy")
}

// TestConnRowShowsProxyEvents: a connection's row shows how many faults
// were injected on it and what the proxy said last; a connection the
// proxy could not complete shows why.
func TestConnRowShowsProxyEvents(t *testing.T) {
	c1 := &decode.Conn{ID: 1, Client: netip.MustParseAddrPort("127.0.0.1:40000"), Server: netip.MustParseAddrPort("127.0.0.1:5672"), Proto: decode.ProtoAMQP091}
	c2 := &decode.Conn{ID: 2, Client: netip.MustParseAddrPort("127.0.0.1:40001"), Server: netip.MustParseAddrPort("127.0.0.1:5672")}
	mk := func(c *decode.Conn, n int, typ, sum string) *decode.Unit {
		u := &decode.Unit{N: n, Conn: c, Proto: c.Proto, Type: typ, Summary: sum, Dir: decode.DirF}
		u.SetTime(time.Unix(1, 0))
		if typ == "fault" || typ == "proxy" {
			u.Warn("marked")
		}
		return u
	}
	d := newDriver(t, Options{Title: "proxy", Live: true}, 200, 30)
	d.feed([]*decode.Unit{
		mk(c1, 1, "basic.ack", "Basic.Ack tag=1"),
		mk(c1, 2, "fault", "fault 1 (drop when amqp.method == \"basic.ack\"): Basic.Ack tag=1 (13 bytes) not forwarded to the server"),
		mk(c2, 3, "proxy", "connection to the upstream failed: connection refused"),
	}, false)
	// In the connections pane, on each connection's own row.
	rows := map[string]string{"127.0.0.1:40000": "faults 1 fault 1 (drop when", "127.0.0.1:40001": "connection to the upstream failed"}
	for addr, want := range rows {
		found := false
		for _, l := range strings.Split(d.screen(), "\n") {
			if strings.Contains(l, addr) && strings.Contains(l, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no row of %s says %q:\n%s", addr, want, d.screen())
		}
	}
}
