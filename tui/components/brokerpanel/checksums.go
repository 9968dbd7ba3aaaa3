package brokerpanel

import (
	"strconv"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// checksumRows is how many of the latest checksum mismatches the overview
// lists.
const checksumRows = 8

// checksums adds the overview's checksum lines when the broker verifies
// AMQP 1.0 checksums or adds them (--verify-checksums,
// --checksum-publish): the counts, then the latest mismatches, newest
// first, each with where it was found, the message and its connection.
func (m *Model) checksums(line func(label, v string)) {
	c := m.snap.Checksums
	if c == nil || (!c.Verifying && c.Publishing == "") {
		return
	}
	sy := m.sty
	v := ""
	if c.Verifying {
		v = "verified " + utoa(c.Verified) + "  mismatches " + utoa(c.Mismatches)
		if c.Mismatches > 0 {
			v = "verified " + utoa(c.Verified) + "  " + sy.Warning.Render(sy.Sym.Warning+" mismatches "+utoa(c.Mismatches))
		}
	}
	if c.Publishing != "" {
		if v != "" {
			v += "  "
		}
		v += c.Publishing + " footers added " + utoa(c.Added)
	}
	line("Checksums", v)
	for i := len(c.Recent) - 1; i >= 0 && i >= len(c.Recent)-checksumRows; i-- {
		mm := c.Recent[i]
		m.add(pad("", 12)+sy.Warning.Render(sy.Sym.Warning+" "+mismatchText(mm)), "", m.connJumpFlow(mm))
	}
}

// mismatchText is one mismatch on a line.
func mismatchText(mm state.ChecksumMismatch) string {
	s := mm.At.Format("15:04:05") + " " + mm.Where + " " + mm.Algorithm + " expected " + hex8(mm.Expected) + " got " + hex8(mm.Actual)
	if mm.MessageID != "" {
		s += " message-id " + name(mm.MessageID)
	}
	if mm.Where == "arrival" {
		s += " to exchange " + exchangeName(mm.Exchange)
	} else {
		s += " from queue " + name(mm.Queue)
	}
	s += " conn " + name(mm.Connection)
	if mm.Flow > 0 {
		s += " (" + strconv.Itoa(mm.Flow) + ")"
	}
	return s
}

// connJumpFlow lets enter on a mismatch show its connection's units.
func (m *Model) connJumpFlow(mm state.ChecksumMismatch) *JumpMsg {
	if mm.Flow <= 0 {
		return nil
	}
	return &JumpMsg{Connection: mm.Connection, Flow: mm.Flow}
}

func hex8(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return "0x" + s
}
