package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestProxyTUI: `wiretap proxy` with its TUI, in front of the embedded
// broker. The TUI runs in the decoding process and the forwarding in the
// process the user started: units of a real client's session reach the
// screen; :fault lists, adds and turns off the forwarding process's rules;
// q ends both processes with status 0.
func TestProxyTUI(t *testing.T) {
	upstream, _ := startHeadlessBroker(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	s := startTUI(t, nil, "proxy", "--listen", listen, "--upstream", upstream, "--fault", "delay 1ms to-server")
	s.waitFor("the listener's line", func(sc string) bool { return strings.Contains(sc, "proxy: listening on "+listen) })

	conn, err := amqp.Dial("amqp://guest:guest@" + listen + "/")
	if err != nil {
		t.Fatalf("client through the proxy: %v", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("through the proxy's TUI")}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	s.waitFor("the session's units", func(sc string) bool {
		return strings.Contains(sc, "Basic.Publish") && strings.Contains(sc, "Connection.Close-Ok")
	})

	s.typ(":fault")
	s.keys("Enter")
	s.waitFor("the rule list", func(sc string) bool { return strings.Contains(sc, "faults: 1 [on] delay 1ms to-server") })
	s.typ(":fault add throttle 1MiB/s to-client")
	s.keys("Enter")
	s.waitFor("the rule added", func(sc string) bool { return strings.Contains(sc, "fault added: 2 [on] throttle 1MiB/s to-client") })
	s.typ(":fault off 1")
	s.keys("Enter")
	s.waitFor("the rule turned off", func(sc string) bool { return strings.Contains(sc, "fault 1 [off] delay 1ms to-server") })
	s.typ(":fault add close when nope.field")
	s.keys("Enter")
	s.waitFor("a bad rule refused by the forwarding process", func(sc string) bool { return strings.Contains(sc, "nope.field") })

	// The decoding process, which runs the TUI, is in a session of its
	// own: the forwarding process hands it the window's resizes.
	width := termWidth - 50
	s.tmux("resize-window", "-t", "w", "-x", strconv.Itoa(width), "-y", strconv.Itoa(termHeight-10))
	s.waitFor("the TUI drawn again at the window's new width", func(sc string) bool {
		for line := range strings.Lines(sc) {
			line = strings.TrimRight(line, "\n")
			if strings.HasSuffix(line, "╯") && utf8.RuneCountInString(line) == width {
				return true
			}
		}
		return false
	})

	pids := wiretapPids(t, listen)
	if len(pids) != 2 {
		t.Fatalf("wiretap processes for %s: %v, want the forwarding and the decoding one", listen, pids)
	}
	s.keys("q")
	if code := s.waitExit(); code != 0 {
		t.Fatalf("exit status %d; screen:\n%s", code, s.screen())
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d outlived the TUI", pid)
		}
	}
}

// wiretapPids returns the processes whose command line has "proxy" and
// listen.
func wiretapPids(t *testing.T, listen string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && strings.HasSuffix(args[0], "wiretap") && args[1] == "proxy" && strings.Contains(string(b), listen) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive says whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return false
		}
	}
	return true
}
