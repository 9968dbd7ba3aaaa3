package tshark

import (
	"slices"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	base := []Frame{
		{Packet: 4, Stream: 0, Dir: FromClient, Type: "protocol-header", Inferred: true},
		{Packet: 6, Stream: 0, Dir: FromServer, Type: "connection.start"},
		{Packet: 8, Stream: 0, Dir: FromClient, Type: "connection.start-ok"},
		{Packet: 9, Stream: 1, Dir: FromClient, Channel: 1, Type: "basic.publish"},
	}
	if d := Diff(base, base); d != nil {
		t.Errorf("Diff of a list with itself: %v", d)
	}
	// Packet numbers and Inferred do not count.
	moved := slices.Clone(base)
	moved[0].Packet, moved[0].Inferred, moved[1].Packet = 3, false, 5
	if d := Diff(base, moved); d != nil {
		t.Errorf("Diff ignoring packets: %v", d)
	}
	changed := slices.Clone(base)
	changed[3].Channel = 2
	missing := base[:3]
	extra := append(slices.Clone(base), Frame{Packet: 10, Stream: 1, Dir: FromClient, Channel: 1, Type: "content-header"})
	for _, c := range []struct {
		got  []Frame
		want string
	}{
		{changed, "stream 1 F frame 1: want ch1 basic.publish (packet 9), got ch2 basic.publish (packet 9)"},
		{missing, "stream 1 F: 1 frames missing from ch1 basic.publish (packet 9) on"},
		{extra, "stream 1 F: 1 extra frames from ch1 content-header (packet 10) on"},
	} {
		d := Diff(base, c.got)
		if len(d) != 1 || d[0] != c.want {
			t.Errorf("got %q, want %q", strings.Join(d, "; "), c.want)
		}
	}
}
