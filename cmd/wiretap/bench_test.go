package main

import (
	"strings"
	"testing"
	"time"
)

// TestBenchUsageErrors checks that wrong usage exits 2 with a "bench:"
// message, before any broker is dialled (the URI points nowhere).
func TestBenchUsageErrors(t *testing.T) {
	const uri = "amqp://guest:guest@127.0.0.1:1/"
	for _, args := range [][]string{
		{"-s", "5"},
		{"-z", "0"},
		{"-z", "soon"},
		{"--size-dist", "16:0.9,8:0.1"},
		{"--client", "pika"},
		{"-t", "x-weird"},
		{"-a", "--multi-ack-every", "10"},
		{"-t", "fanout", "--bindings", "100"},
		{"--queue-pattern", "perf-test"},
		{"--queue-pattern", "q-%d", "--queue-pattern-from", "5", "--queue-pattern-to", "2"},
		{"-u", "q", "--queues", "3"},
		{"-r", "-5"},
		{"-f", "mandatory"},
		{"--no-such-flag"},
	} {
		_, stderr, code, _ := runWiretap(t, append([]string{"bench", "--uri", uri}, args...)...)
		if code != 2 {
			t.Errorf("bench %v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
		flagErr := strings.Contains(stderr, "unknown flag") || strings.Contains(stderr, "invalid argument")
		if !flagErr && !strings.Contains(stderr, "bench: ") {
			t.Errorf("bench %v: stderr %q lacks the bench: prefix", args, stderr)
		}
	}
	if _, stderr, code, _ := runWiretap(t, "bench", "-z", "1"); code != 2 || !strings.Contains(stderr, "--uri") {
		t.Errorf("bench without --uri: exit %d, %q", code, stderr)
	}
	// A broker that is not there is not a usage error.
	if _, stderr, code, _ := runWiretap(t, "bench", "--uri", uri, "-z", "1"); code != 1 {
		t.Errorf("bench against nothing: exit %d, want 1 (%q)", code, stderr)
	}
}

func TestBenchSecondsFlag(t *testing.T) {
	cmd := newBenchCmd()
	if err := cmd.ParseFlags([]string{"-z", "2", "--warm-up", "1.5", "-i", "500ms"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"time": 2 * time.Second, "warm-up": 1500 * time.Millisecond, "interval": 500 * time.Millisecond} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want.String() {
			t.Errorf("--%s = %s, want %s", name, got, want)
		}
	}
}
