package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// binDir holds the wiretap binary built for this test run.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wiretap-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
	buildOut  []byte
)

// wiretap returns the path of the wiretap binary, built from ../cmd/wiretap
// on first use.
func wiretap(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "wiretap")
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/wiretap")
		cmd.Dir = ".."
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/wiretap: %v\n%s", buildErr, buildOut)
	}
	return bin
}

// testdata returns the path of a file in the repository's testdata.
func testdata(name string) string { return filepath.Join("..", "testdata", name) }

// needTool skips the test when name is not on PATH, or fails it when the
// environment has CI=true (CI must run every test).
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required with CI=true: %v", name, err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
}

// run runs the binary and returns its stdout, stderr and exit status.
func run(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(wiretap(t), args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("wiretap %s: %v", strings.Join(args, " "), err)
		}
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// readRow is a unit line of `wiretap read`'s text output:
// number, time, connection, direction (B* or F* for nested units), channel.
var readRow = regexp.MustCompile(`^\s*(\d+)\s+\d+\.\d{6}\s+\d+\s+([FB]\*?)\s`)

// unit is one unit line of `wiretap read`.
type unit struct {
	no     int
	nested bool
	line   string
}

// readUnits runs `wiretap read` with args and returns its units in order.
func readUnits(t *testing.T, args ...string) []unit {
	t.Helper()
	out, errOut, status := run(t, append([]string{"read"}, args...)...)
	if status != 0 {
		t.Fatalf("wiretap read %s: exit status %d\n%s", strings.Join(args, " "), status, errOut)
	}
	var us []unit
	for line := range strings.SplitSeq(out, "\n") {
		m := readRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		us = append(us, unit{no: n, nested: strings.HasSuffix(m[2], "*"), line: line})
	}
	if len(us) == 0 {
		t.Fatalf("wiretap read %s: no units in\n%s", strings.Join(args, " "), out)
	}
	return us
}
