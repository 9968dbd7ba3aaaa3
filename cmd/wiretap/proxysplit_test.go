package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// decoderPid is the proxy's decoding process: its one child.
func decoderPid(t *testing.T, pid int) int {
	t.Helper()
	var kids []string
	waitFor(t, "the decoding process", func() bool {
		// Each thread lists the children it forked.
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			t.Skipf("no /proc (%v): not Linux", err)
		}
		kids = kids[:0]
		for _, task := range tasks {
			b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "children"))
			kids = append(kids, strings.Fields(string(b))...)
		}
		return len(kids) > 0
	})
	if len(kids) != 1 {
		t.Fatalf("the proxy has children %v, want one decoding process", kids)
	}
	n, err := strconv.Atoi(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// group is the name in a /proc/PID/autogroup line ("/autogroup-12 nice 0").
func group(line string) string { name, _, _ := strings.Cut(line, " "); return name }

// threadNices returns the niceness of each thread of process pid
// (proc(5): field 19 of stat, after the command in parentheses).
func threadNices(t *testing.T, pid int) []int { return threadStat(t, pid, 19) }

// threadPolicies returns the scheduling policy of each thread of process
// pid (field 41 of stat: 0 SCHED_OTHER, 5 SCHED_IDLE).
func threadPolicies(t *testing.T, pid int) []int { return threadStat(t, pid, 41) }

// threadStat returns field n of the stat of each thread of process pid.
func threadStat(t *testing.T, pid, n int) []int {
	t.Helper()
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	var vals []int
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "stat"))
		if err != nil {
			continue // a thread that just ended
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		v, err := strconv.Atoi(fields[n-3]) // fields 1 and 2 are cut off
		if err != nil {
			t.Fatalf("stat %q: %v", s, err)
		}
		vals = append(vals, v)
	}
	return vals
}

// TestProxyDecodesInAProcessOfItsOwn: the proxy forwards in the process
// the user started and decodes in a second one at the lowest priority
// (--decode-cpu spare) or the default one (all); a decoding process that
// does not run at all (stopped) delays no client, and once it runs again
// it shows the whole session.
func TestProxyDecodesInAProcessOfItsOwn(t *testing.T) {
	am, amAddr := amqpPeer(t)
	for _, tc := range []struct {
		cpu          string
		nice, policy int
	}{{"spare", decoderNice, schedIdle}, {"all", 0, 0}} {
		t.Run(tc.cpu, func(t *testing.T) {
			listen := freePort(t)
			out := &syncBuffer{}
			proxy, _, stderr := startBin(t, listen, out, "proxy", "--headless", "--decode-cpu", tc.cpu, "--listen", listen, "--upstream", amAddr)
			dec := decoderPid(t, proxy.Process.Pid)
			// It sets its threads' priority as it starts.
			waitFor(t, "every thread of the decoding process at niceness "+strconv.Itoa(tc.nice)+", policy "+strconv.Itoa(tc.policy), func() bool {
				for _, n := range threadNices(t, dec) {
					if n != tc.nice {
						return false
					}
				}
				for _, p := range threadPolicies(t, dec) {
					if p != tc.policy {
						return false
					}
				}
				return true
			})
			for _, n := range threadNices(t, proxy.Process.Pid) {
				if n != 0 {
					t.Fatalf("a thread of the forwarding process has niceness %d, want 0", n)
				}
			}
			for _, p := range threadPolicies(t, proxy.Process.Pid) {
				if p != 0 {
					t.Fatalf("a thread of the forwarding process has scheduling policy %d, want 0 (SCHED_OTHER)", p)
				}
			}
			// Where the kernel shares the CPU between sessions first
			// (autogroups), a spare decoding process is a session of its
			// own, its group at the lowest priority: else its threads'
			// niceness would weigh only against the forwarding's, and
			// RabbitMQ's session and the decoder's would share alike.
			fwGroup, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(proxy.Process.Pid), "autogroup"))
			if err != nil {
				t.Logf("no autogroups here (%v): the threads' niceness is what counts", err)
			} else {
				decGroup, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(dec), "autogroup"))
				if err != nil {
					t.Fatal(err)
				}
				fw, de := strings.TrimSpace(string(fwGroup)), strings.TrimSpace(string(decGroup))
				if tc.cpu == "spare" {
					if group(fw) == group(de) || !strings.HasSuffix(de, "nice "+strconv.Itoa(decoderNice)) {
						t.Fatalf("decoding process's autogroup %q (forwarding's %q): want one of its own at nice %d", de, fw, decoderNice)
					}
				} else if group(fw) != group(de) {
					t.Fatalf("decoding process's autogroup %q, forwarding's %q: want the same under --decode-cpu all", de, fw)
				}
			}

			// The decoding process stopped: the client's session goes
			// through all the same.
			if err := syscall.Kill(dec, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := true
			defer func() {
				if stopped {
					syscall.Kill(dec, syscall.SIGCONT)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := amqp.DialConfig(via(am, listen), amqp.Config{Dial: amqp.DefaultDial(30 * time.Second)})
			if err != nil {
				t.Fatalf("client through the proxy, its decoder stopped: %v", err)
			}
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			q, err := ch.QueueDeclare("", false, true, true, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ch.PublishWithContext(ctx, "", q.Name, false, false, amqp.Publishing{Body: []byte("while the decoder was stopped")}); err != nil {
				t.Fatal(err)
			}
			for ok := false; !ok; {
				if _, ok, err = ch.Get(q.Name, true); err != nil {
					t.Fatal(err)
				}
				if ctx.Err() != nil {
					t.Fatal("the message never came back through the proxy")
				}
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			// (The readiness probe's connection may have been printed
			// before the stop: only the session's units are looked for.)
			if got := out.String(); strings.Contains(got, "Basic.Publish") {
				t.Fatalf("a stopped decoding process printed the session:\n%s", got)
			}

			syscall.Kill(dec, syscall.SIGCONT)
			stopped = false
			waitFor(t, "the session's units", func() bool { return strings.Contains(out.String(), "Connection.Close-Ok") })
			proxy.Process.Signal(syscall.SIGINT)
			if err := proxy.Wait(); err != nil {
				t.Fatalf("proxy: %v; stderr %s", err, stderr.String())
			}
			for _, want := range []string{"Basic.Publish", "Basic.Get-Ok", "Content-Body len=29"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the output lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), "decoder behind") {
				t.Errorf("bytes were dropped for a session that fits the buffers:\n%s", out.String())
			}
			// The decoding process is gone with the proxy.
			if err := syscall.Kill(dec, 0); err == nil {
				if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(dec), "stat")); !strings.Contains(string(b), ") Z ") {
					t.Errorf("the decoding process %d outlived the proxy", dec)
				}
			}
		})
	}
}

// TestProxyDecodeInProcess: the hidden --decode-in-process keeps the
// proxy in one process (for comparisons), decoding as the split one does.
func TestProxyDecodeInProcess(t *testing.T) {
	am, amAddr := amqpPeer(t)
	listen := freePort(t)
	out := &syncBuffer{}
	proxy, _, stderr := startBin(t, listen, out, "proxy", "--headless", "--decode-in-process", "--listen", listen, "--upstream", amAddr)
	conn, err := amqp.DialConfig(via(am, listen), amqp.Config{Dial: amqp.DefaultDial(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Publish("", "no-such-queue", false, false, amqp.Publishing{Body: []byte("one process")}); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	waitFor(t, "the session's units", func() bool { return strings.Contains(out.String(), "Connection.Close-Ok") })
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(proxy.Process.Pid), "task"))
	for _, tk := range tasks {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(proxy.Process.Pid), "task", tk.Name(), "children"))
		if len(strings.Fields(string(b))) > 0 {
			t.Fatalf("--decode-in-process started a process: %s", b)
		}
	}
	proxy.Process.Signal(syscall.SIGINT)
	if err := proxy.Wait(); err != nil {
		t.Fatalf("proxy: %v; stderr %s", err, stderr.String())
	}
	if !strings.Contains(out.String(), "Basic.Publish") {
		t.Errorf("no Basic.Publish in:\n%s", out.String())
	}
}
