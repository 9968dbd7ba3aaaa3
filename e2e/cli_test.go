package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lines splits s into its non-empty lines.
func lines(s string) []string {
	var ls []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func TestCLINotACapture(t *testing.T) {
	for _, cmd := range []string{"read", "replay"} {
		out, errOut, status := run(t, cmd, testdata("not-a-capture.txt"))
		if status != 1 {
			t.Errorf("%s: exit status %d, want 1", cmd, status)
		}
		if out != "" {
			t.Errorf("%s: stdout %q, want nothing", cmd, out)
		}
		if l := lines(errOut); len(l) != 1 || !strings.HasPrefix(l[0], "wiretap: ") || !strings.Contains(l[0], "not a pcap or pcapng file") {
			t.Errorf("%s: stderr %q, want one line saying it is not a pcap or pcapng file", cmd, errOut)
		}
	}
}

func TestCLIMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pcapng")
	_, errOut, status := run(t, "read", missing)
	if status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	if l := lines(errOut); len(l) != 1 || !strings.Contains(l[0], missing) {
		t.Errorf("stderr %q, want one line naming %s", errOut, missing)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"read", "--no-such-flag", testdata("amqp091-pika.pcapng")},
		{"read"},
		{"read", "--format", "xml", testdata("amqp091-pika.pcapng")},
		{"read", "--filter", "amqp.method ==", testdata("amqp091-pika.pcapng")},
		{"no-such-command"},
	} {
		out, errOut, status := run(t, args...)
		if status != 2 {
			t.Errorf("%q: exit status %d, want 2 (usage)", args, status)
		}
		if out != "" {
			t.Errorf("%q: stdout %q, want nothing", args, out)
		}
		if l := lines(errOut); len(l) == 0 || !strings.HasPrefix(l[0], "wiretap: ") {
			t.Errorf("%q: stderr %q, want a first line starting with \"wiretap: \"", args, errOut)
		}
	}
}

// TestCLITruncatedCapture cuts a capture in the middle of a packet record
// (what `head -c` does to a capture still being written) and expects the
// units before the cut, exit status 0 and one warning line.
func TestCLITruncatedCapture(t *testing.T) {
	full, err := os.ReadFile(testdata("amqp091-pika.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	all := readUnits(t, testdata("amqp091-pika.pcapng"))
	cut := filepath.Join(t.TempDir(), "cut.pcapng")
	if err := os.WriteFile(cut, full[:len(full)/2+1], 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, status := run(t, "read", cut)
	if status != 0 {
		t.Errorf("exit status %d, want 0", status)
	}
	l := lines(errOut)
	if len(l) != 1 || !strings.HasPrefix(l[0], "wiretap: warning: ") || !strings.Contains(l[0], cut) {
		t.Errorf("stderr %q, want one line \"wiretap: warning: ...\" naming %s", errOut, cut)
	}
	got := 0
	for _, line := range lines(out) {
		if readRow.MatchString(line) {
			got++
		}
	}
	if got == 0 || got >= len(all) {
		t.Errorf("%d units from the first half of a capture of %d, want some but not all", got, len(all))
	}
}
