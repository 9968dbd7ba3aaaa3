package output

import (
	"io"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// Text writes one line per unit, like tshark's summary lines:
//
//	number  seconds-since-first-unit  conn  dir  channel  summary
//
// dir is F (client to server), B (server to client) or B*/F* for a unit
// carried inside another (PostgreSQL CompressedMessages). Errors and
// warnings follow the summary in brackets.
type Text struct {
	w     io.Writer
	buf   []byte
	first time.Time
	begun bool
}

// NewText returns a text writer on w. Call Flush at the end.
func NewText(w io.Writer) *Text { return &Text{w: w, buf: make([]byte, 0, 64<<10)} }

// Unit appends u's line.
func (t *Text) Unit(u *decode.Unit) error {
	if !t.begun {
		t.first, t.begun = u.Time(), true
	}
	t.buf = AppendText(t.buf, u, t.first)
	if len(t.buf) >= 60<<10 {
		return t.Flush()
	}
	return nil
}

// AppendText appends u's line (with its newline); times are printed
// relative to first. A [TextEncoder] writes the same bytes faster for a
// sequence of units.
func AppendText(b []byte, u *decode.Unit, first time.Time) []byte {
	e := TextEncoder{First: first, direct: true}
	return e.Append(b, u)
}

// TextEncoder renders units as [AppendText] does, remembering the time and
// connection columns that consecutive units share (a segment of small
// frames completes many units at one time). One per goroutine: it is not
// safe for concurrent use.
type TextEncoder struct {
	// First is the time the seconds column counts from.
	First time.Time
	// The seconds column of the time ns counted from first.
	first time.Time
	ns    int64
	secs  []byte
	// The connection column of conn (numbered id then).
	conn    *decode.Conn
	connID  int
	connCol []byte
	// The number column of unit n: consecutive units are numbered one
	// after the other, so the next number is the last one's digits
	// incremented in place.
	n    int
	nCol []byte
	// The channel column of channel ch.
	ch    uint16
	chCol []byte
	// clean holds the last summaries found to need no escaping, replaced
	// in turn: a decoder hands the same string to the units whose
	// summaries repeat (the same pointer and length are the same bytes:
	// strings are immutable), and a connection's repeating summaries come
	// interleaved (a publish, its header, its body), so one would miss.
	clean     [cleanWays]string
	cleanNext int
	// pre holds the columns before the summary: the number of unit preN
	// (while it has seven digits at most), then those fixed keeps, all at
	// their narrowest, and what they were made of: the time
	// preNs counted from preFirst (preSecs: held), the connection, the
	// channel (-1: none; -2: not yet).
	pre       [7 + prefixLen]byte
	preN      int
	preInit   bool
	preNs     int64
	preFirst  time.Time
	preSecs   bool
	preConn   *decode.Conn
	preConnID int
	preCh     int32
	// direct writes the columns straight into the line (AppendText: one
	// unit, nothing to share, nothing to allocate).
	direct bool
}

// Append appends u's line (with its newline).
func (e *TextEncoder) Append(b []byte, u *decode.Unit) []byte {
	if !e.direct && e.fixed(u) {
		// The columns before the summary, kept as one array: a copy of
		// 36 bytes where appending them one by one took a third of a
		// line's time. The number is counted up in place, as nCol is.
		if u.N > 0 && u.N <= 9999999 {
			if u.N != e.preN+1 || e.preN <= 0 || !incDecimal(e.pre[:7]) {
				var tmp [16]byte
				copy(e.pre[:7], appendPadInt(tmp[:0], u.N, 7))
			}
			e.preN = u.N
			n := len(b)
			b = slices.Grow(b, len(e.pre))[:n+len(e.pre)]
			*(*[7 + prefixLen]byte)(b[n:]) = e.pre
		} else {
			b = e.appendNumber(b, u.N)
			n := len(b)
			b = slices.Grow(b, prefixLen)[:n+prefixLen]
			*(*[prefixLen]byte)(b[n:]) = [prefixLen]byte(e.pre[7:])
		}
	} else {
		b = e.appendColumns(b, u)
	}
	if !e.direct && e.isClean(u.Summary) {
		b = append(b, u.Summary...)
	} else {
		n := len(b)
		b = appendPrintable(b, u.Summary)
		if !e.direct && len(b)-n == len(u.Summary) {
			e.clean[e.cleanNext] = u.Summary
			e.cleanNext = (e.cleanNext + 1) % cleanWays
		}
	}
	for _, w := range u.Warnings() {
		b = append(b, " [warning: "...)
		b = appendPrintable(b, w)
		b = append(b, ']')
	}
	if u.Err() != "" {
		b = append(b, " [error: "...)
		b = appendPrintable(b, u.Err())
		b = append(b, ']')
	}
	return append(b, '\n')
}

// prefixLen is the width of the columns between the number and the
// summary when each is at its narrowest: a space, seconds 11, a space,
// connection 4, a space, direction and nesting 2, a space, channel 7, a
// space.
const prefixLen = 1 + 11 + 1 + 4 + 1 + 2 + 1 + 7 + 1

// fixed brings e.pre up to date for u and reports whether it holds u's
// columns between the number and the summary: false when one of them is
// wider than its narrowest (a time past 9,999 s, a connection past
// 9,999), which appendColumns then writes.
func (e *TextEncoder) fixed(u *decode.Unit) bool {
	if !e.preInit {
		for i := range e.pre {
			e.pre[i] = ' '
		}
		e.preN, e.preNs, e.preConn, e.preConnID, e.preCh = 0, 0, nil, -1, -2
		e.preSecs = false
		e.preInit = true
	}
	if ns := u.UnixNano(); ns != e.preNs || e.First != e.preFirst || !e.preSecs {
		var tmp [32]byte
		secs := appendSeconds(tmp[:0], u.Time().Sub(e.First))
		if e.preSecs = len(secs) == 11; !e.preSecs {
			return false
		}
		e.preNs, e.preFirst = ns, e.First
		copy(e.pre[8:19], secs)
	}
	id := 0
	if u.Conn != nil {
		id = u.Conn.ID
	}
	if c := u.Conn; c != e.preConn || id != e.preConnID {
		if id < 0 || id > 9999 {
			return false
		}
		var tmp [16]byte
		copy(e.pre[20:24], appendPadInt(tmp[:0], id, 4))
		e.preConn, e.preConnID = c, id
	}
	e.pre[25] = 'F'
	if u.Dir == decode.DirB {
		e.pre[25] = 'B'
	}
	e.pre[26] = ' '
	if u.Parent != nil {
		e.pre[26] = '*'
	}
	ch := int32(-1)
	if u.HasChannel {
		ch = int32(u.Channel)
	}
	if ch != e.preCh {
		if ch < 0 {
			copy(e.pre[28:35], "-      ")
		} else {
			var tmp [16]byte
			copy(e.pre[28:35], appendChannel(tmp[:0], uint16(ch)))
		}
		e.preCh = ch
	}
	return true
}

// appendNumber appends the number column of unit n from nCol, counted
// up in place from the last one's when n follows it.
func (e *TextEncoder) appendNumber(b []byte, n int) []byte {
	if n <= 0 || n != e.n+1 || !incDecimal(e.nCol) {
		e.nCol = appendPadInt(e.nCol[:0], n, 7)
	}
	e.n = n
	return append(b, e.nCol...)
}

// appendColumns appends the columns before the summary, one by one.
func (e *TextEncoder) appendColumns(b []byte, u *decode.Unit) []byte {
	if e.direct {
		b = appendPadInt(b, u.N, 7)
	} else {
		b = e.appendNumber(b, u.N)
	}
	b = append(b, ' ')
	if e.direct {
		b = appendSeconds(b, u.Time().Sub(e.First))
	} else {
		if ns := u.UnixNano(); ns != e.ns || e.First != e.first || len(e.secs) == 0 {
			e.ns, e.first = ns, e.First
			e.secs = appendSeconds(e.secs[:0], u.Time().Sub(e.First))
		}
		b = append(b, e.secs...)
	}
	b = append(b, ' ')
	id := 0
	if u.Conn != nil {
		id = u.Conn.ID
	}
	if e.direct {
		b = appendPadInt(b, id, 4)
	} else {
		if c := u.Conn; c != e.conn || id != e.connID || len(e.connCol) == 0 {
			e.conn, e.connID = c, id
			e.connCol = appendPadInt(e.connCol[:0], id, 4)
		}
		b = append(b, e.connCol...)
	}
	b = append(b, ' ')
	b = append(b, u.Dir.String()...)
	if u.Parent != nil {
		b = append(b, '*')
	} else {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	if u.HasChannel && e.direct {
		b = appendChannel(b, u.Channel)
	} else if u.HasChannel {
		if u.Channel != e.ch || len(e.chCol) == 0 {
			e.ch, e.chCol = u.Channel, appendChannel(e.chCol[:0], u.Channel)
		}
		b = append(b, e.chCol...)
	} else {
		b = append(b, "-      "...)
	}
	b = append(b, ' ')
	return b
}

// cleanWays is how many summaries a TextEncoder remembers as clean: a
// message's three frames, and a fourth for the other direction's.
const cleanWays = 4

// isClean reports whether s is one of the summaries remembered as needing
// no escaping: the same string, not merely the same bytes.
func (e *TextEncoder) isClean(s string) bool {
	p := unsafe.StringData(s)
	for i := range e.clean {
		if len(s) == len(e.clean[i]) && p == unsafe.StringData(e.clean[i]) {
			return true
		}
	}
	return false
}

// Flush writes what is buffered.
func (t *Text) Flush() error {
	if len(t.buf) == 0 {
		return nil
	}
	_, err := t.w.Write(t.buf)
	t.buf = t.buf[:0]
	return err
}

// appendChannel appends the channel column: "ch" and the number, padded
// to seven.
func appendChannel(b []byte, ch uint16) []byte {
	b = append(b, "ch"...)
	n := len(b)
	b = strconv.AppendUint(b, uint64(ch), 10)
	for i := len(b) - n; i < 5; i++ {
		b = append(b, ' ')
	}
	return b
}

// incDecimal adds one to the space-padded decimal number in col, in
// place; false when it has no room for another digit or holds no number.
func incDecimal(col []byte) bool {
	for i := len(col) - 1; i >= 0; i-- {
		switch c := col[i]; {
		case c == '9':
			col[i] = '0'
		case c >= '0' && c < '9':
			col[i] = c + 1
			return true
		case c == ' ' && i < len(col)-1:
			col[i] = '1'
			return true
		default:
			return false
		}
	}
	return false
}

func appendPadInt(b []byte, v, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(v), 10)
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendSeconds renders d as seconds with microsecond precision, width 11.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	us := int64(d / time.Microsecond)
	sec, frac := us/1e6, us%1e6
	var tmp [24]byte
	s := strconv.AppendInt(tmp[:0], sec, 10)
	for i := len(s) + 7; i < 11; i++ {
		b = append(b, ' ')
	}
	b = append(b, s...)
	b = append(b, '.')
	f := strconv.AppendInt(tmp[:0], frac, 10)
	for i := len(f); i < 6; i++ {
		b = append(b, '0')
	}
	return append(b, f...)
}

// appendPrintable appends s with control characters escaped (\n, \xNN), so
// one unit is always one line whatever a peer put in its strings.
func appendPrintable(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		// Eight bytes at a time while none is a control character (most
		// summaries have none): x-0x20 borrows into a byte's top bit for
		// bytes below 0x20, (x^0x7f)-1 for 0x7f; bytes of 0xa0 and over
		// set it too and are looked at one by one below.
		for i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			const lo, hi = 0x0101010101010101, 0x8080808080808080
			if ((x-lo*0x20)|((x^lo*0x7f)-lo))&hi != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c != 0x7f {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}
