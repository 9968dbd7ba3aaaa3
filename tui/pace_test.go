package tui

import (
	"strconv"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

// TestPacer: within a frame interval of the last render, View reuses it
// and one redraw is scheduled; the redraw, a later message or a resize
// renders again, so the last state is always drawn.
func TestPacer(t *testing.T) {
	now := time.Unix(0, 0)
	p := &pacer{now: func() time.Time { return now }}
	renders := 0
	full := func() string { renders++; return "screen " + strconv.Itoa(renders) }
	key := keyMsg("j")

	if got := p.render(full); got != "screen 1" {
		t.Fatalf("first render %q", got)
	}
	now = now.Add(time.Millisecond)
	cmd := p.pace(key)
	if cmd == nil {
		t.Fatal("no redraw scheduled for a message inside the frame interval")
	}
	if got := p.render(full); got != "screen 1" || renders != 1 {
		t.Fatalf("render inside the interval gave %q after %d renders, want the last one reused", got, renders)
	}
	now = now.Add(time.Millisecond)
	if p.pace(key) != nil {
		t.Error("a second redraw scheduled while one is on its way")
	}
	p.render(full)
	if renders != 1 {
		t.Fatalf("%d renders inside one interval", renders)
	}
	// The scheduled redraw arrives: the last state is drawn.
	if _, ok := cmd().(redrawMsg); !ok {
		t.Fatal("the scheduled command does not redraw")
	}
	now = now.Add(frameInterval)
	p.pace(redrawMsg{})
	if got := p.render(full); got != "screen 2" {
		t.Fatalf("after the redraw: %q", got)
	}
	// A message a whole interval later renders at once, with nothing scheduled.
	now = now.Add(frameInterval)
	if p.pace(key) != nil || p.render(full) != "screen 3" {
		t.Error("a message after a quiet interval does not render at once")
	}
	// A resize renders at once even inside the interval.
	now = now.Add(time.Millisecond)
	p.pace(tea.WindowSizeMsg{Width: 10, Height: 5})
	if p.render(full) != "screen 4" {
		t.Error("a resize inside the interval reused the old render")
	}
}

// TestPacerStream: units arriving render at most every streamInterval,
// a keypress after a frame interval at once.
func TestPacerStream(t *testing.T) {
	now := time.Unix(0, 0)
	p := &pacer{now: func() time.Time { return now }}
	renders := 0
	full := func() string { renders++; return "screen " + strconv.Itoa(renders) }
	p.render(full)
	now = now.Add(2 * frameInterval)
	cmd := p.pace(unitsMsg{})
	if cmd == nil || p.render(full) != "screen 1" {
		t.Fatal("units two frame intervals after a render rendered at once")
	}
	if _, ok := cmd().(redrawMsg); !ok {
		t.Fatal("no redraw scheduled for the units")
	}
	if p.pace(keyMsg("j")) != nil || p.render(full) != "screen 2" {
		t.Fatal("a keypress a frame interval after the last render waited")
	}
	now = now.Add(streamInterval)
	if p.pace(unitsMsg{}) != nil || p.render(full) != "screen 3" {
		t.Fatal("units a stream interval after the last render waited")
	}
}
