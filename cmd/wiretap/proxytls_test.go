package main

import (
	"bytes"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// startProxy runs `wiretap proxy --headless` with its CA under cfgDir
// (as XDG_CONFIG_HOME) and returns its stdout and stderr once it listens.
func startProxy(t *testing.T, cfgDir, listen string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", cfgDir) // inherited by the child
	return startBin(t, listen, nil, append([]string{"proxy", "--listen", listen, "--headless"}, args...)...)
}

// stopAndWait ends the proxy as a user would (SIGINT), so it prints all.
func stopAndWait(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not stop on SIGINT")
	}
}

// traceShape is a pqtrace's lines reduced to direction and message name:
// what a session is, without its keys, nonces and pids.
func traceShape(trace string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(trace), "\n") {
		f := strings.Split(l, "\t")
		if len(f) >= 3 {
			out = append(out, f[0]+" "+f[2])
		}
	}
	return out
}

// TestProxyInterceptsPostgresTLS: psql with sslmode=require and with the
// default sslmode=prefer, through the proxy with no certificate given:
// the sessions work, are decoded in clear, and their pqtrace has the shape
// of a plain session's.
func TestProxyInterceptsPostgresTLS(t *testing.T) {
	pg, pgAddr := pgPeer(t)
	if _, err := exec.LookPath("psql"); err != nil {
		needPeer(t, "no psql: %v", err)
	}
	cfgDir := t.TempDir()
	session := func(sslmode string) (trace, stderr, psqlOut string) {
		listen := freePort(t)
		proxy, out, errs := startProxy(t, cfgDir, listen, "--upstream", pgAddr, "--format", "pqtrace")
		u := *pg
		q := u.Query()
		q.Set("sslmode", sslmode)
		u.RawQuery = q.Encode()
		psql := exec.Command("psql", "-X", "-q", "-A", "-t", "-c", "select 'tls-marker-' || 7", via(&u, listen))
		b, err := psql.CombinedOutput()
		if err != nil {
			t.Fatalf("psql sslmode=%s through the proxy: %v\n%s\nproxy: %s", sslmode, err, b, errs.String())
		}
		waitFor(t, "the session's end in the trace", func() bool { return strings.Contains(out.String(), "\tTerminate") })
		stopAndWait(t, proxy)
		return out.String(), errs.String(), string(b)
	}
	plain, _, _ := session("disable")
	for _, mode := range []string{"require", "prefer"} {
		trace, stderr, out := session(mode)
		if !strings.Contains(out, "tls-marker-7") {
			t.Errorf("sslmode=%s: psql printed %q", mode, out)
		}
		if !strings.Contains(stderr, "PostgreSQL TLS intercepted (SSLRequest answered S)") {
			t.Errorf("sslmode=%s: stderr does not say TLS was intercepted: %s", mode, stderr)
		}
		if !strings.Contains(trace, "'tls-marker-' || 7") || !strings.Contains(trace, "tls-marker-7") {
			t.Errorf("sslmode=%s: the query and its row are not in the trace in clear:\n%s", mode, trace)
		}
		if got, want := traceShape(trace), traceShape(plain); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("sslmode=%s: the intercepted trace differs from the plain session's:\n%s\nplain:\n%s", mode, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// The CA was made on first use, its key private.
	st, err := os.Stat(filepath.Join(cfgDir, "wiretap", "ca-key.pem"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v %v", st, err)
	}
	// `wiretap ca` shows the same CA, twice alike.
	show := func() string {
		cmd := exec.Command(wiretapBin, "ca")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfgDir)
		b, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := show()
	if !strings.Contains(first, filepath.Join(cfgDir, "wiretap", "ca.pem")) || !strings.Contains(first, "SHA-256:") || show() != first {
		t.Errorf("wiretap ca printed %q", first)
	}
}

// TestProxyNoIntercept: with --no-intercept, TLS is the server's business:
// this server has none, so psql's sslmode=require fails as it would
// against the server itself.
func TestProxyNoIntercept(t *testing.T) {
	pg, pgAddr := pgPeer(t)
	if _, err := exec.LookPath("psql"); err != nil {
		needPeer(t, "no psql: %v", err)
	}
	listen := freePort(t)
	proxy, _, _ := startProxy(t, t.TempDir(), listen, "--upstream", pgAddr, "--no-intercept")
	defer stopAndWait(t, proxy)
	u := *pg
	q := u.Query()
	q.Set("sslmode", "require")
	u.RawQuery = q.Encode()
	direct := exec.Command("psql", "-X", "-c", "select 1", u.String())
	dout, derr := direct.CombinedOutput()
	b, err := exec.Command("psql", "-X", "-c", "select 1", via(&u, listen)).CombinedOutput()
	if (err == nil) != (derr == nil) {
		t.Fatalf("through --no-intercept psql sslmode=require gave %v %q; straight to the server %v %q", err, b, derr, dout)
	}
}

// TestProxyInterceptsAMQPS: an AMQPS client (TLS from the first byte)
// through the proxy to a plain RabbitMQ: the session works and is decoded.
func TestProxyInterceptsAMQPS(t *testing.T) {
	rabbit, rabbitAddr := amqpPeer(t)
	listen := freePort(t)
	proxy, out, errs := startProxy(t, t.TempDir(), listen, "--upstream", rabbitAddr, "--format", "json")
	u := *rabbit
	u.Scheme, u.Host = "amqps", listen
	conn, err := amqp.DialTLS(u.String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("amqps through the proxy: %v\n%s", err, errs.String())
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("amqps-marker")}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ch.Get(q.Name, true); err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	conn.Close()
	waitFor(t, "the session in the output", func() bool { return strings.Contains(out.String(), `"connection.close-ok"`) })
	stopAndWait(t, proxy)
	if !strings.Contains(errs.String(), "TLS from the first byte intercepted") {
		t.Errorf("stderr does not say TLS was intercepted: %s", errs.String())
	}
	for _, want := range []string{`"type":"connection.start"`, `"type":"basic.publish"`, `"type":"basic.get-ok"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if bytes.Contains([]byte(out.String()), []byte(`encrypted stream`)) {
		t.Errorf("the session was not decoded in clear")
	}
}
