package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Terminal size of every session: the size the README's screenshots use.
const (
	termWidth  = 160
	termHeight = 48
)

// waitLimit bounds how long a wait polls the screen. It is a failure
// deadline for a hung or broken program, not a speed requirement: a
// healthy run sees each screen within milliseconds.
const waitLimit = 20 * time.Second

// session is a wiretap process running in its own tmux server.
type session struct {
	t      *testing.T
	base   []string // -S socket -f config
	status string   // file the wrapping shell writes the exit status to
}

// startTUI runs `wiretap args...` in a new detached tmux session of
// termWidth x termHeight, with env added to its environment. A shell
// around it writes its exit status to a file: tmux's own pane_dead_status
// is not reliable (tmux 3.3 sometimes leaves the exited process a zombie,
// unreaped, with the pane dead and no status). The tmux server is killed
// when the test ends.
func startTUI(t *testing.T, env []string, args ...string) *session {
	t.Helper()
	return startPane(t, env, append([]string{wiretap(t)}, args...))
}

// startPane is startTUI for any command line (argv[0] included).
func startPane(t *testing.T, env []string, argv []string) *session {
	t.Helper()
	needTool(t, "tmux")
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	// remain-on-exit keeps the last screen for the failure message.
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, base: []string{"-S", filepath.Join(dir, "sock"), "-f", conf}, status: filepath.Join(dir, "status")}
	cmd := append([]string{"new-session", "-d", "-s", "w",
		"-x", strconv.Itoa(termWidth), "-y", strconv.Itoa(termHeight), "--", "env"}, env...)
	cmd = append(cmd, "sh", "-c", `"$0" "$@"; echo $? >`+shellQuote(s.status)+".tmp && mv "+shellQuote(s.status)+".tmp "+shellQuote(s.status))
	cmd = append(cmd, argv...)
	s.tmux(cmd...)
	t.Cleanup(func() { exec.Command("tmux", append(s.base, "kill-server")...).Run() })
	return s
}

// tmux runs a tmux command on the session's server and returns its output.
func (s *session) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append(s.base, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends key names (tmux send-keys syntax: "Enter", "Escape", "q").
func (s *session) keys(keys ...string) {
	s.t.Helper()
	s.tmux(append([]string{"send-keys", "-t", "w"}, keys...)...)
}

// typ types text literally.
func (s *session) typ(text string) {
	s.t.Helper()
	s.tmux("send-keys", "-t", "w", "-l", text)
}

// screen returns the pane's text, one line per row.
func (s *session) screen() string {
	s.t.Helper()
	return s.tmux("capture-pane", "-p", "-t", "w")
}

// waitFor polls the screen until ok accepts it and returns that screen;
// it fails the test, showing the last screen, after waitLimit.
func (s *session) waitFor(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		sc := s.screen()
		if ok(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("screen never showed %s; last screen:\n%s", what, sc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitExit polls until the program has exited and returns its exit status.
func (s *session) waitExit() int {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if b, err := os.ReadFile(s.status); err == nil {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				s.t.Fatalf("exit status %q: %v", b, err)
			}
			return n
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("wiretap did not exit; last screen:\n%s", s.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// row is a row of the Units pane as drawn.
type row struct {
	no       int
	selected bool
	dir      string // F, B, or F*/B* for units nested in a group
	text     string
}

// unitRow matches a unit row inside the Units box: selection marker,
// number, time, connection, direction.
var unitRow = regexp.MustCompile(`^│([▶ ])\s*(\d+)\s+\d+\.\d{6}\s+\d+\s+([FB]\*?)\s`)

// unitRows returns the rows of the Units pane on screen, top to bottom,
// or nil when there is no Units pane.
func unitRows(screen string) []row {
	var rows []row
	in := false
	for line := range strings.SplitSeq(screen, "\n") {
		switch {
		case strings.HasPrefix(line, "╭─ Units"):
			in = true
			continue
		case in && strings.HasPrefix(line, "╰"):
			return rows
		case !in:
			continue
		}
		m := unitRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		rows = append(rows, row{no: n, selected: m[1] == "▶", dir: m[3], text: line})
	}
	return rows
}

// selected returns the selected row of the Units pane.
func selected(rows []row) (row, bool) {
	for _, r := range rows {
		if r.selected {
			return r, true
		}
	}
	return row{}, false
}
