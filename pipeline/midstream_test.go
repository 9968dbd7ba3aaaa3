package pipeline

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// TestMidstreamAMQP10: an AMQP 1.0 connection on RabbitMQ's 0-9-1 port,
// captured from the broker's open on (no SASL or AMQP header, no SYN), is
// decoded as AMQP 1.0 by its frames, and gives the same performatives each
// way as the whole capture it was cut from gives from that point on.
func TestMidstreamAMQP10(t *testing.T) {
	read := func(path string) []*decode.Unit {
		p, us := collect(Config{})
		if _, err := capture.ReadFile(path, p, nil); err != nil {
			t.Fatal(err)
		}
		p.Finish()
		return *us
	}
	perfs := func(us []*decode.Unit, dir decode.Dir) []string {
		var out []string
		for _, u := range us {
			if u.Dir == dir && u.Proto == decode.ProtoAMQP10 && u.HasChannel {
				out = append(out, "ch"+strconv.Itoa(int(u.Channel))+" "+u.Type)
			}
		}
		return out
	}
	whole := read("../testdata/amqp10-proton.pcapng")
	cut := read("../testdata/damaged-midstream-amqp10.pcapng")
	for _, u := range cut {
		if u.Proto != decode.ProtoAMQP10 {
			t.Fatalf("unit %d (%s %q) is %v, want every unit AMQP 1.0", u.N, u.Type, u.Summary, u.Proto)
		}
	}
	for _, dir := range []decode.Dir{decode.DirF, decode.DirB} {
		w, c := perfs(whole, dir), perfs(cut, dir)
		if len(c) == 0 || len(c) > len(w) || !slices.Equal(w[len(w)-len(c):], c) {
			t.Errorf("dir %v: mid-stream %d frames %q,\nnot the tail of the whole capture's %d %q", dir, len(c), c, len(w), w)
		}
	}
}

// TestMidstreamNoFrameReported: the same capture forced to AMQP 0-9-1
// (--decode-as 5672=amqp0-9-1) has no 0-9-1 frame boundary anywhere; each
// direction's bytes are reported as one malformed unit up to the end of the
// stream, instead of nothing at all.
func TestMidstreamNoFrameReported(t *testing.T) {
	p, us := collect(Config{DecodeAs: map[uint16]decode.Proto{5672: decode.ProtoAMQP091}})
	if _, err := capture.ReadFile("../testdata/damaged-midstream-amqp10.pcapng", p, nil); err != nil {
		t.Fatal(err)
	}
	p.Finish()
	dirs := map[decode.Dir]int{}
	for _, u := range *us {
		if u.Proto != decode.ProtoAMQP091 || u.Type != "malformed" || !strings.Contains(u.Err(), "to the end of the stream") {
			t.Errorf("unit %d: %v %s %q %q", u.N, u.Proto, u.Type, u.Summary, u.Err())
			continue
		}
		dirs[u.Dir] += u.Len
	}
	if dirs[decode.DirF] == 0 || dirs[decode.DirB] == 0 {
		t.Fatalf("bytes reported each way: %v; want both directions'", dirs)
	}
}
