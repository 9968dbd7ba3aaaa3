package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"
)

// frameInterval is the renderer's frame time at the 120 frames a second
// the program asks for.
const frameInterval = time.Second / 120

// streamInterval is the frame time for changes that units arriving make
// (a live source's list following the traffic, its counts): ten frames a
// second, where Wireshark's live view updates twice. A keypress still
// renders within frameInterval. A frame of the 160×48 screen costs about
// 5 ms of CPU (2 ms to render, 3 ms for bubbletea's renderer to diff and
// write it); at the 30 a second that units arrived in, the proxy's TUI
// spent a sixth of a core on them at 10,000 messages a second, CPU the
// forwarding waited for on two cores (p95 latency added 2.9-4.5 ms, at ten
// frames 1.8-2.3 ms).
const streamInterval = time.Second / 10

// pacer spares full renders that no frame would show. Bubbletea calls View
// after every message, and a burst of them (a paste into the filter bar,
// key repeat, the mouse wheel, scan results) would render the whole screen
// for each, about a millisecond apiece, though the terminal is sent at
// most one frame every frameInterval. Within a frame interval of the last
// render, View returns that render again and a redraw is scheduled for
// the interval's end, so the last state is always drawn. For new units
// the interval is streamInterval.
//
// It is shared by the Model's copies (Update returns Model by value).
type pacer struct {
	now       func() time.Time
	last      time.Time // when view was rendered
	view      string
	reuse     bool // View returns view as it is
	scheduled bool // a redrawMsg is on its way
}

// redrawMsg ends a frame interval in which renders were spared.
type redrawMsg struct{}

// pace decides, after Update handled msg, whether the coming View renders;
// it returns the command that schedules the redraw when it does not.
func (p *pacer) pace(msg tea.Msg) tea.Cmd {
	switch msg.(type) {
	case redrawMsg:
		p.scheduled, p.reuse = false, false
		return nil
	case tea.WindowSizeMsg:
		p.reuse = false // the old render has the old size
		return nil
	}
	interval := frameInterval
	if _, ok := msg.(unitsMsg); ok {
		interval = streamInterval
	}
	since := p.now().Sub(p.last)
	if p.view == "" || since >= interval {
		p.reuse = false
		return nil
	}
	p.reuse = true
	if p.scheduled {
		return nil
	}
	p.scheduled = true
	return tea.Tick(interval-since, func(time.Time) tea.Msg { return redrawMsg{} })
}

// render returns the screen, rendering it with full when due.
func (p *pacer) render(full func() string) string {
	if p.reuse {
		return p.view
	}
	p.view, p.last = full(), p.now()
	return p.view
}
