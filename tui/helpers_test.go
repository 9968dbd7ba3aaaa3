package tui

import (
	"flag"
	"github.com/wiretap-dev/wiretap/tui/store"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

var update = flag.Bool("update", false, "rewrite golden screens in testdata/")

// driver runs the model the way bubbletea does, without a terminal:
// messages go through Update and the commands it returns are run at once,
// their messages fed back.
type driver struct {
	t testing.TB
	m Model
	// firstResult drops what a filter's first result starts (the scan of
	// the rest), as the next keypress would cancel it.
	firstResult bool
}

func newDriver(t testing.TB, opt Options, w, h int) *driver {
	m := New(opt)
	m.driven = true
	d := &driver{t: t, m: m}
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	return d
}

// withUnits returns a driver over n fake units, all delivered.
func withUnits(t testing.TB, n int, w, h int) *driver {
	d := newDriver(t, Options{Title: "fake.pcapng"}, w, h)
	d.feed(fake.Generate(n, 1), true)
	return d
}

func (d *driver) feed(units []*decode.Unit, closed bool) {
	d.send(unitsMsg{batches: [][]*decode.Unit{units}, closed: closed})
}

func (d *driver) send(msg tea.Msg) {
	queue := []tea.Msg{msg}
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				if c != nil {
					queue = append(queue, c())
				}
			}
			continue
		}
		if msg == nil {
			continue
		}
		nm, cmd := d.m.Update(msg)
		d.m = nm.(Model)
		if _, ok := msg.(filterDoneMsg); ok && d.firstResult {
			if d.m.flt.cancel != nil {
				d.m.flt.cancel()
			}
			return
		}
		if cmd != nil {
			queue = append(queue, cmd())
		}
	}
}

// keys sends key presses: words in a space-separated list are key names
// ("enter", "ctrl+d", "tab"); single characters are typed.
func (d *driver) keys(ks ...string) {
	for _, k := range ks {
		d.send(keyMsg(k))
	}
}

// typeText types s character by character.
func (d *driver) typeText(s string) {
	for _, r := range s {
		d.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	if strings.HasPrefix(k, "ctrl+") && len(k) == 6 {
		return tea.KeyPressMsg{Code: rune(k[5]), Mod: tea.ModCtrl}
	}
	r := []rune(k)
	if len(r) != 1 {
		panic("unknown key " + k)
	}
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// screen returns the rendered screen without escape sequences.
func (d *driver) screen() string { return ansi.Strip(d.m.Render()) }

func (d *driver) contains(want ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range want {
		if !strings.Contains(s, w) {
			d.t.Fatalf("screen lacks %q:\n%s", w, s)
		}
	}
}

func (d *driver) lacks(bad ...string) {
	d.t.Helper()
	s := d.screen()
	for _, w := range bad {
		if strings.Contains(s, w) {
			d.t.Fatalf("screen shows %q:\n%s", w, s)
		}
	}
}

// golden compares the screen with testdata/NAME.golden (rewritten with
// -update). The screen is plain text: a framework upgrade that changes
// escape sequences touches no golden file.
func (d *driver) golden(name string) {
	d.t.Helper()
	got := d.screen() + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			d.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			d.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				d.t.Errorf("screen differs from %s at line %d (go test -update rewrites it)\n got: %s\nwant: %s\n--- screen\n%s", path, i+1, g, w, got)
				return
			}
		}
	}
}

// seqSlice copies the entries of s.
func seqSlice(s store.Seq) []int32 {
	out := make([]int32, s.Len())
	for p := range out {
		out[p] = s.At(p)
	}
	return out
}
