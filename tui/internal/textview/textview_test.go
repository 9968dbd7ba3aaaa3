package textview

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	lines := []string{"one", "two", "a line longer than the width", "four"}
	got := Render(lines, 1, 10, 5)
	want := []string{"two", "a line lo…", "four", "", ""}
	if g := strings.Split(got, "\n"); strings.Join(g, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", g, want)
	}
	if got := Render(nil, 0, 10, 3); got != "\n\n" {
		t.Errorf("empty: %q", got)
	}
}
