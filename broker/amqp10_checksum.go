package broker

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// Checksums at the broker (Config.VerifyChecksums, ChecksumPublish). A
// message's x-opt-crc-32 or x-opt-adler-32 footer annotation is checked
// with decode/amqp10's own verification (Message.VerifyChecksum, the code
// the decoder shows verdicts with) over the bare message as it arrived,
// and again over the stored bytes as they are about to be delivered to a
// 1.0 consumer: a mismatch on arrival was damage before the broker, one
// seen only on delivery damage inside it. Each mismatch is kept (the latest
// checksumRecent, for the broker panel) and said on the connection's tap
// as a "broker" note, a warning unit in every output. A message whose
// checksum does not match is still routed: the broker reports, it does
// not judge. ChecksumPublish adds a footer to a message published without
// one; the footer is not part of the bare message, so the bare message
// stays as it arrived.

// checksumRecent is how many mismatches the broker keeps for its panel.
const checksumRecent = 64

// checksumLog is what the broker's checksum verification found.
type checksumLog struct {
	verified, mismatches, added atomic.Uint64
	mu                          sync.Mutex
	recent                      []state.ChecksumMismatch
}

// Checksums implements state.ChecksumSource.
func (b *Broker) Checksums() state.Checksums {
	l := &b.checks10
	out := state.Checksums{Verifying: b.cfg.VerifyChecksums, Publishing: b.cfg.ChecksumPublish,
		Verified: l.verified.Load(), Mismatches: l.mismatches.Load(), Added: l.added.Load()}
	l.mu.Lock()
	out.Recent = append([]state.ChecksumMismatch(nil), l.recent...)
	l.mu.Unlock()
	return out
}

var _ state.ChecksumSource = (*Broker)(nil)

// checkArrival verifies the checksum of message b (parsed in pm) as the
// link's publisher sent it.
func (l *link10) checkArrival(b []byte, pm *amqp10.Message, exchange string) {
	c := l.s.cn.c
	ck := pm.VerifyChecksum(b)
	if ck.Status == decode.ChecksumAbsent {
		return
	}
	c.b.checks10.verified.Add(1)
	if ck.Status == decode.ChecksumMismatch {
		c.checksumMismatch(state.ChecksumMismatch{Where: "arrival", Link: l.name, Exchange: exchange,
			MessageID: pm.MessageID(b)}, ck, true)
	}
}

// checkDelivery verifies the checksum of a stored 1.0 message about to be
// delivered on the link from queue q. It parses only the stored bare
// message and footer.
func (l *link10) checkDelivery(m *queue.Message, q *queueState) {
	var secs [8]amqp10.Section
	pm := amqp10.Message{Sections: secs[:0]}
	if amqp10.ParseMessage(m.Body, &pm) != nil {
		return
	}
	ck := pm.VerifyChecksum(m.Body)
	if ck.Status == decode.ChecksumAbsent {
		return
	}
	c := l.s.cn.c
	c.b.checks10.verified.Add(1)
	if ck.Status == decode.ChecksumMismatch {
		c.checksumMismatch(state.ChecksumMismatch{Where: "delivery", Link: l.name, Queue: q.name,
			MessageID: pm.MessageID(m.Body)}, ck, false)
	}
}

// checksumMismatch records a mismatch found on connection c and says it
// on the tap, on the direction the message travelled (fromClient).
func (c *conn) checksumMismatch(mm state.ChecksumMismatch, ck decode.Checksum, fromClient bool) {
	mm.At = time.Now()
	mm.Connection = c.name
	mm.Algorithm, mm.Expected, mm.Actual = ck.Algorithm, ck.Expected, ck.Actual
	if c.vh != nil {
		mm.VHost = c.vh.name
	}
	if c.flow != nil {
		mm.Flow = c.flow.Flow().ID
	}
	l := &c.b.checks10
	l.mismatches.Add(1)
	l.mu.Lock()
	if len(l.recent) == checksumRecent {
		copy(l.recent, l.recent[1:])
		l.recent = l.recent[:checksumRecent-1]
	}
	l.recent = append(l.recent, mm)
	l.mu.Unlock()
	msg := checksumNote(mm)
	c.logf(msg)
	if n, ok := any(c.b.tap).(tapNoter); ok && c.flow != nil && c.b.tap != nil {
		n.Note(c.flow, fromClient, noteBroker, msg)
	}
}

// noteBroker is the kind of the tap's notes the broker makes (the
// pipeline's capture.NoteBroker).
const noteBroker = "broker"

// tapNoter is the tap's way to put a note among a connection's units,
// where the tap has one.
type tapNoter interface {
	Note(f *capture.DecoupledFlow, fromA bool, kind, msg string)
}

// tapNotes reports whether the broker's tap takes notes.
func (b *Broker) tapNotes() bool {
	_, ok := any(b.tap).(tapNoter)
	return ok && b.tap != nil
}

// checksumNote is the words of a mismatch on the tap and in the log.
func checksumNote(mm state.ChecksumMismatch) string {
	s := "checksum mismatch on " + mm.Where + ": " + mm.Algorithm + " expected 0x" + hex32(mm.Expected) +
		", the bare message's is 0x" + hex32(mm.Actual)
	if mm.MessageID != "" {
		s += "; message-id " + strconv.Quote(mm.MessageID)
	}
	switch {
	case mm.Where == "arrival" && mm.Exchange != "":
		s += "; published to exchange " + strconv.Quote(mm.Exchange)
	case mm.Where == "arrival":
		s += "; published to the default exchange"
	default:
		s += "; delivered from queue " + strconv.Quote(mm.Queue)
	}
	if mm.Link != "" {
		s += " on link " + strconv.Quote(mm.Link)
	}
	if mm.Where == "arrival" {
		return s + " (as the publisher sent it)"
	}
	return s + " (as the broker sends it)"
}

func hex32(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return s
}

// checksumFooter returns the footer to add to message b (parsed in pm)
// under ChecksumPublish: nil when it is off or the message has a footer.
func (l *link10) checksumFooter(b []byte, pm *amqp10.Message) []byte {
	alg := l.s.cn.c.b.cfg.ChecksumPublish
	if alg == "" || pm.Footer >= 0 || pm.BareStart == pm.BareEnd {
		return nil
	}
	l.s.cn.c.b.checks10.added.Add(1)
	return amqp10.AppendChecksumFooter(nil, alg, b[pm.BareStart:pm.BareEnd])
}
