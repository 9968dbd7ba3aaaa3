package decode

import (
	"strings"
	"testing"
)

// TestDeferred: pending work runs once, before what settles it; a second
// Defer settles the first; Settle from inside the work, and inside
// Within, does nothing; a nil Deferred settles nothing.
func TestDeferred(t *testing.T) {
	var d Deferred
	var log []string
	emit := func(s string) {
		d.Settle() // as the pipeline does before numbering a unit
		log = append(log, s)
	}
	d.Defer(func() { emit("a1"); emit("a2") })
	if !d.Pending() {
		t.Fatal("nothing pending after Defer")
	}
	d.Defer(func() { emit("b") })
	d.Within(func() { emit("c") })
	emit("x")
	d.Settle()
	if got := strings.Join(log, " "); got != "a1 a2 c b x" {
		t.Errorf("order %q, want %q", got, "a1 a2 c b x")
	}
	if d.Pending() {
		t.Error("still pending after Settle")
	}
	var none *Deferred
	none.Settle()
	if none.Pending() {
		t.Error("a nil Deferred has work pending")
	}
}
