package amqp091

import (
	"encoding/binary"

	"github.com/wiretap-dev/wiretap/decode"
)

// Summarizer makes the summaries a decoder left to be made later
// ([decode.Options.LateSummaries]): those of methods outside the
// connection class, which depend on nothing but the method's arguments.
// It keeps no unit, only the last summary made in each direction, which
// it hands again to the next method whose bytes are the same (as the
// decoder does: on a busy connection most summaries repeat). It is not
// safe for concurrent use; one Summarizer serves any number of
// connections.
type Summarizer struct {
	// last holds the last summary made in each direction and the method's
	// class, id and arguments it was made of.
	last    [2]lastSummary
	scratch []byte
	// slab is what summaries are carved from: a string each would cost
	// an allocation a unit.
	slab byteSlab
}

// SummaryLater is the summary a decoder gives a unit whose summary it
// left to a [Summarizer]: what a consumer that skipped the pipeline's
// stage would show.
const SummaryLater = "(summary left to a later stage)"

// Summarize fills in u's summary when its decoder left it to be made
// later, and does nothing to any other unit.
func (z *Summarizer) Summarize(u *decode.Unit) {
	if u.Summary != SummaryLater || u.Proto != decode.ProtoAMQP091 {
		return
	}
	r := u.Raw
	if len(r) < FrameHeaderSize+4+1 || FrameType(r[0]) != FrameMethod {
		return
	}
	p := r[FrameHeaderSize : len(r)-1]
	class, id := binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])
	info := LookupMethod(class, id)
	if info == nil {
		return // not the decoder's doing: it leaves no such unit
	}
	last := &z.last[u.Dir&1]
	if sum, ok := last.of(p); ok {
		u.Summary = sum
		return
	}
	z.scratch = appendMethodSummary(z.scratch[:0], info, p[4:])
	u.Summary = z.slab.text(z.scratch)
	*last = lastSummary{payload: p, summary: u.Summary}
}
