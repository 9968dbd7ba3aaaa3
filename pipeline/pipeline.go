package pipeline

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

// Factories maps each protocol to its decoder. Tests may replace entries.
var Factories = map[decode.Proto]decode.Factory{
	decode.ProtoAMQP091: amqp091.New,
	decode.ProtoAMQP10:  amqp10.New,
	decode.ProtoPgSQL:   pgwire.New,
}

// Config says how connections are decoded and where units go.
type Config struct {
	Options *decode.Options
	// DecodeAs forces a protocol for connections with this server port (or,
	// when the client is unknown, either port), like Wireshark's Decode As.
	DecodeAs map[uint16]decode.Proto
	// Sink receives every unit, numbered, in output order.
	Sink func(*decode.Unit)
	// MaxConns bounds the connections tracked at once (0: no limit beyond
	// what the capture layer enforces).
	MaxConns int
	// Staged leaves to the caller the work on units that need not be
	// done on the decoding goroutine, so that it can be done on another:
	// the AMQP 1.0 immutability check (which annotates the units that
	// leave a broker, and pairs them across connections in order) and
	// the summaries and AMQP 1.0 messages that depend on nothing but a
	// unit's bytes ([decode.Options.LateSummaries]). The caller must call
	// [Pipeline.Stage] for every unit Sink gets for which [NeedsStage]
	// is true (calling it for the others does nothing), in the order
	// Sink gets them, on one goroutine at a time, before anything reads
	// the unit's summary, warnings, message, checksum or field tree, or
	// the counts of units with warnings and of checksum verdicts in
	// decode.Conn.
	Staged bool
}

// Pipeline turns reassembled TCP byte streams into numbered units.
// It is not safe for concurrent use: one source feeds it.
type Pipeline struct {
	cfg   Config
	opt   *decode.Options
	conns map[*capture.Flow]*conn
	all   []*decode.Conn
	// unsorted says all is out of ID order (a source reported a
	// connection after a later one); Conns sorts it when asked.
	unsorted bool
	n        int
	imm      *amqp10.Immutability
	// late makes the summaries the decoders leave to Stage, done the
	// AMQP 1.0 messages they leave to it.
	late  amqp091.Summarizer
	done  *amqp10.Completer
	last  time.Time
	sorts int // sorts of all (for tests: at most one per Conns call)
}

type conn struct {
	c       *decode.Conn
	flow    *capture.Flow
	decided bool
	// aClient says the flow's A side is the client (valid once decided).
	aClient bool
	dec     decode.Decoder
	// acct is the connection's account in the memory budget, shared with
	// the capture layer (Flow.Account) and the decoder.
	acct *decode.Account
	// pending holds what arrived before the protocol could be decided.
	pending [2][]pendingChunk
	head    [2][]byte // first bytes per side (A=0, B=1), at most 8
}

type pendingChunk struct {
	gap   int
	isGap bool
	data  []byte
	t     time.Time
}

// New returns a pipeline for cfg.
func New(cfg Config) *Pipeline {
	opt := cfg.Options
	if opt == nil {
		opt = decode.DefaultOptions()
	}
	if cfg.Staged && !opt.LateSummaries {
		o := *opt
		o.LateSummaries = true
		opt = &o
	}
	return &Pipeline{
		cfg:   cfg,
		opt:   opt,
		conns: make(map[*capture.Flow]*conn),
		imm:   amqp10.NewImmutability(),
		done:  amqp10.NewCompleter(opt),
	}
}

// Conns returns every connection seen so far, in order of first packet.
func (p *Pipeline) Conns() []*decode.Conn {
	if p.unsorted {
		// Sorting here, once per call that needs it, rather than on every
		// late connection: 60k connections each reported after a later
		// one cost 60k sorts of up to 60k entries (minutes).
		slices.SortStableFunc(p.all, func(a, b *decode.Conn) int { return cmp.Compare(a.ID, b.ID) })
		p.unsorted = false
		p.sorts++
	}
	return p.all
}

// Budget returns the memory budget the decoders charge (Options.Budget),
// or nil.
func (p *Pipeline) Budget() *decode.Budget { return p.opt.Budget }

// Immutability returns the AMQP 1.0 bare-message tracker.
func (p *Pipeline) Immutability() *amqp10.Immutability { return p.imm }

// Stage does to an emitted unit what [Config.Staged] leaves to the
// caller (and emit does itself otherwise): it makes the summary its
// decoder left to be made later, finishes the AMQP 1.0 message it left
// unparsed and hands AMQP 1.0 units to the immutability check, and then
// counts the unit in its connection's Warnings and Checksums.
func (p *Pipeline) Stage(u *decode.Unit) {
	if p.cfg.Staged && !NeedsStage(u) {
		return // emit did it
	}
	p.stage(u)
}

// LendStage lends the stage b's spare room for the summaries it makes
// that nothing but their units refers to (a consumer's deliveries: see
// amqp091.Summarizer.Lend), and returns the buffer lent before, holding
// those it made since. A caller that staged a batch of units between two
// calls may reuse the buffer returned once it is done with those units.
func (p *Pipeline) LendStage(b []byte) []byte { return p.late.Lend(b) }

// NeedsStage says whether a pipeline with [Config.Staged] leaves work on
// u to [Pipeline.Stage]: the units of AMQP connections. The others have
// none but the counting, which emit does while the unit is in its cache:
// a stage that only counted them moved every unit to the other core and
// back (the SELECT: a million). It goes by the connection's protocol,
// settled before its first unit, so that each connection's counts have
// one writer.
func NeedsStage(u *decode.Unit) bool {
	p := u.Proto
	if u.Conn != nil {
		p = u.Conn.Proto
	}
	return p == decode.ProtoAMQP10 || p == decode.ProtoAMQP091
}

func (p *Pipeline) stage(u *decode.Unit) {
	switch u.Proto {
	case decode.ProtoAMQP10:
		p.done.Complete(u)
		p.imm.Observe(u)
	case decode.ProtoAMQP091:
		p.late.Summarize(u)
	}
	// Counted here, after the immutability check, which warns of a bare
	// message the broker modified, and after the checksum verdict a
	// message left to the stage gets: on the stage's goroutine when
	// there is one, the only writer of the counts then.
	if c := u.Conn; c != nil {
		if len(u.Warnings()) > 0 {
			c.Warnings++
		}
		if ck := u.Checksum(); ck != nil && int(ck.Status) < len(c.Checksums) {
			c.Checksums[ck.Status]++
		}
	}
}

func (p *Pipeline) state(f *capture.Flow) *conn {
	if c, ok := p.conns[f]; ok {
		return c
	}
	c := &conn{flow: f, c: &decode.Conn{ID: f.ID, First: f.First}}
	c.c.Client, c.c.Server = f.A, f.B
	c.acct = p.account(f)
	p.conns[f] = c
	p.all = append(p.all, c.c)
	if n := len(p.all); n > 1 && p.all[n-2].ID > f.ID {
		p.unsorted = true
	}
	return c
}

func side(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// Data implements capture.Handler.
func (p *Pipeline) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	p.seen(t)
	c := p.state(f)
	c.acct.Touch()
	if !c.decided {
		s := side(fromA)
		if need := 8 - len(c.head[s]); need > 0 {
			if need > len(data) {
				need = len(data)
			}
			c.head[s] = append(c.head[s], data[:need]...)
		}
		c.pending[s] = append(c.pending[s], pendingChunk{data: append([]byte(nil), data...), t: t})
		if !p.decide(c, fromA) {
			return
		}
		p.flush(c)
		return
	}
	if c.dec != nil {
		c.dec.Feed(c.dir(fromA), data, t)
	}
}

// Gap implements capture.Handler.
func (p *Pipeline) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	p.seen(t)
	c := p.state(f)
	if !c.decided {
		s := side(fromA)
		c.pending[s] = append(c.pending[s], pendingChunk{isGap: true, gap: n, t: t})
		return
	}
	if c.dec != nil {
		c.dec.Gap(c.dir(fromA), n, t)
	}
}

// Close implements capture.Handler.
func (p *Pipeline) Close(f *capture.Flow, t time.Time) {
	c, ok := p.conns[f]
	if !ok {
		return
	}
	if !c.decided {
		// Too little traffic to see a header: fall back to ports.
		p.decideByPort(c)
		p.flush(c)
	}
	if c.dec != nil {
		c.dec.End(decode.DirF, t)
		c.dec.End(decode.DirB, t)
	}
	delete(p.conns, f)
}

func (p *Pipeline) seen(t time.Time) {
	if t.After(p.last) {
		p.last = t
	}
}

// Finish closes every connection still open (end of input), at the time of
// the last packet seen.
func (p *Pipeline) Finish() {
	t := p.last
	flows := make([]*capture.Flow, 0, len(p.conns))
	for f := range p.conns {
		flows = append(flows, f)
	}
	sort.Slice(flows, func(i, j int) bool { return flows[i].ID < flows[j].ID })
	for _, f := range flows {
		p.Close(f, t)
	}
	p.opt.Defer.Settle()
}

func (c *conn) dir(fromA bool) decode.Dir {
	if fromA == c.aClient {
		return decode.DirF
	}
	return decode.DirB
}

// decide tries to settle client/server and protocol; it reports whether it
// did. Order: SYN, protocol header, --decode-as, well-known port.
func (p *Pipeline) decide(c *conn, fromA bool) bool {
	f := c.flow
	s := side(fromA)
	proto, hello := decode.DetectHeader(c.head[s])
	if hello {
		c.aClient = fromA
		if f.SYN && !fromA {
			// The SYN sender is the client whatever it said first.
			c.aClient = true
		}
		if forced, ok := p.forced(c, true); ok {
			proto = forced
		}
		p.settle(c, proto)
		return true
	}
	if len(c.head[s]) < 8 && p.couldStillBeHeader(c.head[s]) {
		// Wait for a whole header, unless the port already says enough and
		// the bytes come from the server side.
		if _, ok := p.portProto(c); !ok {
			return false
		}
		if f.SYN && fromA {
			return false
		}
	}
	return p.decideByPort(c)
}

func (p *Pipeline) couldStillBeHeader(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if b[0] == 'A' {
		return len(b) < 4 || string(b[:4]) == "AMQP"
	}
	// PostgreSQL startup packets start with a big-endian length < 10000.
	return b[0] == 0
}

func (p *Pipeline) decideByPort(c *conn) bool {
	f := c.flow
	if proto, ok := p.forced(c, f.SYN); ok {
		p.settle(c, proto)
		return true
	}
	if proto, ok := p.portProto(c); ok {
		// RabbitMQ serves AMQP 1.0 on the 0-9-1 port: without the header
		// (a capture started mid-stream), the frames tell.
		if proto == decode.ProtoAMQP091 && (decode.LooksAMQP10Frame(c.head[0]) || decode.LooksAMQP10Frame(c.head[1])) {
			proto = decode.ProtoAMQP10
		}
		if !f.SYN {
			_, aWK := p.serverPort(f.A.Port())
			_, bWK := p.serverPort(f.B.Port())
			c.aClient = bWK || !aWK
		} else {
			c.aClient = true
		}
		p.settle(c, proto)
		return true
	}
	// Unknown protocol: keep the connection (it is numbered) but decode
	// nothing.
	c.aClient = f.SYN || f.A.Port() > f.B.Port()
	p.settle(c, decode.ProtoUnknown)
	return true
}

func (p *Pipeline) serverPort(port uint16) (decode.Proto, bool) {
	if pr, ok := p.cfg.DecodeAs[port]; ok {
		return pr, true
	}
	return decode.ProtoByPort(port)
}

// forced returns the --decode-as protocol for the connection. When the
// client is known (SYN, or it sent a protocol header: known), only the
// server's port counts; otherwise either port does, B's first.
func (p *Pipeline) forced(c *conn, known bool) (decode.Proto, bool) {
	if len(p.cfg.DecodeAs) == 0 {
		return 0, false
	}
	f := c.flow
	server, client := f.B.Port(), f.A.Port()
	if known && !c.aClient {
		server, client = client, server
	}
	if pr, ok := p.cfg.DecodeAs[server]; ok {
		return pr, true
	}
	if !known {
		if pr, ok := p.cfg.DecodeAs[client]; ok {
			return pr, true
		}
	}
	return 0, false
}

func (p *Pipeline) portProto(c *conn) (decode.Proto, bool) {
	f := c.flow
	if f.SYN {
		return p.serverPort(f.B.Port())
	}
	if pr, ok := p.serverPort(f.B.Port()); ok {
		return pr, true
	}
	return p.serverPort(f.A.Port())
}

func (p *Pipeline) settle(c *conn, proto decode.Proto) {
	c.decided = true
	f := c.flow
	if c.aClient {
		c.c.Client, c.c.Server = f.A, f.B
	} else {
		c.c.Client, c.c.Server = f.B, f.A
	}
	c.c.Proto = proto
	if proto == decode.ProtoUnknown {
		return
	}
	if looksTLS(c.head[0]) || looksTLS(c.head[1]) {
		if proto != decode.ProtoPgSQL { // PostgreSQL negotiates TLS in-band
			c.dec = newTLS(c.c, p.emit)
			return
		}
	}
	if fac := Factories[proto]; fac != nil {
		p.opt.Budget.Within(c.acct, func() { c.dec = fac(c.c, p.opt, p.emit) })
	}
}

func (p *Pipeline) flush(c *conn) {
	for s := 0; s < 2; s++ {
		fromA := s == 0
		for _, ch := range c.pending[s] {
			if c.dec == nil {
				break
			}
			if ch.isGap {
				c.dec.Gap(c.dir(fromA), ch.gap, ch.t)
			} else {
				c.dec.Feed(c.dir(fromA), ch.data, ch.t)
			}
		}
		c.pending[s] = nil
	}
}

// emit numbers a unit, updates its connection's counters and hands it on.
func (p *Pipeline) emit(u *decode.Unit) {
	// A unit a decoder left to finish came before this one.
	p.opt.Defer.Settle()
	p.n++
	u.N = p.n
	if c := u.Conn; c != nil {
		if u.Parent == nil {
			c.Units[u.Dir]++
			c.Bytes[u.Dir] += int64(u.Len)
		}
		if u.Err() != "" {
			c.Errors++
		}
	}
	if !p.cfg.Staged || !NeedsStage(u) {
		p.stage(u)
	}
	if p.cfg.Sink != nil {
		p.cfg.Sink(u)
	}
}

var _ capture.Handler = (*Pipeline)(nil)
