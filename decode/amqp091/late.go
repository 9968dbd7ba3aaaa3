package amqp091

import (
	"encoding/binary"
	"strconv"

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
	last [2]lastSummary
	// tagged holds the last summary made in each direction of a method
	// with a delivery-tag, and where the tag is: a method whose bytes
	// are the same but for the tag (a consumer's stream of deliveries)
	// takes that summary with the tag's digits replaced, rather than
	// having its arguments read again.
	tagged  [2]taggedSummary
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
	t := &z.tagged[u.Dir&1]
	if s, ok := t.retag(z.scratch[:0], p); ok {
		z.scratch = s
		u.Summary = z.slab.text(s)
		t.payload, t.summary, t.to = p, u.Summary, len(s)-(len(t.summary)-t.to)
	} else {
		var mark tagMark
		z.scratch = appendMethodSummaryAt(z.scratch[:0], info, p[4:], &mark)
		u.Summary = z.slab.text(z.scratch)
		if mark.at >= 0 {
			*t = taggedSummary{payload: p, summary: u.Summary, at: 4 + mark.at, from: mark.from, to: mark.to}
		} else {
			*t = taggedSummary{} // no tag: nothing to retag from
		}
	}
	*last = lastSummary{payload: p, summary: u.Summary}
}

// taggedSummary is the summary of a method payload with a delivery-tag:
// the tag's eight bytes are payload[at:at+8], its digits summary[from:to].
type taggedSummary struct {
	payload      []byte
	summary      string
	at, from, to int
}

// retag appends to dst the summary of p when p is t's payload but for
// the delivery-tag: t's summary with the tag's digits replaced.
func (t *taggedSummary) retag(dst, p []byte) ([]byte, bool) {
	q, at := t.payload, t.at
	if t.summary == "" || len(p) != len(q) || string(p[:at]) != string(q[:at]) || string(p[at+8:]) != string(q[at+8:]) {
		return dst, false
	}
	dst = append(dst, t.summary[:t.from]...)
	dst = strconv.AppendUint(dst, binary.BigEndian.Uint64(p[at:]), 10)
	return append(dst, t.summary[t.to:]...), true
}
