package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/charmbracelet/x/term"
	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/decode/output"

	"github.com/wiretap-dev/wiretap/tui/components/filterbar"
	"github.com/wiretap-dev/wiretap/tui/internal/ttyin"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Options connect a source to the program.
type Options struct {
	// Title names the source: a file name, "broker 127.0.0.1:5672".
	Title string
	// Live says the source is live: follow mode starts on.
	Live bool
	// Units delivers batches of units in output order (N assigned); it is
	// closed at the end of the input. A unit's Conn may be updated by the
	// sender only before the batch carrying the unit is sent.
	Units <-chan []*decode.Unit
	// Progress, if set, reports how much of a file has been read.
	Progress func() (done, total int64)
	// Err, if set, delivers the source's errors (shown on the status line;
	// the program keeps running so what was read can be browsed).
	Err <-chan error
	// ExportPcapng writes units as a capture; nil hides the action. It is
	// given containers, never the units nested in them.
	ExportPcapng func(w io.Writer, units iter.Seq[*decode.Unit]) error
	// ExportJSON writes units as JSON lines; nil means the INTERFACES.md
	// schema through decode/output.
	ExportJSON func(w io.Writer, units iter.Seq[*decode.Unit]) error
	// ExportDefinitions, for the embedded broker, writes its topology as
	// RabbitMQ definitions JSON (:definitions export FILE); nil for other
	// sources.
	ExportDefinitions func(w io.Writer) error
	// Broker, for the embedded broker, is what its panel (b, :broker)
	// shows; nil for other sources.
	Broker state.Source
	// Routes explains :route against the live topology; nil for other
	// sources.
	Routes state.RouteExplainer
	// Faults, for the proxy, are its fault-injection rules, listed and
	// changed by :fault; nil for other sources.
	Faults FaultControl
	// ShowSecrets is shown in the title: the source was decoded without
	// redaction.
	ShowSecrets bool
	// Filter is a display filter applied from the start (--filter); one
	// that does not compile is shown on the status line. Conn shows only
	// that connection (--conn) from when it appears; 0 shows all.
	Filter string
	Conn   int
	// Memory is the memory budget (0: none). The unit store keeps the
	// newest units whole, and the live heap, within half of it, freezing
	// the older ones to temporary files (see store's memory.go); the
	// collector's soft limit is the rest. The title shows the store's use
	// against it.
	Memory int64
	// Disk bounds the store's temporary files (0: only the free space the
	// store always leaves on their filesystem; see store.SetDiskLimit).
	Disk int64
	// Warnings, if set, returns what the source reported without
	// stopping (a capture cut short, a limit reached), as `read` prints
	// them on stderr; the statistics view lists them.
	Warnings func() []string
	// Dropped, if set, returns the packets a live capture has lost so
	// far before they were read (a full kernel buffer); the title says
	// so once there are any.
	Dropped func() int64

	// KeyMap and Styles override the defaults.
	KeyMap *keys.KeyMap
	Styles *styles.Styles
	// Lang overrides the display-filter language (tests).
	Lang *filterbar.Lang
}

// Run runs the program in the terminal (alternate screen, mouse on) until
// the user quits or ctx is cancelled.
func Run(ctx context.Context, opt Options) error {
	// The terminal, as bubbletea would pick it, with esc reported at once
	// (see package ttyin).
	in := os.Stdin
	if !term.IsTerminal(in.Fd()) {
		tty, out, err := tea.OpenTTY()
		if err != nil {
			return fmt.Errorf("tui: open terminal: %w", err)
		}
		defer tty.Close()
		defer out.Close()
		in = tty
	}
	// The color profile of stdout, which bubbletea writes to, as lipgloss
	// detected it when the program started: detecting it again would,
	// inside tmux, run "tmux info" a second time on the way to the first
	// screen (some 10 ms).
	_, err := run(ctx, opt, tea.WithInput(ttyin.New(in)), tea.WithColorProfile(lipgloss.Writer.Profile))
	return err
}

// run runs the program with options extra after the defaults (tests give
// their own input and output).
func run(ctx context.Context, opt Options, extra ...tea.ProgramOption) (tea.Model, error) {
	// 120 frames a second, bubbletea's most: a change waits at most 8 ms
	// for the screen instead of 17, and an idle screen costs nothing.
	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(120)}
	model := New(opt)
	model.pace = &pacer{now: time.Now}
	p := tea.NewProgram(model, append(opts, extra...)...)
	m, err := p.Run()
	model.st.Close()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return m, nil
	}
	return m, err
}

// DefaultLang is the display-filter language of decode/filter. Its
// filters share a memo of what units hold for tree fields (one language
// per program, over one source), so that editing a filter on a body field
// does not read the units' bytes again.
func DefaultLang() *filterbar.Lang {
	memo := filter.NewMemo()
	// The filter last compiled answers Shallow for its expression, which
	// is the one the TUI asks about: no second compile.
	var mu sync.Mutex
	var last *filter.Filter
	var lastExpr string
	return &filterbar.Lang{
		Compile: func(expr string) (func(*decode.Unit) bool, error) {
			f, err := filter.CompileWith(expr, memo)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			last, lastExpr = f, expr
			mu.Unlock()
			return f.Match, nil
		},
		Shallow: func(expr string) bool {
			mu.Lock()
			f := last
			if lastExpr != expr {
				f = nil
			}
			mu.Unlock()
			if f == nil {
				var err error
				if f, err = filter.CompileWith(expr, memo); err != nil {
					return false
				}
			}
			return f.Shallow()
		},
		ErrorSpan: func(err error) (int, int) {
			var fe *filter.Error
			if errors.As(err, &fe) {
				return fe.Pos, fe.Len
			}
			return 0, 0
		},
		Complete: filter.Complete,
		Search:   filter.Search,
	}
}

func writeJSON(w io.Writer, units iter.Seq[*decode.Unit]) error {
	j := output.NewJSON(w, output.JSONOptions{})
	for u := range units {
		if err := j.Unit(u); err != nil {
			return err
		}
	}
	return j.Flush()
}
