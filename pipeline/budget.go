package pipeline

import (
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
)

// The pipeline's part of the memory budget (--max-memory, issue 14):
// one account per connection, shared by the capture layer that
// reassembles it (capture.Flow.Account), the pipeline and the
// connection's decoder, so the share per connection bounds them
// together; and the capture layer's drops shown as units.

// account returns the connection's account: the one its source opened,
// when it charges the same budget, else a new one.
func (p *Pipeline) account(f *capture.Flow) *decode.Account {
	b := p.opt.Budget
	if b == nil {
		return nil
	}
	if f.Account != nil && f.Account.Budget() == b {
		return f.Account
	}
	return b.NewAccount()
}

// Warning implements capture.Warner: held state the source dropped (the
// budget took a connection's out-of-order segments, or had no room for
// one) becomes a "warning" unit on that connection, as the decoders'
// own drops are, in order with the units around it.
func (p *Pipeline) Warning(f *capture.Flow, fromA bool, summary, msg string, t time.Time) {
	p.seen(t)
	c := p.state(f)
	aClient := f.SYN // until the protocol is settled, trust the SYN
	if c.decided {
		aClient = c.aClient
	}
	u := &decode.Unit{Conn: c.c, Proto: c.c.Proto, Type: "warning", Summary: summary, Dir: decode.DirB}
	if fromA == aClient {
		u.Dir = decode.DirF
	}
	u.SetTime(t)
	u.Warn(msg)
	p.emit(u)
}

var (
	_ capture.Warner   = (*Pipeline)(nil)
	_ capture.Budgeted = (*Pipeline)(nil)
)
