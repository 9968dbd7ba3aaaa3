package proxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// Inspector decodes, on the forwarding path, the frames of one connection
// whose route has fault rules with a filter, so that a frame can be
// judged before it is forwarded. The proxy finds the frames with each
// protocol's framing and hands them over whole, both directions in the
// order they pass; calls are made one at a time.
type Inspector interface {
	// Frame decodes one whole frame (AMQP) or message (PostgreSQL) that
	// is passing toward the server (toServer) or the client.
	Frame(toServer bool, frame []byte, t time.Time)
	// Match reports whether the display filter when matches a unit that
	// the last Frame completed, and if so that unit's summary.
	Match(when string) (summary string, ok bool)
	// Close releases the connection's decoder.
	Close()
}

// connFaults is the fault state of one proxied connection.
type connFaults struct {
	p      *Proxy
	set    *FaultSet
	route  int
	r      Route
	f      *capture.DecoupledFlow
	client net.Conn
	up     net.Conn
	peer   string

	cutOnce sync.Once
	cut     atomic.Bool
	// sent counts the bytes forwarded toward the server [0] and the
	// client [1], for "close after".
	sent [2]atomic.Int64

	mu   sync.Mutex // guards what follows, and the inspector's calls
	insp Inspector  // nil: no frames are looked at
	fp   frameProto
	// pgAnswers counts one-byte answers the server owes (a PostgreSQL
	// SSLRequest or GSSENCRequest passed through).
	pgAnswers int
	pgStarted bool                // the PostgreSQL client sent its StartupMessage
	spent     map[*FaultRule]bool // drop/corrupt rules used on this connection
}

// newConnFaults returns the fault state of a connection on route i, or
// nil when the proxy has no rules (the forwarding path is then as
// without faults).
func (p *Proxy) newConnFaults(i int, r Route, f *capture.DecoupledFlow, client, up net.Conn) *connFaults {
	if p.Faults == nil {
		return nil
	}
	c := &connFaults{p: p, set: p.Faults, route: i, r: r, f: f, client: client, up: up, peer: client.RemoteAddr().String()}
	if p.Inspect != nil {
		for _, rule := range p.Faults.Rules() {
			if rule.Filtered() && rule.forRoute(i, r.Listen) {
				c.insp = p.Inspect(f.Flow().A, f.Flow().B)
				break
			}
		}
	}
	return c
}

func (c *connFaults) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.insp != nil {
		c.insp.Close()
		c.insp = nil
	}
}

// note says what a fault did, in the output (a "fault" unit after the
// bytes handed so far) and on the proxy's log.
func (c *connFaults) note(toServer bool, r *FaultRule, msg string) {
	r.hits.Add(1)
	text := fmt.Sprintf("fault %d (%s): %s", r.N, r.Text, msg)
	c.p.dec.Note(c.f, toServer, capture.NoteFault, text)
	c.p.logf("proxy: %s: client %s: %s", c.r.Listen, c.peer, text)
}

func towards(toServer bool) string {
	if toServer {
		return "the server"
	}
	return "the client"
}

// cutConn ends the connection for a fault: a reset to both ends, or an
// orderly end (FIN) to both, after which what either sends is decoded
// but not forwarded, until it closes (or 10 s pass).
func (c *connFaults) cutConn(reset bool) {
	c.cutOnce.Do(func() {
		c.cut.Store(true)
		if reset {
			abort(c.client)
			abort(c.up)
			return
		}
		closeWrite(c.client)
		closeWrite(c.up)
		deadline := time.Now().Add(10 * time.Second)
		c.client.SetReadDeadline(deadline)
		c.up.SetReadDeadline(deadline)
	})
}

func closeHow(reset bool) string {
	if reset {
		return "connection reset (RST to both ends)"
	}
	return "connection closed (FIN to both ends)"
}

// dirFaults is the fault state of one direction of a connection.
type dirFaults struct {
	c        *connFaults
	toServer bool
	src, dst net.Conn
	line     *delayLine // nil until a delay is first in force
	fr       *framer    // nil when no frame is looked at
	// applied holds the delay and throttle rules said to be in force on
	// this direction, to say when they no longer are.
	applied map[*FaultRule]bool
	// throttle pacing: when the next byte may leave.
	next time.Time
	out  []byte // frames to forward from one read (framed direction)
	// lastDue keeps jittered delays in order.
	lastDue time.Time
}

func (c *connFaults) dir(toServer bool, src, dst net.Conn) *dirFaults {
	if c == nil {
		return nil
	}
	d := &dirFaults{c: c, toServer: toServer, src: src, dst: dst}
	if c.insp != nil {
		d.fr = &framer{d: d}
	}
	return d
}

// slow reports whether a read must take the fault path: a rule is on,
// a delay line or the framing is running, or a rule to say off.
func (d *dirFaults) slow() bool {
	return d != nil && (d.c.set.anyOn() || d.line != nil || d.fr != nil || len(d.applied) > 0 || d.c.cut.Load())
}

// side is the index of sent for the direction.
func side(toServer bool) int {
	if toServer {
		return 0
	}
	return 1
}

// rules in force on this direction now: the delay (summed), its jitter,
// the throttle (the lowest), and the close-after and filtered rules.
type inForce struct {
	delay, jitter time.Duration
	rate          int64
	closeAfter    []*FaultRule
	filtered      []*FaultRule
}

func (d *dirFaults) inForce() inForce {
	var in inForce
	c := d.c
	for _, r := range c.set.Rules() {
		if !r.On() || !r.Dir.has(d.toServer) || !r.forRoute(c.route, c.r.Listen) {
			continue
		}
		switch r.Kind {
		case FaultDelay:
			in.delay += r.Delay
			in.jitter += r.Jitter
			d.say(r)
		case FaultThrottle:
			if in.rate == 0 || r.Rate < in.rate {
				in.rate = r.Rate
			}
			d.say(r)
		case FaultCloseAfter:
			in.closeAfter = append(in.closeAfter, r)
		default:
			in.filtered = append(in.filtered, r)
		}
	}
	for r := range d.applied {
		if !r.On() {
			delete(d.applied, r)
			c.p.dec.Note(c.f, d.toServer, capture.NoteFault, fmt.Sprintf("fault %d (%s): turned off; what goes to %s is no longer affected", r.N, r.Text, towards(d.toServer)))
		}
	}
	return in
}

// say notes a delay or throttle the first time it is in force on this
// direction.
func (d *dirFaults) say(r *FaultRule) {
	if d.applied[r] {
		return
	}
	if d.applied == nil {
		d.applied = map[*FaultRule]bool{}
	}
	d.applied[r] = true
	what := fmt.Sprintf("what goes to %s is delayed %v", towards(d.toServer), r.Delay)
	if r.Jitter > 0 {
		what += fmt.Sprintf(" ± %v", r.Jitter)
	}
	if r.Kind == FaultThrottle {
		what = fmt.Sprintf("what goes to %s is throttled to %d bytes/s", towards(d.toServer), r.Rate)
	}
	d.c.note(d.toServer, r, what+", from here on")
}

// forward hands one read to the decoder and passes it on with the faults
// in force. An error is a failed write toward dst.
func (d *dirFaults) forward(b []byte, now time.Time) error {
	c := d.c
	if c.cut.Load() {
		c.p.dec.Data(c.f, d.toServer, b) // what was sent after the cut
		return nil
	}
	in := d.inForce()
	if d.fr != nil {
		return d.fr.forward(b, in, now)
	}
	c.p.dec.Data(c.f, d.toServer, b)
	return d.send(b, in, now)
}

// send writes b on toward dst, cutting the connection where a
// close-after rule says.
func (d *dirFaults) send(b []byte, in inForce, now time.Time) error {
	c := d.c
	for _, r := range in.closeAfter {
		var done int64
		if r.Dir == FaultBoth {
			done = c.sent[0].Load() + c.sent[1].Load()
		} else {
			done = c.sent[side(d.toServer)].Load()
		}
		if left := r.Bytes - done; left <= int64(len(b)) {
			left = max(left, 0)
			if err := d.write(b[:left], in, now); err != nil {
				return err
			}
			c.sent[side(d.toServer)].Add(left)
			d.cutFor(r, fmt.Sprintf("%s after %d bytes forwarded (%s)", closeHow(r.Reset), r.Bytes, r.Dir))
			return nil
		}
	}
	c.sent[side(d.toServer)].Add(int64(len(b)))
	return d.write(b, in, now)
}

// cutFor cuts the connection for rule r, once the bytes before have left.
func (d *dirFaults) cutFor(r *FaultRule, msg string) {
	d.c.note(d.toServer, r, msg)
	d.c.cut.Store(true) // nothing more is forwarded from here
	if d.line != nil {
		d.line.do(func() { d.c.cutConn(r.Reset) })
		return
	}
	d.c.cutConn(r.Reset)
}

// write passes b on: at once, or through the delay line when a delay is
// in force (or has been: the line keeps the order).
func (d *dirFaults) write(b []byte, in inForce, now time.Time) error {
	if len(b) == 0 {
		return nil
	}
	if d.line == nil && in.delay == 0 {
		return d.paced(b, in.rate)
	}
	if d.line == nil {
		d.line = newDelayLine(d)
	}
	due := now.Add(jittered(in.delay, in.jitter))
	if due.Before(d.lastDue) {
		due = d.lastDue
	}
	d.lastDue = due
	return d.line.send(append([]byte(nil), b...), due, in.rate)
}

// paced writes b at no more than rate bytes a second (0: at once).
func (d *dirFaults) paced(b []byte, rate int64) error {
	if rate <= 0 {
		_, err := d.dst.Write(b)
		return err
	}
	piece := int(max(rate/20, 1)) // about 50 ms of traffic a write
	for len(b) > 0 {
		k := min(piece, len(b))
		now := time.Now()
		if d.next.After(now) {
			time.Sleep(d.next.Sub(now))
		} else {
			d.next = now
		}
		if _, err := d.dst.Write(b[:k]); err != nil {
			return err
		}
		d.next = d.next.Add(time.Duration(float64(k) / float64(rate) * float64(time.Second)))
		b = b[k:]
	}
	return nil
}

// finish ends the direction once what is queued has left: fn closes (or
// resets) dst as the forwarding decided.
func (d *dirFaults) finish(fn func()) {
	if d == nil || d.line == nil {
		fn()
		return
	}
	d.line.do(fn)
	d.line.stop()
}

// delayLine writes a direction's reads on when each is due, in order,
// from a goroutine of its own, so that reading goes on meanwhile (a delay
// adds latency, not a limit on throughput). It holds at most
// delayLineOps reads; a reader past that waits, as TCP would.
type delayLine struct {
	d      *dirFaults
	q      chan lineOp
	done   chan struct{}
	failed atomic.Bool
	once   sync.Once
}

type lineOp struct {
	data []byte
	due  time.Time
	rate int64
	fn   func()
}

const delayLineOps = 256

func newDelayLine(d *dirFaults) *delayLine {
	l := &delayLine{d: d, q: make(chan lineOp, delayLineOps), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *delayLine) send(b []byte, due time.Time, rate int64) error {
	if l.failed.Load() {
		return net.ErrClosed
	}
	l.q <- lineOp{data: b, due: due, rate: rate}
	return nil
}

func (l *delayLine) do(fn func()) { l.q <- lineOp{fn: fn} }

func (l *delayLine) stop() {
	l.once.Do(func() { close(l.q) })
	<-l.done
}

func (l *delayLine) run() {
	defer close(l.done)
	for op := range l.q {
		if op.fn != nil {
			op.fn()
			continue
		}
		if l.failed.Load() {
			continue
		}
		if wait := time.Until(op.due); wait > 0 {
			time.Sleep(wait)
		}
		if err := l.d.paced(op.data, op.rate); err != nil {
			l.failed.Store(true)
			if !l.d.cutByFault() && !errors.Is(err, net.ErrClosed) {
				l.d.c.p.writeFailed(l.d.c.f, l.d.toServer, err)
			}
			if isReset(err) {
				abort(l.d.src)
			} else {
				l.d.src.Close()
			}
			l.d.dst.Close()
		}
	}
}

// upstreamAddr is the route's upstream as an address, for a connection
// that never reached it (zero when it is a name).
func upstreamAddr(upstream string) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(trimScheme(upstream))
	return ap
}

func trimScheme(s string) string {
	if len(s) > 6 && s[:6] == "tls://" {
		return s[6:]
	}
	return s
}

// cutByFault reports that a fault cut the connection (its resets are the
// proxy's own, not a peer's).
func (d *dirFaults) cutByFault() bool { return d != nil && d.c.cut.Load() }
