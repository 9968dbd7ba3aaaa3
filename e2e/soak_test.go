//go:build soak

package e2e

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSoakBrokerTUI is the live-source soak of issue 13, outside the
// default run (go test -tags soak -run Soak -timeout 40m ./e2e): the
// embedded broker with its TUI open, fed by `wiretap bench` (fanout, one
// producer and one consumer, 16-byte bodies, autoack) at WIRETAP_SOAK_RATE
// messages a second (default 20,000) for WIRETAP_SOAK (default 30m), with
// the TUI's default 512 MiB budget. It samples the TUI process's RSS every
// 5 seconds and logs it each minute with the units received. The budget
// bounds the unit store and the collector's soft limit; the broker's own
// queues and the units on their way to the store come on top, so the RSS
// is logged against it, not held to it. The test fails if the RSS's mean
// over the last quarter of the run is more than a tenth (and 16 MiB) above
// its mean over the second minute (the collector lets the heap swing between collections,
// so single samples are not compared); and if, at the end, the first
// unit, one in the middle and the last are not each shown when asked for
// with :goto.
func TestSoakBrokerTUI(t *testing.T) {
	dur, rate := 30*time.Minute, 20000
	if v := os.Getenv("WIRETAP_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	if v := os.Getenv("WIRETAP_SOAK_RATE"); v != "" {
		r, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		rate = r
	}
	const budget = 512 << 20
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := startTUI(t, nil, "broker", "--listen", addr)
	s.waitFor("the broker's TUI", func(sc string) bool { return strings.Contains(sc, "broker "+addr) })
	pid := s.childPid()

	bench := exec.Command(wiretap(t), "bench", "--uri", "amqp://guest:guest@"+addr+"/", "-t", "fanout",
		"-s", "16", "-x", "1", "-y", "1", "-a", "-r", strconv.Itoa(rate), "-z", strconv.Itoa(int(dur.Seconds()))+"s")
	out, err := os.CreateTemp(t.TempDir(), "bench")
	if err != nil {
		t.Fatal(err)
	}
	bench.Stdout, bench.Stderr = out, out
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bench.Wait() }()

	start := time.Now()
	var peak int64
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	lastLog := time.Duration(0)
wait:
	for {
		select {
		case err := <-done:
			if err != nil {
				b, _ := os.ReadFile(out.Name())
				t.Fatalf("bench: %v\n%s", err, b)
			}
			break wait
		case <-tick.C:
		}
		rss := vmRSS(t, pid)
		el := time.Since(start)
		peak = max(peak, rss)
		samples = append(samples, sample{el, rss})
		if el-lastLog >= time.Minute {
			lastLog = el
			t.Logf("%v: %s units, RSS %d MiB", el.Round(time.Minute), unitsShown(s.screen()), rss>>20)
		}
	}
	b, _ := os.ReadFile(out.Name())
	t.Logf("bench:\n%s", lastLines(string(b), 3))
	total := unitsShown(s.screen())
	n, err := strconv.Atoi(strings.ReplaceAll(total, ",", ""))
	if err != nil || n < int(dur.Seconds())*rate {
		t.Fatalf("%q units in the TUI after %d messages a second for %v", total, rate, dur)
	}
	mean := func(from, to time.Duration) int64 {
		var sum, k int64
		for _, s := range samples {
			if s.at >= from && s.at < to {
				sum, k = sum+s.rss, k+1
			}
		}
		return sum / max(k, 1)
	}
	second, last := mean(time.Minute, 2*time.Minute), mean(dur*3/4, dur+time.Minute)
	t.Logf("budget %d MiB, peak RSS %d MiB; mean %d MiB in the second minute, %d MiB in the last quarter; %d units", budget>>20, peak>>20, second>>20, last>>20, n)
	if dur >= 4*time.Minute && last > second+second/10+16<<20 {
		t.Errorf("RSS grew: mean %d MiB in the last quarter, %d MiB in the second minute", last>>20, second>>20)
	}
	for _, want := range []int{1, n / 2, n} {
		s.keys(":")
		s.typ("goto " + strconv.Itoa(want))
		s.keys("Enter")
		s.waitFor("unit #"+strconv.Itoa(want)+" selected", func(sc string) bool {
			r, ok := selected(unitRows(sc))
			return ok && r.no == want
		})
	}
}

// childPid returns the pid of the program the pane's shell runs.
func (s *session) childPid() int {
	s.t.Helper()
	shell := strings.TrimSpace(s.tmux("display-message", "-p", "-t", "w", "#{pane_pid}"))
	for range 100 {
		out, _ := exec.Command("pgrep", "-P", shell).Output()
		if f := strings.Fields(string(out)); len(f) > 0 {
			// env execs sh, which runs wiretap as its child.
			out, _ = exec.Command("pgrep", "-P", f[0]).Output()
			if g := strings.Fields(string(out)); len(g) > 0 {
				n, _ := strconv.Atoi(g[0])
				return n
			}
			n, _ := strconv.Atoi(f[0])
			if b, _ := os.ReadFile("/proc/" + f[0] + "/comm"); strings.TrimSpace(string(b)) == "wiretap" {
				return n
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatal("no wiretap process under the pane")
	return 0
}

// vmRSS reads a process's resident set size in bytes.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("the TUI is gone: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

var soakTitle = regexp.MustCompile(`│ ([\d,]+) units`)

// unitsShown returns the unit count of the title line.
func unitsShown(screen string) string {
	if m := soakTitle.FindStringSubmatch(screen); m != nil {
		return m[1]
	}
	return "?"
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
