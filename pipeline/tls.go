package pipeline

import (
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// looksTLS reports whether b starts like a TLS record (handshake, alert or
// application data; SSLv3 to TLS 1.3 record versions).
func looksTLS(b []byte) bool {
	return len(b) >= 3 && (b[0] == 0x16 || b[0] == 0x15 || b[0] == 0x17) && b[1] == 0x03 && b[2] <= 0x04
}

// tlsDecoder stands in for a protocol decoder on a connection that is
// encrypted from its first byte (amqps on 5671): one unit per direction
// says so, and the byte count goes into the connection's notes at the end.
type tlsDecoder struct {
	c     *decode.Conn
	emit  decode.Emit
	seen  [2]bool
	bytes [2]int64
	pos   [2]int64
}

func newTLS(c *decode.Conn, emit decode.Emit) *tlsDecoder {
	return &tlsDecoder{c: c, emit: emit}
}

func (d *tlsDecoder) Feed(dir decode.Dir, data []byte, t time.Time) {
	d.bytes[dir] += int64(len(data))
	if d.seen[dir] {
		d.pos[dir] += int64(len(data))
		return
	}
	d.seen[dir] = true
	n := len(data)
	if n > 5 {
		n = 5 // the record header is all we show
	}
	u := &decode.Unit{
		Conn: d.c, Dir: dir, Proto: d.c.Proto,
		Type:    "tls",
		Summary: "TLS: encrypted traffic follows, not decoded",
		Offset:  d.pos[dir],
		Len:     n,
		Raw:     append([]byte(nil), data[:n]...),
	}
	u.SetTime(t)
	d.emit(u)
	d.pos[dir] += int64(len(data))
}

func (d *tlsDecoder) Gap(dir decode.Dir, n int, t time.Time) {
	if n > 0 {
		d.pos[dir] += int64(n)
	}
}

func (d *tlsDecoder) End(dir decode.Dir, t time.Time) {
	if dir == decode.DirB {
		d.c.Notes = append(d.c.Notes, "TLS: "+strconv.FormatInt(d.bytes[0], 10)+
			" bytes client to server, "+strconv.FormatInt(d.bytes[1], 10)+" bytes server to client, encrypted")
	}
}
