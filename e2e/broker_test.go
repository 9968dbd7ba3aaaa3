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
func TestBrokerHeadless(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(wiretap(t), "broker", "--headless", "--listen", addr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
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

	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
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
	// The bench's thousands of frames, counted live in the title (the
	// rows on screen follow the newest, the bench's closing frames).
	s.waitFor("the client's frames, live", func(sc string) bool {
		m := unitsTitle.FindStringSubmatch(sc)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		return n > 1000 && strings.Contains(sc, "Connection.Close-Ok")
	})
	s.keys("q")
	if st := s.waitExit(); st != 0 {
		t.Fatalf("exit status %d", st)
	}
}
