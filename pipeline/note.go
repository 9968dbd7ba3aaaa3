package pipeline

import (
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// Note implements capture.Noter: what a live source says about a
// connection beside its bytes (a fault the proxy injected, an upstream
// that refused the connection) becomes a unit of its own on that
// connection, of type kind ("fault" or "proxy"), whose summary is msg and
// whose warning marks it, in every output, in order with the units
// around it.
func (p *Pipeline) Note(f *capture.Flow, fromA bool, kind, msg string, t time.Time) {
	p.seen(t)
	c := p.state(f)
	aClient := f.SYN
	if c.decided {
		aClient = c.aClient
	}
	u := &decode.Unit{Conn: c.c, Proto: c.c.Proto, Type: kind, Summary: msg, Dir: decode.DirB}
	if fromA == aClient {
		u.Dir = decode.DirF
	}
	u.SetTime(t)
	switch kind {
	case capture.NoteFault:
		u.Warn("fault injected by the proxy")
	case capture.NoteBroker:
		u.Warn("reported by the broker")
	default:
		u.Warn("reported by the proxy")
	}
	p.emit(u)
}

var _ capture.Noter = (*Pipeline)(nil)
