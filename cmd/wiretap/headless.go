package main

import (
	"io"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// unitWriter is what every headless format implements.
type unitWriter interface {
	Unit(u *decode.Unit) error
	Flush() error
}

// pqWriter adapts the libpq trace printer to unitWriter.
type pqWriter struct{ *pqtrace.Printer }

func (w pqWriter) Unit(u *decode.Unit) error { return w.Print(u) }

// printer is the headless sink: it selects units (--conn, --filter) and
// writes them in the chosen format.
type printer struct {
	f    *decodeFlags
	flt  *filter.Filter
	w    unitWriter
	text *output.Text
	err  error
}

func newPrinter(f *decodeFlags, out io.Writer) (*printer, error) {
	p := &printer{f: f}
	if f.filter != "" {
		flt, err := filter.Compile(f.filter)
		if err != nil {
			return nil, usageErr("--filter: %v", err)
		}
		p.flt = flt
	}
	switch f.format {
	case "json":
		p.w = output.NewJSON(out, output.JSONOptions{Raw: f.raw})
	case "pqtrace":
		p.w = pqWriter{pqtrace.New(out, pqtrace.Options{Timestamps: f.timestamps, Libpq15: f.libpq15})}
	default:
		p.text = output.NewText(out)
		p.w = p.text
	}
	return p, nil
}

// Unit is the pipeline's sink.
func (p *printer) Unit(u *decode.Unit) {
	if p.err != nil {
		return
	}
	if p.f.conn != 0 && (u.Conn == nil || u.Conn.ID != p.f.conn) {
		return
	}
	if p.flt != nil && !p.flt.Match(u) {
		return
	}
	p.err = p.w.Unit(u)
}

// finish flushes and, in text format, appends the end-of-run reports: per
// connection notes (compression ratios, TLS) and the AMQP 1.0
// immutability summary.
func (p *printer) finish(pl *pipeline.Pipeline) error {
	if p.err != nil {
		return p.err
	}
	if p.text != nil && pl != nil {
		var lines []string
		for _, c := range pl.Conns() {
			if p.f.conn != 0 && c.ID != p.f.conn {
				continue
			}
			for _, n := range c.Notes {
				lines = append(lines, "  conn "+strconv.Itoa(c.ID)+": "+n)
			}
		}
		if len(lines) > 0 {
			p.text.Line("")
			p.text.Line("# Connections")
			for _, l := range lines {
				p.text.Line("#" + l)
			}
		}
		if sum := pl.Immutability().Summary(); len(sum) > 0 {
			p.text.Line("")
			for _, l := range sum {
				p.text.Line("# " + l)
			}
		}
	}
	return p.w.Flush()
}
