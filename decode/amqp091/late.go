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
	// lent is the buffer a caller lent (Lend): retagged summaries are
	// written there first.
	lent byteSlab
}

// Lend gives the Summarizer b's spare room (b[len(b):cap(b)]) for the
// delivery summaries it makes from now on, before memory of its own, and
// returns the buffer lent before, holding those it wrote. Nothing but
// their units refers to these (the Summarizer keeps the summary each is
// made from apart): a caller that knows when the units are done with
// (read, which writes them in batches) may reuse the buffer then, and
// a consumer's stream of deliveries, a summary each, then takes no
// fresh memory. The fanout's 35 MB of summaries did, a fault and a
// clearing a page (its read: 37 -> 24 MB of anonymous memory at its
// peak). Lend(nil) takes the buffer back.
func (z *Summarizer) Lend(b []byte) []byte {
	prev := z.lent.buf
	z.lent.buf = b
	return prev
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
	if tag, n, ok := t.matches(p); ok {
		slab := &z.slab
		if cap(z.lent.buf)-len(z.lent.buf) >= n {
			slab = &z.lent
		}
		u.Summary = slab.commit(t.appendRetagged(slab.reserve(n), tag))
		// Repeated, the method's bytes are those the summary t keeps
		// was made of: a retagged one may be in a lent buffer, which
		// the Summarizer must not hand out again.
		*last = lastSummary{payload: t.payload, summary: t.summary}
		return
	}
	var mark tagMark
	z.scratch = appendMethodSummaryAt(z.scratch[:0], info, p[4:], &mark)
	u.Summary = z.slab.text(z.scratch)
	if mark.at >= 0 {
		*t = taggedSummary{payload: p, summary: u.Summary, at: 4 + mark.at, from: mark.from, to: mark.to}
	} else {
		*t = taggedSummary{} // no tag: nothing to retag from
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

// matches reports whether p is t's payload but for the delivery-tag,
// with the tag and the length of its summary (t's with the tag's
// digits replaced).
func (t *taggedSummary) matches(p []byte) (tag uint64, n int, ok bool) {
	q, at := t.payload, t.at
	if t.summary == "" || len(p) != len(q) || string(p[:at]) != string(q[:at]) || string(p[at+8:]) != string(q[at+8:]) {
		return 0, 0, false
	}
	tag = binary.BigEndian.Uint64(p[at:])
	return tag, t.from + decimalDigits(tag) + len(t.summary) - t.to, true
}

// appendRetagged appends t's summary with tag's digits in place of its
// own.
func (t *taggedSummary) appendRetagged(b []byte, tag uint64) []byte {
	b = append(b, t.summary[:t.from]...)
	b = strconv.AppendUint(b, tag, 10)
	return append(b, t.summary[t.to:]...)
}

// decimalDigits is how many digits v has in base 10.
func decimalDigits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
