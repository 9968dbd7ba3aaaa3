package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// TestPreloadFirstFrame checks that a file's first batch, queued before
// the program starts, is on the first frame the model renders, with no
// message delivered, and that Init goes on reading from the second
// batch; and that a live source is not waited for.
func TestPreloadFirstFrame(t *testing.T) {
	units := fake.Generate(3000, 7)
	m := New(Options{Title: "preload", Units: queued(units)})
	m.preload(160, 48)
	if m.st.Len() != 1024 {
		t.Fatalf("preload stored %d units, want the first batch of 1024", m.st.Len())
	}
	frame := m.Render()
	if !strings.Contains(frame, units[0].Summary) {
		t.Fatalf("first frame lacks the first unit's summary %q:\n%s", units[0].Summary, frame)
	}
	// Init batches its commands: the units' wait is one of them.
	var got int
	var run func(c tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			for _, c := range msg {
				run(c)
			}
		case unitsMsg:
			for _, b := range msg.batches {
				got += len(b)
			}
		}
	}
	run(m.Init())
	if got != len(units)-1024 {
		t.Fatalf("Init's commands read %d units, want the %d after the first batch", got, len(units)-1024)
	}

	live := New(Options{Title: "live", Live: true, Units: make(chan []*decode.Unit)})
	start := time.Now()
	live.preload(160, 48)
	if d := time.Since(start); d > preloadWait/2 || live.boot != nil {
		t.Fatalf("a live source was waited for (%v) or preloaded", d)
	}
}
