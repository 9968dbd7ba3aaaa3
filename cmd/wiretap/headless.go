package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// printer is the headless sink: it selects units (--conn, --filter) and
// writes them in the chosen format. Text and JSON are rendered unit by unit
// with no state (render), so they can be rendered in parallel; pqtrace is
// stateful (it holds a CompressedMessages until its B* lines are out).
type printer struct {
	f      *decodeFlags
	flt    *filter.Filter
	out    io.Writer
	render func(dst []byte, u *decode.Unit) []byte
	// newRender returns a render function of its own for each goroutine
	// that renders (a JSON encoder keeps what consecutive units share).
	newRender func() func(dst []byte, u *decode.Unit) []byte
	trace     *pqtrace.Printer
	json      output.JSONOptions
	// first is the time of the first unit: text times are relative to it.
	first time.Time
	begun bool
	buf   []byte
	err   error
}

func newPrinter(f *decodeFlags, out io.Writer) (*printer, error) {
	p := &printer{f: f, out: out}
	if f.filter != "" {
		flt, err := compileFilter(f.filter)
		if err != nil {
			return nil, err
		}
		p.flt = flt
	}
	switch f.format {
	case "json":
		p.json = output.JSONOptions{Raw: f.raw, MaxFieldBytes: f.maxRender}
		p.newRender = func() func(dst []byte, u *decode.Unit) []byte {
			e := output.NewJSONEncoder(p.json)
			return func(dst []byte, u *decode.Unit) []byte {
				return append(e.Append(dst, u), '\n')
			}
		}
		p.render = p.newRender()
	case "pqtrace":
		p.trace = pqtrace.New(out, pqtrace.Options{Timestamps: f.timestamps, Libpq15: f.libpq15})
	default:
		p.render = func(dst []byte, u *decode.Unit) []byte {
			return output.AppendText(dst, u, p.first)
		}
		p.newRender = func() func(dst []byte, u *decode.Unit) []byte {
			e := &output.TextEncoder{}
			return func(dst []byte, u *decode.Unit) []byte {
				e.First = p.first
				return e.Append(dst, u)
			}
		}
	}
	return p, nil
}

// note records the first unit's time; call it for every unit, in order,
// before rendering.
func (p *printer) note(u *decode.Unit) {
	if !p.begun {
		p.first, p.begun = u.Time(), true
	}
}

// selected applies --conn and --filter.
func (p *printer) selected(u *decode.Unit) bool {
	if p.f.conn != 0 && (u.Conn == nil || u.Conn.ID != p.f.conn) {
		return false
	}
	return p.flt == nil || p.flt.Match(u)
}

// Unit prints u at once (the sequential path: live sources, pqtrace).
func (p *printer) Unit(u *decode.Unit) {
	p.note(u)
	if p.err != nil || !p.selected(u) {
		return
	}
	if p.trace != nil {
		if u.Proto == decode.ProtoPgSQL && u.Parent == nil && (u.Type == "TLS" || u.Type == "GSSAPI") {
			// libpq's trace has no line for it: say it apart.
			fmt.Fprintf(os.Stderr, "wiretap: conn %d %s: %s (a capture's TLS cannot be decrypted; 'wiretap proxy' without --no-intercept decodes such sessions)\n", u.Conn.ID, u.Dir, u.Summary)
		}
		p.err = p.trace.Print(u)
		return
	}
	p.buf = p.render(p.buf[:0], u)
	_, p.err = p.out.Write(p.buf)
}

// flush pushes out what the trace printer holds.
func (p *printer) flush() error {
	if p.trace != nil {
		return p.trace.Flush()
	}
	return nil
}

// flushLive writes what a live source printed so far. A CompressedMessages
// the trace printer holds is let go only once it has been held since the
// previous call: its B* units are emitted right after it, in the same
// decoder call, so by then they are out.
func (p *printer) flushLive(heldBefore bool) (holding bool, err error) {
	if p.trace == nil {
		return false, nil
	}
	if heldBefore && p.trace.Holding() {
		return false, p.trace.Flush()
	}
	return p.trace.Holding(), p.trace.FlushOutput()
}

// finish flushes and, in text format, appends the end-of-run reports: per
// connection notes (compression ratios, TLS) and the AMQP 1.0
// immutability summary.
func (p *printer) finish(pl *pipeline.Pipeline) error {
	if p.err != nil {
		return p.err
	}
	if err := p.flush(); err != nil {
		return err
	}
	if pl != nil {
		p.notes(pl)
	}
	if p.f.format != "text" || pl == nil {
		return nil
	}
	var b []byte
	for _, c := range pl.Conns() {
		if p.f.conn != 0 && c.ID != p.f.conn {
			continue
		}
		for _, n := range c.Notes {
			if len(b) == 0 {
				b = append(b, "\n# Connections\n"...)
			}
			b = append(b, "#  conn "+strconv.Itoa(c.ID)+": "+n+"\n"...)
		}
	}
	if sum := pl.Immutability().Summary(); len(sum) > 0 {
		b = append(b, '\n')
		for _, l := range sum {
			b = append(b, "# "+l+"\n"...)
		}
	}
	_, err := p.out.Write(b)
	return err
}

// renderJob is one batch of units rendered by a worker.
type renderJob struct {
	units []*decode.Unit
	// staged says whether a unit of the batch is one the stage has work
	// on (pipeline.NeedsStage): batches without are passed on untouched.
	staged bool
	out    []byte
	// sums holds summaries of the batch's units, made by the stage in
	// memory lent to it (pipeline.LendStage), reused once the batch is
	// written.
	sums  []byte
	ready chan struct{}
}

// parallelRender renders text or JSON on worker goroutines (see
// renderWorkers) while the pipeline decodes, and writes the results in
// order. A unit's field tree
// never depends on decoder state that changes later
// (pipeline.TestFieldsOnAnotherGoroutine), so units can be rendered on any
// goroutine once emitted.
type parallelRender struct {
	p   *printer
	cur []*decode.Unit
	// curStaged says whether a unit of cur needs the stage.
	curStaged bool
	batch     int // units a batch holds
	bytes     int // of the units in cur
	jobs      chan *renderJob
	order     chan *renderJob
	// staged, when there is a stage (see newParallelRender), takes the
	// batches to it first. It holds none: a queue of its own let the
	// decoder run further ahead, and the JSON of large AMQP 0-9-1 bodies
	// took its heap to the soft limit (129 -> 179 MB) and twice the time
	// one run in two.
	staged chan *renderJob
	done   chan struct{}
	err    error
	// bufs recycles output buffers: a fresh buffer per batch would cost
	// more in zeroing than the rendering itself. buf is a new one's size.
	bufs *decode.BufferPool
	buf  int
	// sums recycles the memory lent to the stage for a batch's summaries
	// (renderJob.sums).
	sums *decode.BufferPool
	// lists recycles the batches' lists of units, cleared once written
	// (a list of 4,096 pointers is 32 KiB to zero and scan).
	lists chan []*decode.Unit
	// arena, when not nil, is the decoders' (decode.Options.Arena): the
	// units of a batch are released to it once written (the writer's
	// goroutine: see newParallelRender).
	arena *decode.Arena
}

// A batch is sent when it holds renderBatch units (renderBatchJSON for
// JSON) or renderBatchBytes of unit bytes; with at most renderInFlight
// batches queued, what is decoded but not yet written stays small
// whatever the units' sizes. Each batch costs channel sends and a
// worker's wake-up (futex calls, 2-4% of the fanout's CPU at 512 units a
// batch): 4096 ran the fanout and the SELECT 7-11% faster than 2048 (text,
// medians of fifteen alternated runs). A JSON line is some five times a
// text line, and the output buffers, recycled, are a batch's size: 1024
// keeps `read --format json` of a 1 GB capture at 70 MB peak RSS, where
// 4096 took 150 MB, in the same time.
const (
	renderBatch      = 4096
	renderBatchJSON  = 1024
	renderBatchBytes = 1 << 20
	renderInFlight   = 8
	// renderKept is how many lists of units, and of the stage's lent
	// buffers, are kept for the next batches.
	renderKept = 2*renderInFlight + 4
	// renderKeptBytes bounds the output buffers kept: more than the
	// batches in flight ever have in text (some ten of 512 KiB), and a
	// bound on JSON's, which grow with their batches (AMQP 1.0
	// multi-frame messages: megabytes).
	renderKeptBytes = 64 << 20
)

// stageLend is the size of the buffer lent to the stage for a batch's
// summaries (renderJob.sums): a fanout's batch of 4,096 units takes some
// 60 KB, a batch of deliveries alone 200 KB; what does not fit goes to
// the stage's own memory.
const stageLend = 128 << 10

// A text batch's output buffer is made the batch's size from the start
// (4,096 lines come to 300-400 KiB): one grown from 64 KiB cost three
// copies and the fresh memory of each, and the SELECT ran 2-13% slower
// (four comparisons, medians of nine to fifteen alternated runs each; the
// COPY 1-8%). JSON's stays at 64 KiB:
// its batches' sizes vary most (AMQP 1.0 multi-frame messages run to
// megabytes), and starting at 512 KiB made that shape 22-28% slower.
const (
	renderBufText = 512 << 10
	renderBufJSON = 64 << 10
)

// renderWorkers is how many goroutines render a format. JSON's lines cost
// five times text's and keep one worker a core. A text line is cheap
// enough that a second worker mostly took the core the decoding goroutine
// was waiting for, and moved the units' memory between the cores: with
// one, the fanout ran 15-18% faster, the SELECT 4-5%, the COPY 7%, the
// large AMQP 0-9-1 bodies 7%, the other shapes the same (text, medians of
// eleven alternated runs, two comparisons), where JSON with one ran up to
// 30% slower.
func renderWorkers(format string) int {
	if format == "text" {
		return 1
	}
	return min(max(runtime.GOMAXPROCS(0), 1), 4)
}

// newParallelRender starts the workers that render for p, and the one
// that writes their output in order. stage, when not nil, is called for
// every unit, in order, on a goroutine of its own, before the unit is
// rendered: the pipeline's stage (pipeline.Config.Staged), whose
// immutability check and method summaries would otherwise cost the
// decoding goroutine a tenth of its time on small AMQP 1.0 transfers and
// on AMQP 0-9-1 fanout. lend, with stage, is the pipeline's LendStage:
// each batch's summaries are made in memory reused once it is written.
//
// arena, when not nil, is the decoders' arena: each batch's units are
// released to it once written, and nothing may read them after that.
func newParallelRender(p *printer, stage func(*decode.Unit), lend func([]byte) []byte, arena *decode.Arena) *parallelRender {
	r := &parallelRender{
		p:     p,
		arena: arena,
		jobs:  make(chan *renderJob, renderInFlight),
		order: make(chan *renderJob, renderInFlight),
		done:  make(chan struct{}),
		batch: renderBatch,
		lists: make(chan []*decode.Unit, renderKept),
	}
	r.buf = renderBufText
	if p.f.format == "json" {
		r.batch, r.buf = renderBatchJSON, renderBufJSON
	}
	r.bufs = decode.NewBufferPool(renderKeptBytes)
	r.sums = decode.NewBufferPool(renderKept * stageLend)
	r.cur = make([]*decode.Unit, 0, r.batch)
	workers := renderWorkers(p.f.format)
	for range workers {
		go func() {
			render := p.newRender()
			for j := range r.jobs {
				for _, u := range j.units {
					if p.selected(u) {
						j.out = render(j.out, u)
					}
				}
				close(j.ready)
			}
		}()
	}
	if stage != nil {
		r.staged = make(chan *renderJob)
		go func() {
			for j := range r.staged {
				if j.staged {
					lend(r.sums.Take(stageLend))
					for _, u := range j.units {
						stage(u)
					}
					j.sums = lend(nil)
				}
				r.order <- j
				r.jobs <- j
			}
			close(r.jobs)
			close(r.order)
		}()
	}
	go func() {
		defer close(r.done)
		for j := range r.order {
			<-j.ready
			if r.err == nil {
				_, r.err = p.out.Write(j.out)
			}
			r.bufs.Put(j.out)
			// Written: nothing reads these units again, nor the
			// summaries made for them in sums.
			r.arena.Release(j.units)
			if j.sums != nil {
				r.sums.Put(j.sums)
			}
			clear(j.units) // let go of the units
			select {
			case r.lists <- j.units[:0]:
			default:
			}
		}
	}()
	return r
}

// add is the pipeline's sink.
func (r *parallelRender) add(u *decode.Unit) {
	r.p.note(u)
	r.cur = append(r.cur, u)
	r.bytes += len(u.Raw)
	r.curStaged = r.curStaged || pipeline.NeedsStage(u)
	if len(r.cur) == r.batch || r.bytes >= renderBatchBytes {
		r.send()
	}
}

func (r *parallelRender) send() {
	j := &renderJob{units: r.cur, out: r.bufs.Take(r.buf), ready: make(chan struct{}), staged: r.curStaged}
	r.curStaged = false
	if r.staged != nil {
		r.staged <- j
	} else {
		r.order <- j
		r.jobs <- j
	}
	select {
	case r.cur = <-r.lists:
	default:
		r.cur = make([]*decode.Unit, 0, r.batch)
	}
	r.bytes = 0
}

// close renders what is left and waits until everything is written.
func (r *parallelRender) close() error {
	if len(r.cur) > 0 {
		r.send()
	}
	if r.staged != nil {
		close(r.staged) // the stage closes the others once it is through
	} else {
		close(r.jobs)
		close(r.order)
	}
	<-r.done
	return r.err
}

// notes says on stderr what the selection left out that a user would
// otherwise see as silence: a --conn past the last connection, pqtrace
// with no PostgreSQL connection to trace.
func (p *printer) notes(pl *pipeline.Pipeline) {
	conns := pl.Conns()
	if p.f.conn > len(conns) {
		fmt.Fprintf(os.Stderr, "wiretap: --conn %d: the input has %s\n", p.f.conn, plural(len(conns), "connection"))
		return
	}
	if p.trace == nil {
		return
	}
	for _, c := range conns {
		if (p.f.conn == 0 || c.ID == p.f.conn) && c.Proto == decode.ProtoPgSQL {
			return
		}
	}
	what := "the input has no PostgreSQL connection"
	if p.f.conn != 0 {
		what = "connection " + strconv.Itoa(p.f.conn) + " is not PostgreSQL"
	}
	fmt.Fprintln(os.Stderr, "wiretap: --format pqtrace: "+what+"; nothing to trace (--format text shows every protocol)")
}

// plural is "1 connection", "2 connections".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// compileFilter compiles --filter, its error a usage error worded alike
// for read and the TUI modes.
func compileFilter(expr string) (*filter.Filter, error) {
	flt, err := filter.Compile(expr)
	if err != nil {
		// The filter's own errors begin "filter: ".
		return nil, usageErr("--filter: %s", strings.TrimPrefix(err.Error(), "filter: "))
	}
	return flt, nil
}
