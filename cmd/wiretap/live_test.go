package main

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback address nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// replayServer plays the server side of a recorded conversation to the
// first client: it reads what the client sent and writes what the server
// sent, in the recorded order.
func replayServer(t *testing.T, chunks []chunk) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for _, ch := range chunks {
			if ch.fromA {
				if _, err := io.ReadFull(c, make([]byte, len(ch.data))); err != nil {
					return
				}
			} else if _, err := c.Write(ch.data); err != nil {
				return
			}
		}
	}()
	return l.Addr().String()
}

// TestProxyLivePqtrace runs the real binary as a headless proxy in front of
// a server replaying a recorded PostgreSQL session with zstd
// CompressedMessages, drives the client side through it, and checks that
// the live trace is line for line what `read --format pqtrace` prints for
// the recording: B* lines before their CompressedMessages, nothing lost to
// the periodic flushing of a live run.
func TestProxyLivePqtrace(t *testing.T) {
	const capturePath = "../../testdata/pgsql-libpq-zstd.pcapng"
	chunks := firstConversation(t, capturePath)
	want := mustRun(t, "read", "--format", "pqtrace", capturePath)

	upstream := replayServer(t, chunks)
	listen := freePort(t)
	cmd := exec.Command(wiretapBin, "proxy", "--listen", listen, "--upstream", upstream, "--headless", "--format", "pqtrace")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	var c net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err = net.Dial("tcp", listen); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("proxy never listened: %v; stderr %s", err, stderr.String())
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	for _, ch := range chunks {
		if ch.fromA {
			if _, err := c.Write(ch.data); err != nil {
				t.Fatal(err)
			}
		} else if _, err := io.ReadFull(c, make([]byte, len(ch.data))); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	// Let the proxy see both ends close, then stop it as a user would.
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("proxy: %v; stderr %s", err, stderr.String())
	}
	if got := stdout.String(); got != want {
		t.Errorf("live trace differs from the recording's trace:\n--- live\n%.3000s\n--- read\n%.3000s", got, want)
	}
	if !bytes.Contains(stdout.Bytes(), []byte("B*\t")) {
		t.Error("no B* lines: the recording was expected to carry CompressedMessages")
	}
}
