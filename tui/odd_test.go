package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestOddUnits feeds units a pipeline should not produce but a bug or a
// hostile capture might: no connection, no number, a parent never sent,
// out-of-range fields, control characters. Every view and action must
// cope without panicking.
func TestOddUnits(t *testing.T) {
	c := &decode.Conn{ID: 1, Proto: decode.ProtoAMQP10}
	ghost := &decode.Unit{N: 999, Type: "CompressedMessages"}
	bad := &decode.Field{Key: "oob", Name: "x.oob", Value: []byte{1}, Offset: 50, Length: 1000}
	units := []*decode.Unit{
		{N: 1},
		{N: 0, Conn: c, Type: "transfer", Summary: "line\nbreak\ttab\x1b[31mred", Raw: []byte{1, 2, 3},
			Dissect: func(*decode.Unit) []*decode.Field { return []*decode.Field{bad, nil}[:1] }},
		{N: 2, Conn: c, Parent: ghost, Type: "DataRow", Dir: 7},
		{N: 3, Conn: c, Type: "disposition"},
		{N: 3, Conn: c, Type: strings.Repeat("w", 300)},
	}
	units[3].SetTime(time.Unix(-5, 0))
	units[3].SetChecksum(&decode.Checksum{Status: 9})
	units[4].SetErr("e")
	units[4].SetWarnings([]string{"w"})
	d := newDriver(t, Options{Title: "odd"}, 100, 30)
	d.feed(units, true)
	for _, k := range []string{"j", "j", "tab", "j", "l", "h", "e", "tab", "j", "tab", "a", "A", "ctrl+o", "enter", "e", "G", "g", "z", "z", "S", "esc", "?", "esc"} {
		d.keys(k)
		_ = d.screen()
	}
	d.keys("/")
	d.typeText(`frame.len > 0 || amqp.checksum == "ok"`)
	d.keys("enter", "s")
	d.typeText("red")
	d.keys("enter", "n", "N", ":")
	d.typeText("goto 3")
	d.keys("enter")
	d.contains("odd")
	d.keys("esc", "esc", "g")
	d.contains("␛[31mred") // the summary's escape, made visible
	if strings.Contains(d.m.Render(), "\x1b[31mred") {
		t.Error("escape sequence from a summary reached the terminal")
	}
}
