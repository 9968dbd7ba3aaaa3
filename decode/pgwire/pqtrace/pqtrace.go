package pqtrace

import (
	"bufio"
	"encoding/binary"
	"io"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

// Options change what the printer writes.
type Options struct {
	// Timestamps adds libpq's timestamp column ("2006-01-02
	// 15:04:05.000000", local time) before the direction.
	Timestamps bool
	// Libpq15 reproduces libpq 15 byte for byte, including the lines it
	// gets wrong: CopyData without its contents followed by a "mismatched
	// message length" line, and the same for Authentication with data.
	Libpq15 bool
}

// Printer writes units as libpq's trace lines. Units must arrive in the
// pipeline's order: a CompressedMessages before the units it carries.
type Printer struct {
	w    *bufio.Writer
	opt  Options
	line []byte

	held     *decode.Unit // CompressedMessages waiting for its children
	heldLine []byte

	// inCall marks connections between a FunctionCall and its
	// ReadyForQuery, which libpq 15's pqFunctionCall3 consumes untraced.
	inCall map[*decode.Conn]bool
}

// New returns a Printer writing to w.
func New(w io.Writer, opt Options) *Printer {
	return &Printer{w: bufio.NewWriter(w), opt: opt}
}

// Print writes the lines of u (none for units libpq does not trace: the
// one-byte SSL/GSS answers, encrypted streams, truncated messages, and
// other protocols).
func (p *Printer) Print(u *decode.Unit) error {
	if p.held != nil && u.Parent != p.held {
		if err := p.release(); err != nil {
			return err
		}
	}
	if u.Proto != decode.ProtoPgSQL {
		return nil
	}
	if u.Type == "CompressedMessages" && u.Parent == nil {
		p.held = u
		p.heldLine = AppendUnit(p.heldLine[:0], u, p.opt)
		return nil
	}
	if p.opt.Libpq15 && len(u.Raw) > 0 && u.Parent == nil {
		switch {
		case u.Dir == decode.DirF && u.Raw[0] == 'F' && u.Type == "FunctionCall":
			if p.inCall == nil {
				p.inCall = map[*decode.Conn]bool{}
			}
			p.inCall[u.Conn] = true
		case u.Dir == decode.DirB && u.Raw[0] == 'Z' && p.inCall[u.Conn]:
			delete(p.inCall, u.Conn)
			return nil
		}
	}
	p.line = AppendUnit(p.line[:0], u, p.opt)
	_, err := p.w.Write(p.line)
	return err
}

func (p *Printer) release() error {
	_, err := p.w.Write(p.heldLine)
	p.held = nil
	p.heldLine = p.heldLine[:0]
	return err
}

// Flush writes a pending CompressedMessages line and flushes the writer.
func (p *Printer) Flush() error {
	if p.held != nil {
		if err := p.release(); err != nil {
			return err
		}
	}
	return p.w.Flush()
}

// FlushOutput writes the lines printed so far but keeps a CompressedMessages
// whose B* lines may still come (live sources flush this way now and then).
func (p *Printer) FlushOutput() error { return p.w.Flush() }

// Holding reports whether a CompressedMessages line is waiting for the B*
// lines of the units it carries.
func (p *Printer) Holding() bool { return p.held != nil }

// AppendUnit appends the trace line(s) of one unit to dst, newline
// included; it appends nothing for units libpq does not trace.
func AppendUnit(dst []byte, u *decode.Unit, opt Options) []byte {
	raw := u.Raw
	if u.Len > len(raw) || len(raw) == 0 {
		return dst
	}
	var t tracer
	t.b = dst
	t.start = len(dst)
	t.opt = opt
	if opt.Timestamps {
		tm := u.Time().Local()
		t.b = tm.AppendFormat(t.b, "2006-01-02 15:04:05")
		t.b = append(t.b, '.')
		t.b = appendPad(t.b, int64(tm.Nanosecond()/int(time.Microsecond)), 6)
		t.b = append(t.b, '\t')
	}
	switch u.Type {
	case "StartupMessage", "CancelRequest", "SSLRequest", "GSSENCRequest":
		return t.untyped(u)
	case "SSLResponse", "GSSENCResponse", "TLS", "GSSAPI", "Truncated":
		return dst
	}
	// Only whole messages: not the headers of undecodable ones.
	if _, l, ok := pgwire.ReadHeader(raw); !ok || l+1 != int64(len(raw)) {
		return dst
	}
	return t.typed(u)
}

func appendPad(b []byte, v int64, width int) []byte {
	s := strconv.AppendInt(nil, v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// tracer mirrors fe-trace.c: a cursor over the message with a print
// function per wire type. Reads past the end stop printing instead of
// reading garbage as libpq would.
type tracer struct {
	b     []byte
	opt   Options
	m     []byte // whole message, type byte included
	start int    // len(dst) when the unit began
	cur   int
	bad   bool
}

// formatsAndValues traces Bind's and FunctionCall's parameter format
// codes and parameter values (length-prefixed, -1 for NULL).
func (t *tracer) formatsAndValues() {
	n := t.int16()
	for i := 0; i < n && !t.bad; i++ {
		t.int16()
	}
	n = t.int16()
	for i := 0; i < n && !t.bad; i++ {
		if l := t.int32(); l != -1 {
			t.nchar(l, false)
		}
	}
}

func (t *tracer) ok(n int) bool {
	if t.bad || t.cur+n > len(t.m) || n < 0 {
		t.bad = true
		return false
	}
	return true
}

func isprint(c byte) bool { return c >= 0x20 && c <= 0x7e }

// hexByte appends "\x%02x".
func hexByte(b []byte, c byte) []byte {
	const digits = "0123456789abcdef"
	return append(b, '\\', 'x', digits[c>>4], digits[c&15])
}

func (t *tracer) byte1() byte {
	if !t.ok(1) {
		return 0
	}
	c := t.m[t.cur]
	t.cur++
	t.b = append(t.b, ' ')
	if isprint(c) {
		t.b = append(t.b, c)
	} else {
		t.b = hexByte(t.b, c)
	}
	return c
}

func (t *tracer) int16() int {
	if !t.ok(2) {
		return 0
	}
	// libpq converts through uint16: -1 prints as 65535.
	v := int(binary.BigEndian.Uint16(t.m[t.cur:]))
	t.cur += 2
	t.b = append(t.b, ' ')
	t.b = strconv.AppendInt(t.b, int64(v), 10)
	return v
}

func (t *tracer) int32() int {
	if !t.ok(4) {
		return 0
	}
	v := int(int32(binary.BigEndian.Uint32(t.m[t.cur:])))
	t.cur += 4
	t.b = append(t.b, ' ')
	t.b = strconv.AppendInt(t.b, int64(v), 10)
	return v
}

func (t *tracer) string() {
	if !t.ok(1) {
		return
	}
	end := t.cur
	for end < len(t.m) && t.m[end] != 0 {
		end++
	}
	if end == len(t.m) {
		t.bad = true
		return
	}
	t.b = append(t.b, ' ', '"')
	t.b = append(t.b, t.m[t.cur:end]...)
	t.b = append(t.b, '"')
	t.cur = end + 1
}

// nchar prints n bytes in single quotes, non-printable bytes as \xNN.
func (t *tracer) nchar(n int, allHex bool) {
	if !t.ok(n) {
		return
	}
	t.b = append(t.b, ' ', '\'')
	for _, c := range t.m[t.cur : t.cur+n] {
		if isprint(c) && !allHex {
			t.b = append(t.b, c)
		} else if allHex {
			const digits = "0123456789abcdef"
			t.b = append(t.b, '\\', 'x', digits[c>>4], digits[c&15])
		} else {
			t.b = hexByte(t.b, c)
		}
	}
	t.b = append(t.b, '\'')
	t.cur += n
}

func (t *tracer) name(s string) { t.b = append(t.b, s...); t.b = append(t.b, '\t') }

func (t *tracer) untyped(u *decode.Unit) []byte {
	t.m = u.Raw
	if len(t.m) < 8 || int(binary.BigEndian.Uint32(t.m)) != len(t.m) {
		return t.b[:t.start]
	}
	length := int(int32(binary.BigEndian.Uint32(t.m)))
	t.cur = 4
	t.b = append(t.b, "F\t"...)
	t.b = strconv.AppendInt(t.b, int64(length), 10)
	t.b = append(t.b, '\t')
	switch u.Type {
	case "CancelRequest":
		t.name("CancelRequest")
		t.int32()
		t.int32()
		for t.cur+4 <= len(t.m) {
			t.int32()
		}
	default:
		// libpq 15 knows only CancelRequest by its length; the startup
		// packet, SSLRequest and GSSENCRequest fall to its default case.
		if t.opt.Libpq15 || u.Type != "StartupMessage" {
			t.b = append(t.b, "Unknown message: length is "...)
			t.b = strconv.AppendInt(t.b, int64(length), 10)
			break
		}
		t.name("StartupMessage")
		t.int16()
		t.int16()
		for !t.bad && t.cur < len(t.m) && t.m[t.cur] != 0 {
			t.string()
			t.string()
		}
	}
	return append(t.b, '\n')
}

func (t *tracer) typed(u *decode.Unit) []byte {
	t.m = u.Raw
	id := t.m[0]
	length := int(int32(binary.BigEndian.Uint32(t.m[1:])))
	t.cur = 5
	toServer := u.Dir == decode.DirF
	switch {
	case toServer:
		t.b = append(t.b, 'F')
	case u.Parent != nil:
		t.b = append(t.b, 'B', '*')
	default:
		t.b = append(t.b, 'B')
	}
	t.b = append(t.b, '\t')
	t.b = strconv.AppendInt(t.b, int64(length), 10)
	t.b = append(t.b, '\t')
	full := !t.opt.Libpq15
	switch id {
	case '1':
		t.b = append(t.b, "ParseComplete"...)
	case '2':
		t.b = append(t.b, "BindComplete"...)
	case '3':
		t.b = append(t.b, "CloseComplete"...)
	case 'A':
		t.name("NotificationResponse")
		t.int32()
		t.string()
		t.string()
	case 'B':
		t.name("Bind")
		t.string()
		t.string()
		t.formatsAndValues()
		n := t.int16() // result format codes
		for i := 0; i < n && !t.bad; i++ {
			t.int16()
		}
	case 'c':
		t.b = append(t.b, "CopyDone"...)
	case 'C':
		if toServer {
			t.name("Close")
			t.byte1()
			t.string()
		} else {
			t.name("CommandComplete")
			t.string()
		}
	case 'd':
		// libpq 15 drops COPY data "to reduce the overhead of logging"
		// and then complains about the length it did not consume.
		// Backend CopyData is consumed by getCopyDataMessage, which
		// libpq 15 does not trace at all.
		switch {
		case full:
			t.name("CopyData")
			t.nchar(len(t.m)-t.cur, false)
		case !toServer:
			return t.b[:t.start]
		}
	case 'D':
		if toServer {
			t.name("Describe")
			t.byte1()
			t.string()
		} else {
			t.name("DataRow")
			n := t.int16()
			for i := 0; i < n && !t.bad; i++ {
				if l := t.int32(); l != -1 {
					t.nchar(l, false)
				}
			}
		}
	case 'E':
		if toServer {
			t.name("Execute")
			t.string()
			t.int32()
		} else {
			t.errorNotice("ErrorResponse")
		}
	case 'f':
		t.name("CopyFail")
		t.string()
	case 'F':
		t.name("FunctionCall")
		t.int32()
		t.formatsAndValues()
		t.int16()
	case 'G', 'H':
		if id == 'H' && toServer {
			t.b = append(t.b, "Flush"...)
			break
		}
		if id == 'G' {
			t.name("CopyInResponse")
		} else {
			t.name("CopyOutResponse")
		}
		t.byte1()
		n := t.int16()
		for i := 0; i < n && !t.bad; i++ {
			t.int16()
		}
	case 'I':
		t.b = append(t.b, "EmptyQueryResponse"...)
	case 'K':
		t.name("BackendKeyData")
		t.int32()
		t.int32()
		if full {
			for t.cur < len(t.m) && !t.bad {
				t.nchar(len(t.m)-t.cur, false)
			}
		}
	case 'n':
		t.b = append(t.b, "NoData"...)
	case 'N':
		t.errorNotice("NoticeResponse")
	case 'P':
		t.name("Parse")
		t.string()
		t.string()
		n := t.int16()
		for i := 0; i < n && !t.bad; i++ {
			t.int32()
		}
	case 'p':
		if !full {
			t.b = append(t.b, "Unknown message: 70"...)
			break
		}
		t.name(u.Type)
		switch u.Type {
		case "SASLInitialResponse":
			t.string()
			if l := t.int32(); l != -1 {
				t.nchar(l, false)
			}
		case "PasswordMessage":
			t.string()
		default:
			t.nchar(len(t.m)-t.cur, false)
		}
	case 'Q':
		t.name("Query")
		t.string()
	case 'R':
		if !full {
			// libpq 15 reads authentication requests in PQconnectPoll,
			// which does not trace them.
			return t.b[:t.start]
		}
		t.name("Authentication")
		code := t.int32()
		if full && t.cur < len(t.m) {
			if code == pgwire.AuthSASL {
				for !t.bad && t.cur < len(t.m) && t.m[t.cur] != 0 {
					t.string()
				}
				if t.cur < len(t.m) {
					t.cur++
				}
			} else {
				t.nchar(len(t.m)-t.cur, false)
			}
		}
	case 's':
		t.b = append(t.b, "PortalSuspended"...)
	case 'S':
		if toServer {
			t.b = append(t.b, "Sync"...)
		} else {
			t.name("ParameterStatus")
			t.string()
			t.string()
		}
	case 't':
		t.name("ParameterDescription")
		n := t.int16()
		for i := 0; i < n && !t.bad; i++ {
			t.int32()
		}
	case 'T':
		t.name("RowDescription")
		n := t.int16()
		for i := 0; i < n && !t.bad; i++ {
			t.string()
			t.int32()
			t.int16()
			t.int32()
			t.int16()
			t.int32()
			t.int16()
		}
	case 'v':
		t.name("NegotiateProtocolVersion")
		t.int32()
		n := t.int32()
		if full {
			for i := 0; i < n && !t.bad; i++ {
				t.string()
			}
		}
	case 'V':
		t.name("FunctionCallResponse")
		if l := t.int32(); l != -1 {
			t.nchar(l, false)
		}
	case 'W':
		t.name("CopyBothResponse")
		t.byte1()
		for length+1 > t.cur && !t.bad {
			t.int16()
		}
	case 'X':
		t.b = append(t.b, "Terminate"...)
	case 'Z':
		t.name("ReadyForQuery")
		t.byte1()
	case 'z':
		// As printed by the protocol-compression patch: the algorithm as
		// a byte, the type string, and the payload with every byte in hex.
		t.name("CompressedMessages")
		t.byte1()
		t.string()
		t.nchar(len(t.m)-t.cur, true)
	default:
		t.b = append(t.b, "Unknown message: "...)
		const digits = "0123456789abcdef"
		t.b = append(t.b, digits[id>>4], digits[id&15])
	}
	t.b = append(t.b, '\n')
	switch {
	case t.bad && u.Err() != "":
		// The message announces more than it holds (a DataRow whose
		// column count exceeds its columns): libpq would read on into the
		// next message; say how it disagrees instead.
		t.b = append(t.b, "mismatched message length: consumed more than "...)
		t.b = strconv.AppendInt(t.b, int64(length), 10)
		t.b = append(t.b, ", expected "...)
		t.b = strconv.AppendInt(t.b, int64(length), 10)
		t.b = append(t.b, '\n')
	case (!full || u.Err() != "") && t.cur-1 != length:
		t.b = append(t.b, "mismatched message length: consumed "...)
		t.b = strconv.AppendInt(t.b, int64(t.cur-1), 10)
		t.b = append(t.b, ", expected "...)
		t.b = strconv.AppendInt(t.b, int64(length), 10)
		t.b = append(t.b, '\n')
	}
	return t.b
}

func (t *tracer) errorNotice(name string) {
	t.name(name)
	for !t.bad {
		c := t.byte1()
		if c == 0 {
			break
		}
		t.string()
	}
}
