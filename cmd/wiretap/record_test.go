package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// needPeer skips a test whose real peer is missing, but fails it when
// CI=true: CI must have every peer.
func needPeer(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but %s", msg)
	}
	t.Skip(msg)
}

// peerURL returns the URL in env (or def) and its host:port, skipping
// the test when nothing answers there.
func peerURL(t *testing.T, env, def string) (*url.URL, string) {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		s = def
	}
	u, err := url.Parse(s)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		needPeer(t, "nothing answers at %s (%v); set %s", u.Host, err, env)
	}
	c.Close()
	return u, u.Host
}

func pgPeer(t *testing.T) (*url.URL, string) {
	return peerURL(t, "WIRETAP_PG_URL", "postgres://wiretap_scram:wiretap@127.0.0.1:5432/postgres?sslmode=disable")
}

func amqpPeer(t *testing.T) (*url.URL, string) {
	return peerURL(t, "WIRETAP_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
}

// via returns u with its host replaced by addr (the proxy).
func via(u *url.URL, addr string) string {
	v := *u
	v.Host = addr
	return v.String()
}

// syncBuffer is a bytes.Buffer a subprocess writes to while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBin starts the binary with stdout (when out is nil) and stderr
// collected, and waits until addr accepts connections.
func startBin(t *testing.T, addr string, out io.Writer, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(wiretapBin, args...)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if out != nil {
		cmd.Stdout = out
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listened on %s: %v; stderr %s", args[0], addr, err, stderr.String())
		}
	}
	return cmd, stdout, stderr
}

// waitFor polls until cond holds; the deadline only turns a hang into a
// failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

type recUnit struct {
	N        int      `json:"n"`
	Conn     int      `json:"conn"`
	Dir      string   `json:"dir"`
	Type     string   `json:"type"`
	Summary  string   `json:"summary"`
	Error    string   `json:"error"`
	Warnings []string `json:"warnings"`
	Raw      string   `json:"raw"`
}

func readJSON(t *testing.T, args ...string) []recUnit {
	t.Helper()
	us, err := tryReadJSON(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return us
}

func tryReadJSON(t *testing.T, args ...string) ([]recUnit, error) {
	t.Helper()
	stdout, stderr, code, _ := runWiretap(t, append([]string{"read", "--format", "json"}, args...)...)
	if code != 0 {
		return nil, fmt.Errorf("read %v: exit %d: %s", args, code, stderr)
	}
	var us []recUnit
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var u recUnit
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			return nil, fmt.Errorf("bad JSON line %q: %v", line, err)
		}
		us = append(us, u)
	}
	return us, nil
}

// TestProxyWriteSurvivesKill: the proxy's -w file is written as the
// session goes: killed with SIGKILL in the middle of a psql session, the
// file holds the session up to the last query, decodes without error, and
// was created mode 0600 with a notice on stderr.
func TestProxyWriteSurvivesKill(t *testing.T) {
	pg, pgAddr := pgPeer(t)
	if _, err := exec.LookPath("psql"); err != nil {
		needPeer(t, "no psql: %v", err)
	}
	path := filepath.Join(t.TempDir(), "session.pcapng")
	listen := freePort(t)
	proxy, _, stderr := startBin(t, listen, nil, "proxy", "--listen", listen, "--upstream", pgAddr, "--headless", "-w", path)

	psql := exec.Command("psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", via(pg, listen))
	stdin, err := psql.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var psqlOut syncBuffer
	psql.Stdout, psql.Stderr = &psqlOut, &psqlOut
	if err := psql.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { psql.Process.Kill(); psql.Wait() }()
	io.WriteString(stdin, "select 'wiretap-marker-' || 1;\n")
	// The query and its DataRow reach the file while the proxy runs (the
	// marker is in both: in the query as text, in the row as the result).
	waitFor(t, "the session in the -w file", func() bool {
		b, _ := os.ReadFile(path)
		return bytes.Count(b, []byte("wiretap-marker-")) >= 2 && bytes.Contains(b, []byte("SELECT 1"))
	})
	proxy.Process.Signal(syscall.SIGKILL)
	proxy.Wait()

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("-w file mode %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(stderr.String(), "credentials included") {
		t.Errorf("no notice that the file holds credentials; stderr %q", stderr.String())
	}
	us := readJSON(t, path)
	var types []string
	for _, u := range us {
		if u.Error != "" {
			t.Errorf("unit %d %s: %s", u.N, u.Type, u.Error)
		}
		types = append(types, u.Type)
	}
	got := strings.Join(types, " ")
	for _, want := range []string{"StartupMessage", "SASLInitialResponse", "AuthenticationOk", "ReadyForQuery Query RowDescription DataRow CommandComplete ReadyForQuery"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the recording lacks %q; it has %s", want, got)
		}
	}
}

// unitRaw returns the raw bytes of the first unit of type typ.
func unitRaw(t *testing.T, us []recUnit, typ string) []byte {
	t.Helper()
	for _, u := range us {
		if u.Type == typ {
			b, err := hex.DecodeString(u.Raw)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no %s unit", typ)
	return nil
}

func allStars(b []byte) bool {
	return len(b) > 0 && len(bytes.Trim(b, "*")) == 0
}

// TestProxyWriteRedacted: with --redact the -w file has PostgreSQL's SCRAM
// messages and AMQP's PLAIN response as asterisks of the same length, and
// still decodes: every unit as without --redact, no error.
func TestProxyWriteRedacted(t *testing.T) {
	t.Run("pgsql", func(t *testing.T) {
		pg, pgAddr := pgPeer(t)
		if _, err := exec.LookPath("psql"); err != nil {
			needPeer(t, "no psql: %v", err)
		}
		path := filepath.Join(t.TempDir(), "redacted.pcapng")
		listen := freePort(t)
		proxy, _, stderr := startBin(t, listen, nil, "proxy", "--listen", listen, "--upstream", pgAddr, "--headless", "-w", path, "--redact")
		if out, err := exec.Command("psql", "-X", "-q", "-c", "select 1", via(pg, listen)).CombinedOutput(); err != nil {
			t.Fatalf("psql: %v: %s", err, out)
		}
		waitFor(t, "the session's end in the -w file", func() bool {
			b, _ := os.ReadFile(path)
			return bytes.Contains(b, []byte("SELECT 1"))
		})
		proxy.Process.Signal(syscall.SIGINT)
		proxy.Wait()
		if !strings.Contains(stderr.String(), "--redact") {
			t.Errorf("no notice of the redaction; stderr %q", stderr.String())
		}
		us := readJSON(t, "--show-secrets", "--raw", path)
		for _, u := range us {
			if u.Error != "" {
				t.Errorf("unit %d %s: %s", u.N, u.Type, u.Error)
			}
		}
		// SASLInitialResponse: 'p', length, mechanism, NUL, length, response.
		init := unitRaw(t, us, "SASLInitialResponse")
		mech := bytes.IndexByte(init[5:], 0)
		if mech < 0 || string(init[5:5+mech]) != "SCRAM-SHA-256" {
			t.Fatalf("SASLInitialResponse %q: the mechanism was not kept", init)
		}
		resp := init[5+mech+1:]
		if n := int(binary.BigEndian.Uint32(resp)); n != len(resp)-4 || !allStars(resp[4:]) {
			t.Fatalf("SASLInitialResponse %q: want the response as asterisks after its length", init)
		}
		if r := unitRaw(t, us, "SASLResponse"); !allStars(r[5:]) || int(binary.BigEndian.Uint32(r[1:])) != len(r)-1 {
			t.Fatalf("SASLResponse %q: want its contents as asterisks", r)
		}
	})
	t.Run("amqp0-9-1", func(t *testing.T) {
		am, amAddr := amqpPeer(t)
		path := filepath.Join(t.TempDir(), "redacted.pcapng")
		listen := freePort(t)
		proxy, _, _ := startBin(t, listen, nil, "proxy", "--listen", listen, "--upstream", amAddr, "--headless", "-w", path, "--redact")
		conn, err := amqp.Dial(via(am, listen))
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare("", false, true, true, false, nil); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		waitFor(t, "connection.close-ok in the -w file", func() bool {
			us, _ := tryReadJSON(t, path)
			return len(us) > 0 && us[len(us)-1].Type == "connection.close-ok"
		})
		proxy.Process.Signal(syscall.SIGINT)
		proxy.Wait()
		us := readJSON(t, "--show-secrets", "--raw", path)
		for _, u := range us {
			if u.Error != "" {
				t.Errorf("unit %d %s: %s", u.N, u.Type, u.Error)
			}
		}
		r := unitRaw(t, us, "connection.start-ok")
		user, pass := am.User.Username(), ""
		if p, ok := am.User.Password(); ok {
			pass = p
		}
		plain := "\x00" + user + "\x00" + pass
		if bytes.Contains(r, []byte(plain)) || !bytes.Contains(r, []byte("PLAIN\x00\x00\x00"+string(rune(len(plain)))+strings.Repeat("*", len(plain)))) {
			t.Fatalf("connection.start-ok %q: want the PLAIN response as %d asterisks after its length", r, len(plain))
		}
	})
}

// amqpBurst is an AMQP 0-9-1 client's bytes that are slow to decode and
// print: heavy publishes (content headers whose headers tables have
// thousands of keys) and then many small frames.
func amqpBurst(heavy, keys, small int) []byte {
	b := []byte("AMQP\x00\x00\x09\x01")
	frame := func(typ byte, payload []byte) {
		b = append(b, typ, 0, 1)
		b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
		b = append(b, payload...)
		b = append(b, 0xce)
	}
	publish := []byte{0, 60, 0, 40, 0, 0, 0, 1, 'q', 0} // basic.publish "" "q"
	var table []byte
	for i := range keys {
		k := fmt.Sprintf("k%07d", i)
		table = append(table, byte(len(k)))
		table = append(table, k...)
		table = append(table, 'b', 1)
	}
	hdr := []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0} // class, weight, size 0, flags: headers
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(table)))
	hdr = append(hdr, table...)
	for range heavy {
		frame(1, publish)
		frame(2, hdr)
	}
	for range small {
		frame(1, publish)
		frame(2, []byte{0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) // no properties
	}
	return b
}

// pgBurst is a PostgreSQL client's StartupMessage and then many queries:
// each a pqtrace line.
func pgBurst(queries int) []byte {
	params := "user\x00u\x00database\x00d\x00\x00"
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(params)))
	b = binary.BigEndian.AppendUint32(b, 3<<16)
	b = append(b, params...)
	q := "select 'wiretap decoder-behind burst'\x00"
	for range queries {
		b = append(b, 'Q')
		b = binary.BigEndian.AppendUint32(b, uint32(4+len(q)))
		b = append(b, q...)
	}
	return b
}

// TestProxyDecoderBehind: while the decoder is held up by one client's
// burst (its output is not read, so printing blocks: as slow a decode as
// can be), another client's whole AMQP session with RabbitMQ goes through
// the same proxy; the decoder, once it catches up, shows what it did not
// get as "N bytes not decoded: decoder behind" in every format.
func TestProxyDecoderBehind(t *testing.T) {
	am, amAddr := amqpPeer(t)
	for _, format := range []string{"json", "text", "pqtrace"} {
		t.Run(format, func(t *testing.T) {
			sink, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer sink.Close()
			go func() {
				for {
					c, err := sink.Accept()
					if err != nil {
						return
					}
					go func() { io.Copy(io.Discard, c); c.Close() }()
				}
			}()
			listenA, listenB := freePort(t), freePort(t)
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outR.Close()
			args := []string{"proxy", "--headless", "--format", format, "--decode-buffer", "262144",
				"--listen", listenA, "--upstream", sink.Addr().String(), "--listen", listenB, "--upstream", amAddr}
			record := ""
			if format == "json" {
				// The -w file has a lane of its own: it misses nothing.
				record = filepath.Join(t.TempDir(), "behind.pcapng")
				args = append(args, "-w", record)
			}
			proxy, _, stderr := startBin(t, listenB, outW, args...)
			outW.Close()

			burst := amqpBurst(20, 5000, 30000)
			if format == "pqtrace" {
				burst = pgBurst(30000)
			}
			a, err := net.Dial("tcp", listenA)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			a.SetDeadline(time.Now().Add(60 * time.Second)) // a hang fails, it is not a speed limit
			if _, err := a.Write(burst); err != nil {
				t.Fatalf("client A's burst: %v", err)
			}

			// Client B: a whole session, while nobody reads the proxy's
			// output.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			conn, err := amqp.DialConfig(via(am, listenB), amqp.Config{Dial: amqp.DefaultDial(30 * time.Second)})
			if err != nil {
				t.Fatalf("client B: %v", err)
			}
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			q, err := ch.QueueDeclare("", false, true, true, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.PublishWithContext(ctx, "", q.Name, false, false, amqp.Publishing{Body: []byte("client B")}); err != nil {
				t.Fatal(err)
			}
			var got amqp.Delivery
			for ok := false; !ok; {
				if got, ok, err = ch.Get(q.Name, true); err != nil {
					t.Fatal(err)
				}
				if ctx.Err() != nil {
					t.Fatal("client B's message never came back")
				}
			}
			if string(got.Body) != "client B" {
				t.Fatalf("client B got %q", got.Body)
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			// Only now is the output read: until here the decoder could not
			// have printed A's units, so B went through while it was behind.
			out := &syncBuffer{}
			copied := make(chan struct{})
			go func() { io.Copy(out, outR); close(copied) }()
			a.Close()
			time.Sleep(300 * time.Millisecond) // let the proxy see both ends close
			proxy.Process.Signal(syscall.SIGINT)
			<-copied
			if err := proxy.Wait(); err != nil {
				t.Fatalf("proxy: %v; stderr %s", err, stderr.String())
			}
			// How much the units cover, said once at the end.
			if !regexp.MustCompile(`(?m)^proxy: the decoder fell behind: [1-9][0-9]* of [1-9][0-9]* bytes \([0-9.]+%\) not decoded, shown as gaps$`).MatchString(stderr.String()) {
				t.Errorf("no end-of-run line for the decoder behind on stderr: %.2000s", stderr.String())
			}
			const want = " bytes not decoded: decoder behind"
			switch format {
			case "json":
				found := false
				for _, line := range strings.Split(out.String(), "\n") {
					var u recUnit
					if json.Unmarshal([]byte(line), &u) == nil && u.Type == "gap" && len(u.Warnings) == 1 && strings.HasSuffix(u.Warnings[0], want) {
						found = true
						break
					}
				}
				if !found {
					t.Fatalf("no gap unit warning %q in the JSON output; stderr %s", want, stderr.String())
				}
				// Connections in the file: the probe that found the proxy
				// listening, client A, client B.
				types := map[int]map[string]int{}
				for _, u := range readJSON(t, record) {
					if u.Error != "" || u.Type == "gap" {
						t.Fatalf("the -w file: unit %d %s: %s %s", u.N, u.Type, u.Error, u.Warnings)
					}
					if types[u.Conn] == nil {
						types[u.Conn] = map[string]int{}
					}
					types[u.Conn][u.Type]++
				}
				// Found by their contents, not their numbers: whether the
				// probe is recorded, and so how the clients are numbered,
				// depends on the proxy's timing.
				connA, connB := 0, 0
				for c, ty := range types {
					if ty["content-header"] > types[connA]["content-header"] {
						connA = c
					}
				}
				for c, ty := range types {
					if c != connA && ty["connection.close-ok"] == 1 {
						connB = c
					}
				}
				if n := types[connA]["content-header"]; n != 20+30000 {
					t.Errorf("the -w file has %d of client A's %d content headers (connections %v)", n, 20+30000, types)
				}
				if connB == 0 {
					t.Errorf("the -w file lacks client B's connection.close-ok (connections %v)", types)
				}
			case "text":
				if !strings.Contains(out.String(), want+"]") {
					t.Fatalf("no %q in the text output; stderr %s", want, stderr.String())
				}
			case "pqtrace":
				if !strings.Contains(stderr.String(), want) {
					t.Fatalf("no %q on stderr with pqtrace; stderr %.2000s", want, stderr.String())
				}
			}
		})
	}
}

// TestProxyUnrecognisedProtocol: a connection in a protocol wiretap does
// not know is forwarded, and leaves a line on stderr when it ends.
func TestProxyUnrecognisedProtocol(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	listen := freePort(t)
	proxy, stdout, stderr := startBin(t, listen, nil, "proxy", "--listen", listen, "--upstream", up.Addr().String(), "--headless")
	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	msg := "HELO wiretap\r\n"
	io.WriteString(c, msg)
	if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitFor(t, "the unrecognised connection's line on stderr", func() bool {
		return strings.Contains(stderr.String(), "protocol not recognised")
	})
	line := stderr.String()
	if !strings.Contains(line, fmt.Sprintf("%d bytes from the client and %d from the server", len(msg), len(msg))) {
		t.Fatalf("stderr %q: want the bytes each way", line)
	}
	proxy.Process.Signal(syscall.SIGINT)
	proxy.Wait()
	if stdout.String() != "" {
		t.Fatalf("stdout %q, want nothing: the line goes to stderr", stdout.String())
	}
}

// TestCaptureWriteRedacted: capture -w --redact on the loopback interface
// writes the packets of a psql session with its SCRAM messages as
// asterisks, and the file decodes without error.
func TestCaptureWriteRedacted(t *testing.T) {
	pg, pgAddr := pgPeer(t)
	if _, err := exec.LookPath("psql"); err != nil {
		needPeer(t, "no psql: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root or CAP_NET_RAW")
	}
	_, port, _ := net.SplitHostPort(pgAddr)
	path := filepath.Join(t.TempDir(), "captured.pcapng")
	cmd := exec.Command(wiretapBin, "capture", "-i", "lo", "-f", "tcp port "+port, "--headless", "-w", path, "--redact")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// The capture has no port to say it is ready: sessions are run until
	// one is in the file.
	waitFor(t, "a captured session in the -w file", func() bool {
		if out, err := exec.Command("psql", "-X", "-q", "-c", "select 1", pg.String()).CombinedOutput(); err != nil {
			t.Fatalf("psql: %v: %s", err, out)
		}
		b, _ := os.ReadFile(path)
		return bytes.Contains(b, []byte("SELECT 1"))
	})
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("capture: %v; stderr %s", err, stderr.String())
	}
	if !regexp.MustCompile(`wiretap: capture lo: [1-9][0-9]* packets captured, [0-9]+ dropped\n`).MatchString(stderr.String()) {
		t.Errorf("no count of the packets captured and dropped on stderr: %q", stderr.String())
	}
	us := readJSON(t, "--show-secrets", "--raw", path)
	sasl := 0
	for _, u := range us {
		if u.Error != "" {
			t.Errorf("unit %d %s: %s", u.N, u.Type, u.Error)
		}
		if u.Type != "SASLResponse" {
			continue
		}
		r, _ := hex.DecodeString(u.Raw)
		if !allStars(r[5:]) {
			t.Fatalf("SASLResponse %q: want its contents as asterisks", r)
		}
		sasl++
	}
	if sasl == 0 {
		t.Fatal("no SASLResponse captured")
	}
}

// TestRedactNeedsWrite: --redact without -w is a usage error, not a
// silent no-op.
func TestRedactNeedsWrite(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--listen", freePort(t), "--upstream", "127.0.0.1:1", "--headless", "--redact"},
		{"capture", "-i", "lo", "--headless", "--redact"},
	} {
		if _, stderr, code, _ := runWiretap(t, args...); code != 2 || !strings.Contains(stderr, "--redact") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a word on --redact", args, code, stderr)
		}
	}
}
