package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// numbers returns the unit numbers of us (top-level only when topLevel).
func numbers(us []unit, topLevel bool) []int {
	var ns []int
	for _, u := range us {
		if !topLevel || !u.nested {
			ns = append(ns, u.no)
		}
	}
	return ns
}

// rowNumbers returns the unit numbers of rows.
func rowNumbers(rows []row) []int {
	ns := make([]int, len(rows))
	for i, r := range rows {
		ns[i] = r.no
	}
	return ns
}

// showsPrefixOf reports whether rows show a non-empty prefix of want at
// least min(len(want), 8) rows long: the pane may be shorter than the list.
func showsPrefixOf(rows []row, want []int) bool {
	got := rowNumbers(rows)
	return len(got) >= min(len(want), 8) && len(got) <= len(want) && slices.Equal(got, want[:len(got)])
}

// TestTUIOpenFilterHelpQuit opens a capture, checks the first rows, applies
// a display filter typed in the filter bar, opens and closes the help and
// quits with q.
func TestTUIOpenFilterHelpQuit(t *testing.T) {
	file := testdata("amqp091-pika.pcapng")
	const filter = `amqp.method == "basic.publish"`
	all := numbers(readUnits(t, file), true)
	want := numbers(readUnits(t, "--filter", filter, file), true)
	if len(want) == 0 || len(want) == len(all) {
		t.Fatalf("filter %s selects %d of %d units; the test needs a proper subset", filter, len(want), len(all))
	}

	s := startTUI(t, nil, "replay", file)
	sc := s.waitFor("the first unit rows", func(sc string) bool { return showsPrefixOf(unitRows(sc), all) })
	if r, ok := selected(unitRows(sc)); !ok || r.no != all[0] {
		t.Errorf("selected row %+v, want unit %d selected at start", r, all[0])
	}
	if !strings.Contains(sc, fmt.Sprintf("%d units", len(all))) {
		t.Errorf("header does not count %d units:\n%s", len(all), sc)
	}

	s.keys("/")
	s.typ(filter)
	s.waitFor("the filter in the filter bar", func(sc string) bool { return strings.Contains(sc, "/"+filter) })
	s.keys("Enter")
	sc = s.waitFor("the filtered rows", func(sc string) bool { return showsPrefixOf(unitRows(sc), want) })
	if !strings.Contains(sc, fmt.Sprintf("%d match", len(want))) {
		t.Errorf("screen does not say %d match:\n%s", len(want), sc)
	}
	for _, r := range unitRows(sc) {
		if !strings.Contains(r.text, "basic.publish") {
			t.Errorf("row %d does not match the filter: %s", r.no, r.text)
		}
	}

	s.keys("?")
	sc = s.waitFor("the help", func(sc string) bool { return strings.Contains(sc, "Help") && unitRows(sc) == nil })
	for _, desc := range []string{"display filter", "quit", "expand"} {
		if !strings.Contains(sc, desc) {
			t.Errorf("help does not mention %q:\n%s", desc, sc)
		}
	}
	s.keys("Escape")
	s.waitFor("the units again after the help", func(sc string) bool { return showsPrefixOf(unitRows(sc), want) })
	// The terminal input is read through tui/internal/ttyin, which turns a
	// lone ESC into the Escape key at once: sequences that start with ESC
	// (arrows here) must still arrive whole.
	s.keys("Down")
	s.waitFor("the second match selected after Down", func(sc string) bool {
		r, ok := selected(unitRows(sc))
		return ok && r.no == want[1]
	})

	s.keys("q")
	if status := s.waitExit(); status != 0 {
		t.Errorf("exit status %d after q, want 0", status)
	}
}

// TestTUIExpandCompressedGroup opens a PostgreSQL capture re-encoded with
// CompressedMessages by compress-sim, goes to the first group with nested
// units, expands it and collapses it again.
func TestTUIExpandCompressedGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zstd.pcapng")
	if _, errOut, status := run(t, "compress-sim", testdata("pgsql-libpq.pcapng"),
		"--write", file, "--algorithm", "zstd", "--messages", "3"); status != 0 {
		t.Fatalf("compress-sim --write: exit status %d\n%s", status, errOut)
	}
	us := readUnits(t, file)
	group, nested := -1, []int(nil)
	for i, u := range us {
		if !u.nested && i+1 < len(us) && us[i+1].nested && strings.Contains(u.line, "CompressedMessages") {
			group = u.no
			for _, n := range us[i+1:] {
				if !n.nested {
					break
				}
				nested = append(nested, n.no)
			}
			break
		}
	}
	if group < 0 {
		t.Fatalf("no CompressedMessages with nested units in %s", file)
	}

	s := startTUI(t, nil, "replay", file)
	s.waitFor("the first unit rows", func(sc string) bool { return len(unitRows(sc)) > 0 })
	s.keys(strconv.Itoa(group), "G")
	sc := s.waitFor(fmt.Sprintf("unit %d selected", group), func(sc string) bool {
		r, ok := selected(unitRows(sc))
		return ok && r.no == group
	})
	for _, r := range unitRows(sc) {
		if strings.HasSuffix(r.dir, "*") {
			t.Errorf("nested row shown before any group is expanded: %s", r.text)
		}
	}

	// expanded reports whether the rows right after the group are its
	// nested units, marked B*.
	expanded := func(rows []row) bool {
		i := slices.IndexFunc(rows, func(r row) bool { return r.no == group })
		if i < 0 || i+len(nested) >= len(rows) {
			return false
		}
		for j, n := range nested {
			if r := rows[i+1+j]; r.no != n || r.dir != "B*" {
				return false
			}
		}
		return true
	}
	s.keys("l")
	s.waitFor(fmt.Sprintf("B* rows %v under group %d", nested, group), func(sc string) bool { return expanded(unitRows(sc)) })

	s.keys("h")
	sc = s.waitFor("the group collapsed", func(sc string) bool {
		rows := unitRows(sc)
		return slices.ContainsFunc(rows, func(r row) bool { return r.no == group }) && !expanded(rows)
	})
	for _, r := range unitRows(sc) {
		if slices.Contains(nested, r.no) {
			t.Errorf("nested unit %d still shown after collapsing: %s", r.no, r.text)
		}
	}

	s.keys("q")
	if status := s.waitExit(); status != 0 {
		t.Errorf("exit status %d after q, want 0", status)
	}
}

// TestTUIChecksumMismatch filters an AMQP 1.0 capture down to the
// transfers whose message checksum does not match and checks the badge and
// the detail pane, with NO_COLOR set so only symbols and words can tell.
func TestTUIChecksumMismatch(t *testing.T) {
	file := testdata("amqp10-proton.pcapng")
	const filter = `amqp.checksum == "mismatch"`
	want := numbers(readUnits(t, "--filter", filter, file), true)

	s := startTUI(t, []string{"NO_COLOR=1"}, "replay", file)
	s.waitFor("the first unit rows", func(sc string) bool { return len(unitRows(sc)) > 0 })
	s.keys("/")
	s.typ(filter)
	s.keys("Enter")
	sc := s.waitFor("the mismatching transfers", func(sc string) bool {
		return showsPrefixOf(unitRows(sc), want) && strings.Contains(sc, fmt.Sprintf("Detail #%d", want[0]))
	})
	for _, r := range unitRows(sc) {
		if !strings.Contains(r.text, "✗") || !strings.Contains(r.text, "transfer") {
			t.Errorf("row %d lacks the mismatch badge ✗ or is not a transfer: %s", r.no, r.text)
		}
	}
	if !strings.Contains(sc, "checksum MISMATCH") {
		t.Errorf("detail pane of unit %d does not show the checksum mismatch:\n%s", want[0], sc)
	}

	s.keys("q")
	if status := s.waitExit(); status != 0 {
		t.Errorf("exit status %d after q, want 0", status)
	}
}

// TestTUIStartFilter: replay --filter shows the filtered rows from the
// start, as the filter typed in the bar would.
func TestTUIStartFilter(t *testing.T) {
	file := testdata("amqp091-pika.pcapng")
	const filter = `amqp.method == "basic.publish"`
	want := numbers(readUnits(t, "--filter", filter, file), true)
	if len(want) == 0 {
		t.Fatal("the filter selects nothing")
	}
	s := startTUI(t, nil, "replay", "--filter", filter, file)
	sc := s.waitFor("the filtered rows", func(sc string) bool { return showsPrefixOf(unitRows(sc), want) })
	if !strings.Contains(sc, fmt.Sprintf("%d match", len(want))) {
		t.Errorf("screen does not say %d match:\n%s", len(want), sc)
	}
	for _, r := range unitRows(sc) {
		if !strings.Contains(r.text, "basic.publish") {
			t.Errorf("row %d does not match the filter: %s", r.no, r.text)
		}
	}
}

// TestTUISourceWarnings: a capture cut short says so in the TUI, as read
// says it on stderr: on the status line, and listed in the statistics.
func TestTUISourceWarnings(t *testing.T) {
	whole, err := os.ReadFile(testdata("amqp091-pika.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcapng")
	if err := os.WriteFile(cut, whole[:len(whole)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	s := startTUI(t, nil, "replay", cut)
	s.waitFor("the warning on the status line", func(sc string) bool { return strings.Contains(sc, "capture: 1 warning, the first:") })
	s.keys("S")
	s.waitFor("the statistics' source warnings", func(sc string) bool { return strings.Contains(sc, "Source warnings") })
}
