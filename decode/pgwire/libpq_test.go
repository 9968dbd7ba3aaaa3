package pgwire_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

// libpqSession compiles testdata/libpq/session.c, runs it through a
// recording relay to a real server, and returns libpq's own trace and the
// recorded bytes.
func libpqSession(t *testing.T) (trace []byte, chunks []chunk) {
	t.Helper()
	conninfo := postgres(t)
	cc, err := exec.LookPath("gcc")
	if err != nil {
		needPeer(t, "no C compiler: %v", err)
	}
	inc := "/usr/include/postgresql"
	if out, err := exec.Command("pg_config", "--includedir").Output(); err == nil {
		inc = strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(inc, "libpq-fe.h")); err != nil {
		needPeer(t, "libpq-dev is not installed: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "session")
	if out, err := exec.Command(cc, "-o", bin, "testdata/libpq/session.c", "-I"+inc, "-lpq").CombinedOutput(); err != nil {
		t.Fatalf("compile session.c: %v\n%s", err, out)
	}
	host, port := "", ""
	for _, kv := range strings.Fields(conninfo) {
		if v, ok := strings.CutPrefix(kv, "host="); ok {
			host = v
		}
		if v, ok := strings.CutPrefix(kv, "port="); ok {
			port = v
		}
	}
	addr, rec, wait := relay(t, net.JoinHostPort(host, port))
	_, rport, _ := net.SplitHostPort(addr)
	ci := strings.Replace(conninfo, "port="+port, "port="+rport, 1)
	tracePath := filepath.Join(dir, "trace.txt")
	if out, err := exec.Command(bin, ci, tracePath).CombinedOutput(); err != nil {
		t.Fatalf("session: %v\n%s", err, out)
	}
	wait()
	trace, err = os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	return trace, rec.chunks
}

func printTrace(t *testing.T, units []*decode.Unit, opt pqtrace.Options) []byte {
	t.Helper()
	var out bytes.Buffer
	p := pqtrace.New(&out, opt)
	for _, u := range units {
		if err := p.Print(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func firstDiff(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func line(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "<none>"
}

// TestLibpqTrace runs a real libpq session against a real server and
// checks that the trace printed from the recorded bytes is libpq's own,
// line for line.
func TestLibpqTrace(t *testing.T) {
	want, chunks := libpqSession(t)
	units, _ := decodeChunks(chunks, decode.DefaultOptions())

	for _, u := range units {
		if u.Err() != "" || len(u.Warnings()) > 0 {
			t.Errorf("unit %d %s %s: err %q warnings %q", u.N, u.Dir, u.Type, u.Err(), u.Warnings())
		}
		for _, f := range u.Fields() {
			if f.Key == "error" {
				t.Errorf("unit %d %s %s: field tree error %v", u.N, u.Dir, u.Type, f.Value)
			}
		}
		if strings.HasPrefix(u.Type, "SASL") {
			if !u.Secret || !bytes.Contains(u.Raw, []byte("****")) || bytes.Contains(u.Raw, []byte("p=")) {
				t.Errorf("%s not redacted: secret=%v raw=%q", u.Type, u.Secret, u.Raw)
			}
		}
	}

	got := printTrace(t, units, pqtrace.Options{Libpq15: true})
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	if i := firstDiff(wl, gl); i >= 0 {
		t.Errorf("libpq 15 mode: trace differs from libpq's at line %d:\nlibpq: %q\nours:  %q", i+1, line(wl, i), line(gl, i))
	}
	if len(wl) < 100 {
		t.Errorf("libpq traced only %d lines; the session did not run", len(wl))
	}

	// The default mode differs only where libpq 15 is known to leave
	// things out: CopyData contents, 'p' messages, the startup packet,
	// authentication requests, and the ReadyForQuery ending a function call.
	full := strings.Split(string(printTrace(t, units, pqtrace.Options{})), "\n")
	libpqOnly := regexp.MustCompile(`^F\t\d+\t$|^mismatched message length|\tUnknown message`)
	oursOnly := regexp.MustCompile(`\t(CopyData|Authentication|SASLInitialResponse|SASLResponse|PasswordMessage|StartupMessage)\t`)
	var a, b []string
	for _, s := range wl {
		if !libpqOnly.MatchString(s) {
			a = append(a, s)
		}
	}
	for i, s := range full {
		if oursOnly.MatchString(s) || i > 0 && strings.Contains(s, "\tReadyForQuery\t") && strings.Contains(full[i-1], "\tFunctionCallResponse\t") {
			continue
		}
		b = append(b, s)
	}
	if i := firstDiff(a, b); i >= 0 {
		t.Errorf("default mode differs from libpq outside the known lines at %d:\nlibpq: %q\nours:  %q", i, line(a, i), line(b, i))
	}
	copyData := 0
	for _, s := range full {
		if strings.Contains(s, "\tCopyData\t '") {
			copyData++
		}
	}
	if copyData < 3 {
		t.Errorf("default mode printed %d CopyData lines with contents, want at least 3", copyData)
	}
	if testing.Verbose() {
		t.Logf("libpq trace: %d lines; ours identical in libpq-15 mode", len(wl))
	}
}
