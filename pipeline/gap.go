package pipeline

import (
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// GapBecause implements capture.GapExplainer: bytes a live source did not
// hand on (a decoder behind the traffic) are shown as a "gap" unit whose
// warning says how many and why, in every output, before the connection's
// decoder is told of the gap as for any other.
func (p *Pipeline) GapBecause(f *capture.Flow, fromA bool, n int, reason string, t time.Time) {
	p.seen(t)
	c := p.state(f)
	aClient := f.SYN // until the protocol is settled, trust the SYN
	if c.decided {
		aClient = c.aClient
	}
	u := &decode.Unit{Conn: c.c, Proto: c.c.Proto, Type: "gap", Summary: "gap", Dir: decode.DirB}
	if fromA == aClient {
		u.Dir = decode.DirF
	}
	u.SetTime(t)
	what := "bytes"
	if n >= 0 {
		what = strconv.Itoa(n) + " bytes"
	}
	u.Warn(what + " not decoded: " + reason)
	p.emit(u)
	p.Gap(f, fromA, n, t)
}

var _ capture.GapExplainer = (*Pipeline)(nil)
