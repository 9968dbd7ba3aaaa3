package tshark

import (
	"fmt"
	"slices"
)

// Diff compares two lists of frames direction by direction (same Stream
// and Dir), on channel and type in order, and describes the first
// difference in each direction and any direction only one list has. It
// returns nil when they agree. Packet numbers, lengths and Inferred are not
// compared: the two sides may count bytes or report frames at different
// packets.
//
// To compare wiretap's units, make a Frame of each with Stream set to the
// connection number minus one (both number connections in order of first
// packet), Dir, Proto, Channel and Type.
func Diff(want, got []Frame) []string {
	ws, gs := Sequences(want), Sequences(got)
	var keys []Key
	for k := range ws {
		keys = append(keys, k)
	}
	for k := range gs {
		if _, ok := ws[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if a.Stream != b.Stream {
			return a.Stream - b.Stream
		}
		return int(a.Dir) - int(b.Dir)
	})
	var out []string
	for _, k := range keys {
		w, g := ws[k], gs[k]
		n := min(len(w), len(g))
		i := 0
		for i < n && w[i].Channel == g[i].Channel && w[i].Type == g[i].Type {
			i++
		}
		switch {
		case i < n:
			out = append(out, fmt.Sprintf("stream %d %c frame %d: want ch%d %s (packet %d), got ch%d %s (packet %d)",
				k.Stream, k.Dir, i+1, w[i].Channel, w[i].Type, w[i].Packet, g[i].Channel, g[i].Type, g[i].Packet))
		case len(w) > n:
			out = append(out, fmt.Sprintf("stream %d %c: %d frames missing from ch%d %s (packet %d) on",
				k.Stream, k.Dir, len(w)-n, w[n].Channel, w[n].Type, w[n].Packet))
		case len(g) > n:
			out = append(out, fmt.Sprintf("stream %d %c: %d extra frames from ch%d %s (packet %d) on",
				k.Stream, k.Dir, len(g)-n, g[n].Channel, g[n].Type, g[n].Packet))
		}
	}
	return out
}
