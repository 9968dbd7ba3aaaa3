package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	amqp "github.com/rabbitmq/amqp091-go"
)

// faultUnit is a JSON unit as the fault tests read it.
type faultUnit struct {
	N        int             `json:"n"`
	Conn     int             `json:"conn"`
	Dir      string          `json:"dir"`
	Type     string          `json:"type"`
	Summary  string          `json:"summary"`
	Fields   json.RawMessage `json:"fields"`
	Warnings []string        `json:"warnings"`
	Error    string          `json:"error"`
}

func jsonUnits(t *testing.T, out string) []faultUnit {
	t.Helper()
	var us []faultUnit
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var u faultUnit
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		us = append(us, u)
	}
	return us
}

// find returns the index of the first unit from i on that ok accepts, or -1.
func find(us []faultUnit, i int, ok func(u faultUnit) bool) int {
	for ; i < len(us); i++ {
		if ok(us[i]) {
			return i
		}
	}
	return -1
}

func isType(typ string) func(faultUnit) bool {
	return func(u faultUnit) bool { return u.Type == typ }
}

func faultSaying(s string) func(faultUnit) bool {
	return func(u faultUnit) bool {
		return u.Type == "fault" && strings.Contains(u.Summary, s) && len(u.Warnings) > 0 && u.Warnings[0] == "fault injected by the proxy"
	}
}

// proxyJSON runs the proxy in JSON in front of upstream with more flags.
func proxyJSON(t *testing.T, upstream string, args ...string) (string, *exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	listen := freePort(t)
	cmd, out, errs := startProxy(t, t.TempDir(), listen, append([]string{"--upstream", upstream, "--format", "json"}, args...)...)
	return listen, cmd, out, errs
}

func dump(us []faultUnit) string {
	var b strings.Builder
	for _, u := range us {
		fmt.Fprintf(&b, "%d c%d %s %s: %s %v\n", u.N, u.Conn, u.Dir, u.Type, u.Summary, u.Warnings)
	}
	return b.String()
}

// TestFaultRulesRejected: a bad rule is a usage error (status 2) naming
// the rule and what is wrong, as a bad --filter is.
func TestFaultRulesRejected(t *testing.T) {
	for rule, want := range map[string]string{
		"dlay 5ms":                               `unknown action "dlay"`,
		"delay":                                  "delay needs a duration",
		"delay 5 parsecs":                        `duration "5"`,
		"delay 10ms jitter 20ms":                 "jitter 20ms is more than the delay 10ms",
		"throttle 5KiB":                          `rate "5KiB": want a size a second`,
		"throttle 0/s":                           "must be more than 0",
		"close after":                            "want 'close after SIZE' or 'close when FILTER'",
		"close after lots":                       `size "lots"`,
		"drop amqp.method":                       "drop needs 'when FILTER'",
		"drop when":                              "'when' needs a display filter",
		"drop when amqp.foo == 1":                `unknown field "amqp.foo"`,
		"delay 5ms when amqp.method":             "delay takes no filter",
		"on 9 delay 5ms":                         `no route "9"`,
		"delay 5ms sideways":                     `unexpected "sideways"`,
		"corrupt all up down when frame.len > 1": `unexpected "up"`,
	} {
		_, stderr, code, _ := runWiretap(t, "proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--headless", "--fault", rule)
		if code != 2 || !strings.Contains(stderr, "--fault: ") || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--fault %q: exit %d, stderr %q; want 2 and one line with %q", rule, code, stderr, want)
		}
	}
}

// TestDecodeCPURejected: --decode-cpu takes spare or all; anything else
// is a usage error (status 2) in one line.
func TestDecodeCPURejected(t *testing.T) {
	_, stderr, code, _ := runWiretap(t, "proxy", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--headless", "--decode-cpu", "most")
	if code != 2 || !strings.Contains(stderr, `--decode-cpu "most": want spare or all`) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--decode-cpu most: exit %d, stderr %q; want 2 and one line naming the value", code, stderr)
	}
}

// pgxConfig parses the PostgreSQL peer's URL pointed at addr; cancel
// makes a timed-out query send a CancelRequest at once (pgx's reaction
// the delay test looks for), giving up on the connection deadline later.
func pgxConfig(t *testing.T, addr string, cancel bool, deadline time.Duration) *pgx.ConnConfig {
	t.Helper()
	pg, _ := pgPeer(t)
	cfg, err := pgx.ParseConfig(via(pg, addr))
	if err != nil {
		t.Fatal(err)
	}
	if cancel {
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, CancelRequestDelay: 0, DeadlineDelay: deadline}
		}
	}
	return cfg
}

// TestFaultDelayPgx: answers to the client delayed 600 ms; pgx, whose
// query may take 150 ms, gives up and sends a CancelRequest on a
// connection of its own through the proxy. The units show the delay
// where it began, then the query, then the cancel.
func TestFaultDelayPgx(t *testing.T) {
	_, pgAddr := pgPeer(t)
	listen, proxy, out, errs := proxyJSON(t, pgAddr, "--fault", "delay 600ms jitter 100ms to-client")
	cfg := pgxConfig(t, listen, true, 10*time.Second)
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect through the delaying proxy: %v\n%s", err, errs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	var v int
	qerr := conn.QueryRow(ctx, "select 41 + 1").Scan(&v)
	cancel()
	conn.Close(context.Background())
	if qerr == nil {
		t.Logf("the query beat its deadline (%d): the machine was slow to time out", v)
	}
	waitFor(t, "the CancelRequest in the output", func() bool { return strings.Contains(out.String(), `"type":"CancelRequest"`) })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	f := find(us, 0, faultSaying("what goes to the client is delayed 600ms ± 100ms, from here on"))
	q := find(us, 0, func(u faultUnit) bool { return u.Type == "Parse" || u.Type == "Query" })
	c := find(us, 0, isType("CancelRequest"))
	if f < 0 || q < 0 || c < 0 || us[c].Conn == us[q].Conn || f > q {
		t.Fatalf("want the delay's fault unit, the query, and pgx's CancelRequest on a connection of its own:\n%s", dump(us))
	}
	if us[f].Dir != "B" || us[f].Conn != us[q].Conn {
		t.Errorf("the delay is not on the query's connection, server to client: %+v", us[f])
	}
	if !strings.Contains(errs.String(), "fault 1 (delay 600ms jitter 100ms to-client): what goes to the client is delayed") {
		t.Errorf("stderr does not say the fault: %s", errs.String())
	}
}

// TestFaultThrottlePgx: a 40 kB row throttled to 4 KiB/s toward the
// client; pgx's query times out after 300 ms and pgx sends a
// CancelRequest: the units show the throttle, the query and the cancel.
func TestFaultThrottlePgx(t *testing.T) {
	_, pgAddr := pgPeer(t)
	listen, proxy, out, errs := proxyJSON(t, pgAddr, "--fault", "throttle 4KiB/s to-client")
	conn, err := pgx.ConnectConfig(context.Background(), pgxConfig(t, listen, true, time.Second))
	if err != nil {
		t.Fatalf("connect through the throttling proxy: %v\n%s", err, errs.String())
	}
	defer conn.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	var s string
	qerr := conn.QueryRow(ctx, "select repeat('x', 40000)").Scan(&s)
	cancel()
	if qerr == nil || !errors.Is(qerr, context.DeadlineExceeded) && !pgconn.Timeout(qerr) {
		t.Fatalf("a 40 kB row at 4 KiB/s came in 300 ms: %v", qerr)
	}
	waitFor(t, "pgx's CancelRequest", func() bool { return strings.Contains(out.String(), `"type":"CancelRequest"`) })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	f := find(us, 0, faultSaying("what goes to the client is throttled to 4096 bytes/s, from here on"))
	if f < 0 || us[f].Dir != "B" {
		t.Fatalf("no throttle fault unit toward the client:\n%s", dump(us))
	}
	// The client's side of the story: its query, and nothing decoded of
	// the 40 kB row (pgx hung up long before it could pass).
	if find(us, 0, func(u faultUnit) bool { return u.Type == "Parse" && strings.Contains(u.Summary, "repeat") }) < 0 {
		t.Errorf("the query is not in the units:\n%s", dump(us))
	}
	// pgx gave up before the row was through and asked the server to
	// cancel the query, on a connection of its own.
	if c := find(us, f, isType("CancelRequest")); c < 0 || us[c].Conn == us[f].Conn {
		t.Errorf("want pgx's CancelRequest after the throttle:\n%s", dump(us))
	}
}

// TestFaultCloseAfterAMQP: the connection is cut (FIN to both ends) once
// 2 KiB have gone to the server; amqp091-go, publishing, is told its
// connection closed and dials again through the proxy: the units show the
// cut on the first connection and the second connection's handshake.
func TestFaultCloseAfterAMQP(t *testing.T) {
	rabbit, addr := amqpPeer(t)
	listen, proxy, out, errs := proxyJSON(t, addr, "--fault", "close after 2KiB to-server")
	conn, err := amqp.Dial(via(rabbit, listen))
	if err != nil {
		t.Fatalf("dial: %v\n%s", err, errs.String())
	}
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(strings.Repeat("p", 100))
	for i := 0; i < 100 && !conn.IsClosed(); i++ {
		ch.Publish("", "wiretap.fault.nowhere", false, false, amqp.Publishing{Body: body})
	}
	select {
	case e := <-closed:
		t.Logf("amqp091-go was told: %v", e)
	case <-time.After(30 * time.Second):
		t.Fatal("amqp091-go was never told its connection closed")
	}
	// The client's reaction: a new connection.
	again, err := amqp.Dial(via(rabbit, listen))
	if err != nil {
		t.Fatalf("redial: %v", err)
	}
	again.Close()
	waitFor(t, "the second connection's close-ok", func() bool { return strings.Count(out.String(), `"connection.close-ok"`) >= 1 })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	f := find(us, 0, faultSaying("connection closed (FIN to both ends) after 2048 bytes forwarded (to-server)"))
	if f < 0 || find(us, 0, func(u faultUnit) bool { return u.Conn == us[f].Conn && u.Type == "channel.open" }) < 0 {
		t.Fatalf("no close-after fault on the publishing connection:\n%s", dump(us))
	}
	if find(us, f, func(u faultUnit) bool { return u.Conn > us[f].Conn && u.Type == "connection.start-ok" }) < 0 {
		t.Errorf("the client's second connection is not in the units after the cut:\n%s", dump(us))
	}
	if !strings.Contains(errs.String(), "after 2048 bytes forwarded") {
		t.Errorf("stderr: %s", errs.String())
	}
}

// TestFaultCloseWhenPika: pika consumes a message and acks it; the proxy
// cuts the connection just before the ack reaches RabbitMQ. pika loses
// its connection, connects again and is given the message again,
// redelivered: the units show the fault in place of the ack, and the
// redelivery on the second connection.
func TestFaultCloseWhenPika(t *testing.T) {
	rabbit, addr := amqpPeer(t)
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import pika").Run(); err != nil {
		needPeer(t, "no pika for %s: %v", py, err)
	}
	listen, proxy, out, errs := proxyJSON(t, addr, "--fault", `close when amqp.method == "basic.ack"`)
	host, port, _ := net.SplitHostPort(listen)
	user := rabbit.User.Username()
	pass, _ := rabbit.User.Password()
	script := fmt.Sprintf(`
import pika, sys
params = pika.ConnectionParameters(host=%q, port=%s, credentials=pika.PlainCredentials(%q, %q))
q = "wiretap.fault.pika"
c = pika.BlockingConnection(params)
ch = c.channel()
ch.queue_delete(q)
ch.queue_declare(q)
ch.basic_publish("", q, b"ack-me")
m, props, body = ch.basic_get(q)
try:
    ch.basic_ack(m.delivery_tag)
    c.process_data_events(time_limit=5)
    ch.basic_get(q)
    print("no error")
except pika.exceptions.AMQPError as e:
    print("lost:", type(e).__name__)
c = pika.BlockingConnection(params)
ch = c.channel()
m, props, body = ch.basic_get(q, auto_ack=True)
print("again:", body.decode(), "redelivered:", m.redelivered)
ch.queue_delete(q)
c.close()
`, host, port, user, pass)
	res, err := exec.Command(py, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("pika: %v\n%s\nproxy: %s", err, res, errs.String())
	}
	if !strings.Contains(string(res), "lost:") || !strings.Contains(string(res), "again: ack-me redelivered: True") {
		t.Fatalf("pika said %s", res)
	}
	waitFor(t, "the second connection's close-ok", func() bool { return strings.Contains(out.String(), `"connection.close-ok"`) })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	ack := find(us, 0, func(u faultUnit) bool { return u.Type == "basic.ack" })
	f := find(us, 0, faultSaying("connection closed (FIN to both ends) before Basic.Ack"))
	if ack < 0 || f != ack+1 || us[f].Dir != "F" {
		t.Fatalf("want the ack then the fault that kept it from the server:\n%s", dump(us))
	}
	again := find(us, f, func(u faultUnit) bool {
		return u.Conn != us[f].Conn && u.Type == "basic.get-ok" && strings.Contains(string(u.Fields), `"redelivered":true`)
	})
	if again < 0 {
		t.Errorf("no redelivered get-ok on pika's second connection:\n%s", dump(us))
	}
}

// TestFaultDropAMQP: the first basic.ack toward the server is dropped;
// amqp091-go does not know and closes its connection; RabbitMQ puts the
// message back and a second connection gets it again, redelivered.
func TestFaultDropAMQP(t *testing.T) {
	rabbit, addr := amqpPeer(t)
	listen, proxy, out, errs := proxyJSON(t, addr, "--fault", `drop to-server when amqp.method == "basic.ack"`)
	const q = "wiretap.fault.drop"
	session := func(publish bool) amqp.Delivery {
		conn, err := amqp.Dial(via(rabbit, listen))
		if err != nil {
			t.Fatalf("dial: %v\n%s", err, errs.String())
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if publish {
			ch.QueueDelete(q, false, false, false)
			if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
				t.Fatal(err)
			}
			if err := ch.Publish("", q, false, false, amqp.Publishing{Body: []byte("drop-my-ack")}); err != nil {
				t.Fatal(err)
			}
		}
		d, ok, err := ch.Get(q, false)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		if err := d.Ack(false); err != nil {
			t.Fatal(err)
		}
		if !publish {
			ch.QueueDelete(q, false, false, false)
		}
		return d
	}
	first := session(true)
	second := session(false)
	if first.Redelivered || !second.Redelivered || string(second.Body) != "drop-my-ack" {
		t.Fatalf("first redelivered %v, second %v %q: the dropped ack should have had the message redelivered", first.Redelivered, second.Redelivered, second.Body)
	}
	waitFor(t, "both sessions in the output", func() bool { return strings.Count(out.String(), `"connection.close-ok"`) >= 2 })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	ack := find(us, 0, isType("basic.ack"))
	f := find(us, 0, faultSaying("Basic.Ack"))
	if ack < 0 || f != ack+1 || !strings.Contains(us[f].Summary, "not forwarded to the server") {
		t.Fatalf("want the ack then the fault that dropped it:\n%s", dump(us))
	}
	// The first ack of each connection, not more: the rule has no "all".
	if n := strings.Count(out.String(), "not forwarded to the server"); n != 2 {
		t.Errorf("%d acks dropped, want 1 per connection:\n%s", n, dump(us))
	}
}

// TestFaultCorruptPgx: the query's last byte (its string's terminating
// NUL) is inverted on the way to PostgreSQL, which answers with an error
// and closes the connection: the units show the fault after the Query and
// the server's ErrorResponse, and pgx reports the error.
func TestFaultCorruptPgx(t *testing.T) {
	_, pgAddr := pgPeer(t)
	listen, proxy, out, errs := proxyJSON(t, pgAddr, "--fault", `corrupt to-server when pgsql.query contains "corrupt-me"`)
	cfg := pgxConfig(t, listen, false, 0)
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, errs.String())
	}
	defer conn.Close(context.Background())
	_, qerr := conn.Exec(context.Background(), "select 'corrupt-me'")
	if qerr == nil {
		t.Fatal("the corrupted query succeeded")
	}
	t.Logf("pgx: %v", qerr)
	waitFor(t, "the server's error", func() bool { return strings.Contains(out.String(), `"type":"ErrorResponse"`) })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	q := find(us, 0, isType("Query"))
	f := find(us, 0, faultSaying("with its last byte 0x00 changed to 0xff"))
	e := find(us, 0, isType("ErrorResponse"))
	if q < 0 || f != q+1 || e < f {
		t.Fatalf("want the Query, the fault, then the server's ErrorResponse:\n%s", dump(us))
	}
}

// TestProxyEventUpstreamRefused: nothing listens upstream; amqp091-go's
// dial through the proxy fails; stderr says why and the units have a
// connection whose one unit says so.
func TestProxyEventUpstreamRefused(t *testing.T) {
	rabbit, _ := amqpPeer(t)
	dead := freePort(t)
	listen, proxy, out, errs := proxyJSON(t, dead)
	if _, err := amqp.Dial(via(rabbit, listen)); err == nil {
		t.Fatal("a dial through a proxy whose upstream is down worked")
	}
	waitFor(t, "the refusal on stderr", func() bool { return strings.Contains(errs.String(), "connection refused") })
	stopAndWait(t, proxy)
	if !strings.Contains(errs.String(), "upstream "+dead) {
		t.Errorf("stderr does not name the upstream: %s", errs.String())
	}
	us := jsonUnits(t, out.String())
	i := find(us, 0, func(u faultUnit) bool {
		return u.Type == "proxy" && strings.Contains(u.Summary, "connection to the upstream failed") && strings.Contains(u.Summary, "connection refused")
	})
	if i < 0 || us[i].Dir != "B" || len(us[i].Warnings) == 0 {
		t.Fatalf("no proxy unit for the refused connection:\n%s", dump(us))
	}
}

// TestProxyEventUpstreamDies: an upstream that answers amqp091-go's
// protocol header with half a connection.start and then dies (a reset):
// the client's dial fails, stderr says the upstream reset the connection,
// and so does a unit after the half frame.
func TestProxyEventUpstreamDies(t *testing.T) {
	rabbit, _ := amqpPeer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// Every connection is served: the proxy dials the upstream for the
	// readiness probe's connection too, which sends nothing.
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				hdr := make([]byte, 8)
				if _, err := io.ReadFull(c, hdr); err != nil {
					c.Close()
					return
				}
				c.Write([]byte{1, 0, 0, 0, 0, 1, 0, 0, 10, 0, 10}) // a connection.start, cut
				time.Sleep(100 * time.Millisecond)
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}()
		}
	}()
	listen, proxy, out, errs := proxyJSON(t, ln.Addr().String())
	if _, err := amqp.Dial(via(rabbit, listen)); err == nil {
		t.Fatal("the dial worked with an upstream that died")
	} else {
		t.Logf("amqp091-go: %v", err)
	}
	waitFor(t, "the reset on stderr", func() bool { return strings.Contains(errs.String(), "reset the connection") })
	stopAndWait(t, proxy)
	if !strings.Contains(errs.String(), "upstream "+ln.Addr().String()+" reset the connection; reset passed on to the client") {
		t.Errorf("stderr: %s", errs.String())
	}
	us := jsonUnits(t, out.String())
	hdr := find(us, 0, isType("protocol-header"))
	i := find(us, 0, func(u faultUnit) bool {
		return u.Type == "proxy" && strings.Contains(u.Summary, "the upstream reset the connection")
	})
	if hdr < 0 || i < hdr || us[i].Dir != "B" {
		t.Fatalf("want the client's header, then the proxy unit for the reset:\n%s", dump(us))
	}
}

// TestProxyEventNormalCloseWithReset: amqp091-go opens and closes a
// connection to RabbitMQ through the proxy. RabbitMQ ends every session
// with a TCP reset after connection.close-ok (its sockets linger 0); the
// proxy says so as the normal end it is, on stderr and in the unit.
func TestProxyEventNormalCloseWithReset(t *testing.T) {
	rabbit, upstream := amqpPeer(t)
	listen, proxy, out, errs := proxyJSON(t, upstream)
	c, err := amqp.Dial(via(rabbit, listen))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("", false, true, true, false, nil); err != nil {
		t.Fatal(err)
	}
	me := "client " + c.LocalAddr().String() + ":"
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// RabbitMQ 3.10 resets (an orderly FIN would say nothing, and this
	// test would have nothing to check: it waits for the reset).
	waitFor(t, "RabbitMQ's reset on stderr", func() bool { return strings.Contains(errs.String(), me+" upstream") })
	stopAndWait(t, proxy)
	for _, l := range strings.Split(errs.String(), "\n") {
		if strings.Contains(l, me) && strings.Contains(l, "reset the connection") &&
			!strings.Contains(l, "after the session's AMQP connection.close-ok, a normal end") {
			t.Errorf("a reset after a normal close reads as a fault: %s", l)
		}
	}
	us := jsonUnits(t, out.String())
	ok := find(us, 0, isType("connection.close-ok"))
	if ok < 0 {
		t.Fatalf("no connection.close-ok:\n%s", dump(us))
	}
	for _, u := range us[ok:] {
		if u.Type == "proxy" && strings.Contains(u.Summary, "reset") && !strings.Contains(u.Summary, "a normal end") {
			t.Errorf("unit after close-ok: %q", u.Summary)
		}
	}
}

// TestProxyEventTLSHandshakeFailure: an AMQPS client that verifies the
// server's certificate does not trust wiretap's CA and aborts the
// handshake: stderr and a unit say the TLS handshake failed.
func TestProxyEventTLSHandshakeFailure(t *testing.T) {
	rabbit, addr := amqpPeer(t)
	listen, proxy, out, errs := proxyJSON(t, addr)
	u := *rabbit
	u.Scheme, u.Host = "amqps", listen
	if _, err := amqp.DialTLS(u.String(), &tls.Config{ServerName: "localhost"}); err == nil {
		t.Fatal("a client that does not trust wiretap's CA completed the handshake")
	} else {
		t.Logf("amqp091-go: %v", err)
	}
	waitFor(t, "the handshake failure on stderr", func() bool { return strings.Contains(errs.String(), "TLS handshake") })
	stopAndWait(t, proxy)
	us := jsonUnits(t, out.String())
	i := find(us, 0, func(u faultUnit) bool {
		return u.Type == "proxy" && strings.Contains(u.Summary, "the client's TLS start failed: TLS handshake") && strings.Contains(u.Summary, "certificate")
	})
	if i < 0 || us[i].Dir != "F" {
		t.Fatalf("no proxy unit for the failed handshake:\n%s\nstderr: %s", dump(us), errs.String())
	}
}

// TestProxyPgxTLS: pgx with sslmode=require through the proxy, no
// certificate given: the proxy intercepts the TLS and the session is
// decoded in clear.
func TestProxyPgxTLS(t *testing.T) {
	_, pgAddr := pgPeer(t)
	listen, proxy, out, errs := proxyJSON(t, pgAddr)
	pg, _ := pgPeer(t)
	u := *pg
	q := u.Query()
	q.Set("sslmode", "require")
	u.RawQuery = q.Encode()
	u.Host = listen
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatalf("pgx sslmode=require through the proxy: %v\n%s", err, errs.String())
	}
	if conn.PgConn().Conn() == nil {
		t.Fatal("no connection")
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("pgx's connection is %T, not TLS", conn.PgConn().Conn())
	}
	var s string
	if err := conn.QueryRow(context.Background(), "select 'pgx-tls-' || 9").Scan(&s); err != nil || s != "pgx-tls-9" {
		t.Fatalf("query: %q %v", s, err)
	}
	conn.Close(context.Background())
	waitFor(t, "the session's end", func() bool { return strings.Contains(out.String(), `"type":"Terminate"`) })
	stopAndWait(t, proxy)
	if !strings.Contains(errs.String(), "PostgreSQL TLS intercepted (SSLRequest answered S)") {
		t.Errorf("stderr does not say TLS was intercepted: %s", errs.String())
	}
	us := jsonUnits(t, out.String())
	if find(us, 0, func(u faultUnit) bool { return u.Type == "Parse" && strings.Contains(u.Summary, "pgx-tls-") }) < 0 ||
		find(us, 0, func(u faultUnit) bool { return u.Type == "DataRow" && strings.Contains(string(u.Fields), "pgx-tls-9") }) < 0 {
		t.Fatalf("the query and its row are not decoded in clear:\n%s", dump(us))
	}
	if strings.Contains(out.String(), "encrypted") {
		t.Errorf("the session was not decoded in clear")
	}
}
