package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestBrokerPanel runs plain `wiretap` in tmux in a network namespace of
// its own, with `wiretap bench` publishing and consuming through it: the
// broker panel (b) shows the bench's queue and connection, enter on the
// connection restricts the unit list to it, and :route explains a publish
// no binding takes as unroutable.
func TestBrokerPanel(t *testing.T) {
	needTool(t, "unshare")
	needTool(t, "nsenter")
	needTool(t, "ip")
	if err := exec.Command("unshare", "-n", "true").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no network namespace can be made here: %v", err)
		}
		t.Skipf("no network namespace here (needs root): %v", err)
	}
	pidFile := t.TempDir() + "/pid"
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
	// The bench runs in the background long enough for its connections
	// and queue to be seen live.
	bench := exec.Command("nsenter", "--net=/proc/"+strconv.Itoa(pid)+"/ns/net", wiretap(t),
		"bench", "--uri", "amqp://guest:guest@127.0.0.1:5672/", "-z", "20s", "-s", "16")
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		bench.Process.Kill()
		bench.Wait()
	}()
	s.waitFor("the client's frames, live", func(sc string) bool {
		return strings.Contains(sc, "Basic.Publish") || strings.Contains(sc, "Basic.Deliver") || strings.Contains(sc, "Basic.Ack")
	})

	s.keys("b")
	s.waitFor("the broker panel's overview", func(sc string) bool {
		return strings.Contains(sc, "Broker: Overview") && strings.Contains(sc, "RabbitMQ") && strings.Contains(sc, "127.0.0.1:5672")
	})
	s.keys("3")
	s.waitFor("the bench's queue", func(sc string) bool {
		return strings.Contains(sc, "Broker: Queues") && strings.Contains(sc, "wiretap.bench.")
	})
	s.keys("5")
	sc := s.waitFor("the bench's connections", func(sc string) bool {
		return strings.Contains(sc, "Broker: Connections") && strings.Contains(sc, "-> 127.0.0.1:5672") && strings.Contains(sc, "running")
	})
	// The first connection's conn number, to find it in the unit list.
	var conn string
	for _, l := range strings.Split(sc, "\n") {
		if i := strings.Index(l, "›"); i >= 0 {
			if f := strings.Fields(l[i+len("›"):]); len(f) > 0 {
				conn = f[0]
			}
		}
	}
	if _, err := strconv.Atoi(conn); err != nil {
		t.Fatalf("no conn number on the selected row (%q):\n%s", conn, sc)
	}
	s.keys("Enter")
	s.waitFor("the unit list restricted to conn "+conn, func(sc string) bool {
		return !strings.Contains(sc, "Broker:") && strings.Contains(sc, "conn "+conn+" 127.0.0.1:") && strings.Contains(sc, "Units")
	})

	s.keys("b")
	s.waitFor("the panel again", func(sc string) bool { return strings.Contains(sc, "Broker: Connections") })
	s.keys(":")
	s.typ("route amq.direct k")
	s.keys("Enter")
	s.waitFor("the route explained as unroutable", func(sc string) bool {
		return strings.Contains(sc, "Broker: Route") && strings.Contains(sc, "unroutable") && strings.Contains(sc, "NO_ROUTE")
	})
	s.keys("Escape")
	s.waitFor("the main screen", func(sc string) bool { return !strings.Contains(sc, "Broker:") })
	s.keys("q")
	if st := s.waitExit(); st != 0 {
		t.Fatalf("exit status %d", st)
	}
}
