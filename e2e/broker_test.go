package e2e

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestBrokerHeadless: `wiretap broker --headless` serves a real client and
// prints the session's units as `read` prints a capture.
// startHeadlessBroker runs `wiretap broker --headless` with args on a
// free port and returns its address and stdout's lines.
func startHeadlessBroker(t *testing.T, args ...string) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(wiretap(t), append([]string{"broker", "--headless", "--listen", addr, "--management", ""}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "broker: listening on ") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the broker never said it was listening")
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return addr, lines
}

func TestBrokerHeadless(t *testing.T) {
	addr, lines := startHeadlessBroker(t)
	conn, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	q, err := ch.QueueDeclare("e2e", false, true, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("hello e2e")})
	msgs, _ := ch.Consume(q.Name, "", true, false, false, false, nil)
	select {
	case m := <-msgs:
		if string(m.Body) != "hello e2e" {
			t.Fatalf("body %q", m.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	conn.Close()

	want := []string{"Connection.Start", "Queue.Declare", "Basic.Publish", "Basic.Deliver", "Connection.Close-Ok"}
	var got []string
	deadline := time.After(10 * time.Second)
	for len(want) > 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before %v:\n%s", want, strings.Join(got, "\n"))
			}
			got = append(got, l)
			if strings.Contains(l, want[0]) {
				want = want[1:]
			}
		case <-deadline:
			t.Fatalf("units never showed %v:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// TestBrokerRouteFilter: the broker's publishes carry broker.route.*
// fields, so a display filter finds the ones that reached no queue.
func TestBrokerRouteFilter(t *testing.T) {
	addr, lines := startHeadlessBroker(t, "--format", "json", "--filter", "broker.route.queues == 0")
	conn, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	if _, err := ch.QueueDeclare("e2e-routed", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	ch.Publish("", "e2e-routed", false, false, amqp.Publishing{Body: []byte("reaches a queue")})
	ch.Publish("amq.topic", "nobody.listens", true, false, amqp.Publishing{Body: []byte("returned")})
	ch.Publish("", "e2e-routed", false, false, amqp.Publishing{Body: []byte("reaches a queue")})
	select {
	case <-returns:
	case <-time.After(5 * time.Second):
		t.Fatal("no basic.return")
	}
	conn.Close()
	// Output is flushed within a second; three leave room for a slow
	// machine, and anything past the one line is a failure.
	var got []string
	deadline := time.After(3 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended: %q", got)
			}
			got = append(got, l)
		case <-deadline:
			if len(got) != 1 || !strings.Contains(got[0], `"type":"basic.publish"`) || !strings.Contains(got[0], `"routing-key":"nobody.listens"`) ||
				!strings.Contains(got[0], `"returned":true`) {
				t.Fatalf("filtered output %q, want the one unroutable publish", got)
			}
			return
		}
	}
}

// TestPlainWiretapPortTaken: plain wiretap, 5672 taken and no terminal,
// says so in one line naming --listen.
func TestPlainWiretapPortTaken(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:5672"); err == nil {
		defer ln.Close() // nothing was there (no RabbitMQ): hold it ourselves
	}
	_, errOut, status := run(t)
	if status != 1 || !strings.Contains(errOut, "127.0.0.1:5672 is in use") || !strings.Contains(errOut, "--listen") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
}

var unitsTitle = regexp.MustCompile(`Units ([0-9,]+)`)

// TestPlainWiretapTUI runs plain `wiretap` in tmux, in a network namespace
// of its own (5672 is RabbitMQ's on the test machine), and a client in the
// same namespace (`wiretap bench`) publishes and consumes: the units appear
// live in the TUI.
func TestPlainWiretapTUI(t *testing.T) {
	needTool(t, "unshare")
	needTool(t, "nsenter")
	needTool(t, "ip")
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no network namespace can be made here: %v", err)
		}
		t.Skipf("no network namespace here (needs root): %v", err)
	}
	dir := t.TempDir()
	pidFile := dir + "/pid"
	// The pane's shell enters a new network namespace, brings its loopback
	// up, notes its pid (for nsenter) and becomes plain wiretap.
	script := `ip link set lo up && echo $$ > ` + shellQuote(pidFile) + ` && exec ` + shellQuote(wiretap(t))
	s := startPane(t, nil, []string{"unshare", "-n", "sh", "-c", script})
	s.waitFor("the empty TUI of the broker", func(sc string) bool {
		return strings.Contains(sc, "broker 127.0.0.1:5672") && strings.Contains(sc, "Units")
	})
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	bench := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", wiretap(t),
		"bench", "--uri", "amqp://guest:guest@127.0.0.1:5672/", "-z", "1s", "-s", "16")
	out, err := bench.CombinedOutput()
	if err != nil {
		t.Fatalf("bench against plain wiretap: %v\n%s", err, out)
	}
	// The bench's thousands of frames, counted live in the title, the
	// rows on screen following the newest.
	s.waitFor("the client's frames, live", func(sc string) bool {
		m := unitsTitle.FindStringSubmatch(sc)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		// (Not the bench's last frame: under load its producer may be
		// cut mid-write at -z, and the newest rows are then its last
		// publish, not a close-ok.)
		return n > 1000 && strings.Contains(sc, "Basic.Publish")
	})
	s.keys("q")
	if st := s.waitExit(); st != 0 {
		t.Fatalf("exit status %d", st)
	}
}

// TestBrokerNoTap: with --no-tap the broker serves clients and prints no
// units.
func TestBrokerNoTap(t *testing.T) {
	addr, lines := startHeadlessBroker(t, "--no-tap")
	conn, err := amqp.Dial("amqp://guest:guest@" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := conn.Channel()
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := ch.Consume(q.Name, "", true, false, false, false, nil)
	ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("untapped")})
	select {
	case m := <-msgs:
		if string(m.Body) != "untapped" {
			t.Fatalf("body %q", m.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	conn.Close()
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("--no-tap printed a unit: %q", l)
		}
	case <-time.After(1500 * time.Millisecond): // output is flushed within a second
	}
	// The recording is the tap's: asking for both is a usage error.
	_, errOut, status := run(t, "broker", "--headless", "--no-tap", "-w", t.TempDir()+"/x.pcapng")
	if status != 2 || !strings.Contains(errOut, "--no-tap") {
		t.Errorf("--no-tap -w: status %d, stderr %q, want a usage error naming --no-tap", status, errOut)
	}
}
