package tui

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"iter"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/store"
)

// Messages of the background work the root model starts.
type (
	unitsMsg struct {
		batches [][]*decode.Unit
		closed  bool
	}
	errMsg  struct{ err error }
	tickMsg struct{}
	// filterDoneMsg is a filter run's result: its matches, or a page of
	// them (next set: the run goes on, next brings what follows).
	filterDoneMsg struct {
		gen  int
		from int32 // first unit index scanned
		upto int32 // units [from, upto) were scanned
		rows []int32
		next tea.Cmd
		err  error
	}
	findDoneMsg struct {
		gen int
		ix  int32 // unit found, -1 none
		err error
	}
	exportDoneMsg struct {
		path string
		n    int
		what string // written instead of units ("definitions"), if set
		note string // what the file leaves out, said after it is written
		err  error
	}
)

// maxCoalesce bounds the units one unitsMsg carries, so that keypresses
// are not held up by a long queue of batches. The first unitsMsg carries
// one batch (firstUnits): a file read faster than the screen shows it has
// filled the queue by then, and the first screen waits for no more than a
// batch's worth of storing (65,536 units took 19 ms, one batch 2 ms).
const maxCoalesce = 1 << 16

// firstUnits is what the first unitsMsg coalesces up to: one batch.
const firstUnits = 1

// syncCatchUp is how many new units are matched against the filter on the
// UI goroutine; more go to a background scan.
const syncCatchUp = 1 << 14

func waitUnits(ch <-chan []*decode.Unit) tea.Cmd { return waitUnitsUpTo(ch, maxCoalesce) }

// waitUnitsUpTo is waitUnits coalescing batches until they hold limit
// units.
func waitUnitsUpTo(ch <-chan []*decode.Unit, limit int) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		b, ok := <-ch
		if !ok {
			return unitsMsg{closed: true}
		}
		msg := unitsMsg{batches: [][]*decode.Unit{b}}
		n := len(b)
		for n < limit {
			select {
			case b, ok := <-ch:
				if !ok {
					msg.closed = true
					return msg
				}
				msg.batches = append(msg.batches, b)
				n += len(b)
			default:
				return msg
			}
		}
		return msg
	}
}

func waitErr(ch <-chan error) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		err, ok := <-ch
		if !ok || err == nil {
			return nil
		}
		return errMsg{err}
	}
}

// tick refreshes progress indicators while something is in progress.
func (m *Model) tick() tea.Cmd {
	busy := (!m.done && m.opt.Units != nil) || m.flt.running || m.search.running
	if !busy || m.ticking || m.driven {
		return nil
	}
	m.ticking = true
	return tickCmd()
}

func tickCmd() tea.Cmd {
	return tea.Tick(150*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m *Model) ingest(msg unitsMsg) tea.Cmd {
	for _, b := range msg.batches {
		m.st.Append(b)
	}
	if m.pendingConn > 0 {
		if ci := m.st.ConnByID(m.pendingConn); ci >= 0 {
			m.conns.Choose(ci)
			m.pendingConn = 0
		}
	}
	var cmds []tea.Cmd
	if msg.closed {
		m.done = true
	} else if !m.driven {
		cmds = append(cmds, waitUnits(m.opt.Units))
	}
	if m.flt.match != nil && !m.flt.running {
		cmds = append(cmds, m.catchUp())
	}
	if len(m.st.Conns()) != m.laidConns {
		m.layout() // the connection pane's height follows the count
	}
	m.rebase()
	cmds = append(cmds, m.tick())
	return tea.Batch(cmds...)
}

// rebase gives the unit list its rows: everything, one connection's, or
// the filter's result. Rows that only grew are appended, not rebuilt.
func (m *Model) rebase() {
	if m.paused {
		return
	}
	var base store.Rows
	flat := m.flt.match != nil
	switch {
	case flat:
		base = m.matches().Rows()
	case m.connSel >= 0 && m.connSel < len(m.st.Conns()):
		base = m.st.ConnTop(m.connSel)
	default:
		base = m.st.Top()
	}
	key := baseKey{conn: m.connSel, gen: m.flt.gen, flat: flat}
	if key == m.flt.shownKey && m.flt.shownLen <= base.Len() {
		if base.Len() > m.flt.shownLen {
			m.units.Grow(base)
		}
	} else {
		m.units.SetBase(base, flat)
	}
	m.flt.shownKey, m.flt.shownLen = key, base.Len()
}

type baseKey struct {
	conn int
	gen  int
	flat bool
}

type filterState struct {
	expr  string
	match func(*decode.Unit) bool
	// shallow says match reads only units' plain fields, so scans give
	// it frozen units as shells of their records (see shallowFilter); it
	// was worked out for the expression shallowOf.
	shallow   bool
	shallowOf string
	// list holds the matches of units [0, upto): a store list, paged to
	// the spill file past the budget, made for each filter applied (see
	// matches) and released when it changes.
	list     *store.List
	upto     int32
	gen      int
	running  bool
	cancel   context.CancelFunc
	progress *atomic.Int64
	total    int64
	shownKey baseKey
	shownLen int
}

type searchState struct {
	text    string
	gen     int
	running bool
	cancel  context.CancelFunc
}

// setFilter applies expr (match nil: no filter), cancelling a run in
// progress, and starts scanning the store in the background.
func (m *Model) setFilter(expr string, match func(*decode.Unit) bool) tea.Cmd {
	f := &m.flt
	if f.cancel != nil {
		f.cancel()
		f.cancel = nil
	}
	f.expr, f.match, f.running = expr, match, false
	f.gen++
	if f.list != nil {
		f.list.Release()
	}
	f.list, f.upto = nil, 0
	if match == nil {
		m.rebase()
		return nil
	}
	return tea.Batch(m.scan(0, firstScreen), m.tick())
}

// matches returns the list of the filter's matches, made on first use
// (New applies Options.Filter without setFilter).
func (m *Model) matches() *store.List {
	if m.flt.list == nil {
		m.flt.list = m.st.NewList()
	}
	return m.flt.list
}

// matched returns how many units match the filter so far.
func (f *filterState) matched() int {
	if f.list == nil {
		return 0
	}
	return f.list.Len()
}

// filterShallow reports whether the filter applied reads only units'
// plain fields, worked out once per expression: setFilter applies
// filters, but New applies Options.Filter itself.
func (m *Model) filterShallow() bool {
	f := &m.flt
	if f.match == nil {
		return false
	}
	if f.shallowOf != f.expr {
		f.shallow, f.shallowOf = m.shallowFilter(f.expr), f.expr
	}
	return f.shallow
}

// shallowFilter reports whether filter expr reads nothing of a unit but
// its plain fields ([filter.Filter.Shallow]), which a frozen unit's record
// holds: then its scans need not rebuild frozen units from the spill file.
// The language says (filterbar.Lang.Shallow; the default one answers
// from the filter it compiled last); a language that cannot say is taken
// to read everything.
func (m *Model) shallowFilter(expr string) bool {
	return m.lang.Shallow != nil && m.lang.Shallow(expr)
}

// firstScreen is how many matches the first run of a new filter looks for
// before it reports, so the list shows them while the rest is scanned;
// firstScreenUnits bounds the units that run looks at, so that a rare
// match does not keep a whole capture on one goroutine: the rest is
// scanned by every processor.
const (
	firstScreen      = 256
	firstScreenUnits = 1 << 16
)

// scan starts a background run over units [from, Len()), stopping early
// after limit matches when limit > 0. A run without a limit hands its
// matches over a page at a time as it finds them (filterDoneMsg with next
// set), which the UI goroutine adds to the filter's list, so that what is
// held of a result in memory is a few pages whatever its size; the scan
// waits while two pages are not taken.
func (m *Model) scan(from int32, limit int) tea.Cmd {
	f := &m.flt
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.running = cancel, true
	f.progress = new(atomic.Int64)
	units := m.st.Snapshot()
	var within *store.Rows
	f.total = int64(units.Len())
	if m.connSel >= 0 {
		w := m.st.ConnUnits(m.connSel)
		within, f.total = &w, int64(w.Len())
	}
	gen, match, shallow, progress := f.gen, f.match, m.filterShallow(), f.progress
	if limit > 0 {
		units = units.Head(int(from) + firstScreenUnits)
		return func() tea.Msg {
			rows, upto, err := store.Scan(ctx, units, within, from, limit, match, shallow, progress)
			return filterDoneMsg{gen: gen, from: from, upto: upto, rows: rows, err: err}
		}
	}
	if within == nil {
		progress.Store(int64(from))
	}
	// The first page completes the list's last, so that the ones after
	// become the list's pages as they are.
	first := m.matches().PageRoom()
	ch := make(chan filterDoneMsg, 2)
	var next tea.Cmd
	start := sync.OnceFunc(func() {
		go func() {
			defer close(ch)
			err := store.ScanPages(ctx, units, within, from, match, shallow, progress, first, func(page []int32) bool {
				select {
				case ch <- filterDoneMsg{gen: gen, from: from, rows: page, next: next}:
					return true
				case <-ctx.Done():
					return false
				}
			})
			if err == nil {
				err = ctx.Err() // stopped by a page not taken
			}
			select {
			case ch <- filterDoneMsg{gen: gen, from: from, upto: int32(units.Len()), err: err}:
			case <-ctx.Done():
			}
		}()
	})
	next = func() tea.Msg {
		start()
		if msg, ok := <-ch; ok {
			return msg
		}
		return nil // cancelled
	}
	return next
}

func (m *Model) filterDone(msg filterDoneMsg) tea.Cmd {
	f := &m.flt
	if msg.gen != f.gen || msg.err != nil {
		return nil
	}
	m.matches().Append(msg.rows)
	if msg.next != nil {
		m.rebase()
		return msg.next
	}
	f.running, f.cancel = false, nil
	f.upto = msg.upto
	cmd := m.catchUp()
	m.rebase()
	if !f.running {
		m.setStatus(group(f.matched())+" units match", false)
	}
	return cmd
}

// catchUp matches units that arrived since the last scan: a few on the UI
// goroutine, as a scan would (units of a shallow filter not rebuilt, a
// chosen connection's read from its list), more in the background.
func (m *Model) catchUp() tea.Cmd {
	f := &m.flt
	n := int32(m.st.Len())
	if f.upto >= n {
		return nil
	}
	if n-f.upto > syncCatchUp {
		return m.scan(f.upto, 0)
	}
	var within *store.Rows
	if m.connSel >= 0 {
		w := m.st.ConnUnits(m.connSel)
		within = &w
	}
	rows, _, _ := store.Scan(context.Background(), m.st.Snapshot(), within, f.upto, 0, f.match, m.filterShallow(), nil)
	m.matches().Append(rows)
	f.upto = n
	return nil
}

// connChanged narrows the list to the chosen connection.
func (m *Model) connChanged() tea.Cmd {
	if m.flt.match != nil {
		return m.setFilter(m.flt.expr, m.flt.match)
	}
	m.rebase()
	return nil
}

// find starts a search from the cursor in direction dir (+1, -1).
func (m *Model) find(dir int) tea.Cmd {
	s := &m.search
	if s.text == "" {
		m.setStatus("no search: press s to search", true)
		return nil
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.gen++
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.running = cancel, true
	units, rows, start := m.st.Snapshot(), m.units.Rows(), m.units.Cursor()
	gen, text, search := s.gen, s.text, m.lang.Search
	m.setStatus("searching "+strconv.Quote(text)+"…", false)
	return tea.Batch(func() tea.Msg {
		p, err := store.Find(ctx, units, rows, start, dir, func(u *decode.Unit) bool { return search(u, text) })
		ix := int32(-1)
		if p >= 0 {
			ix = rows.At(p)
		}
		return findDoneMsg{gen: gen, ix: ix, err: err}
	}, m.tick())
}

func (m *Model) findDone(msg findDoneMsg) {
	s := &m.search
	if msg.gen != s.gen || msg.err != nil {
		return
	}
	s.running, s.cancel = false, nil
	if msg.ix < 0 {
		m.setStatus("search: "+strconv.Quote(s.text)+" not found", true)
		return
	}
	m.jumpTo(msg.ix, false)
	m.setStatus("search: "+strconv.Quote(s.text)+" at #"+strconv.Itoa(m.st.Unit(msg.ix).N), false)
}

// exportUnits returns what an export writes: the filter's result, else
// the chosen connection, else everything. For pcapng, units nested in a
// container are replaced by the container, whose bytes carry them. The
// units are read (their bytes back from the spill file when frozen) one
// at a time as the export's goroutine writes them, so an export of any
// size takes no more memory than one unit; count is how many were given.
func (m *Model) exportUnits(containers bool) func(count *int) iter.Seq[*decode.Unit] {
	var rows store.Seq
	switch {
	case m.flt.match != nil:
		rows = m.matches().Rows()
	case m.connSel >= 0:
		rows = m.st.ConnUnits(m.connSel)
	default:
		rows = store.Span(m.st.Len())
	}
	view := m.st.Snapshot()
	return func(count *int) iter.Seq[*decode.Unit] {
		return func(yield func(*decode.Unit) bool) {
			if !containers {
				for p := range rows.Len() {
					*count++
					if !yield(view.Load(rows.At(p))) {
						return
					}
				}
				return
			}
			// The containers of the nested units, in order: few, beside
			// the units. They are written in their place among the rest.
			need := map[int32]bool{}
			for p := range rows.Len() {
				if par := view.Parent(rows.At(p)); par >= 0 {
					need[par] = true
				}
			}
			parents := slices.Sorted(maps.Keys(need))
			emit := func(ix int32) bool { *count++; return yield(view.Load(ix)) }
			for p := range rows.Len() {
				ix := rows.At(p)
				if view.Parent(ix) >= 0 {
					continue
				}
				for len(parents) > 0 && parents[0] < ix {
					if !emit(parents[0]) {
						return
					}
					parents = parents[1:]
				}
				if len(parents) > 0 && parents[0] == ix {
					parents = parents[1:]
				}
				if !emit(ix) {
					return
				}
			}
			for _, ix := range parents {
				if !emit(ix) {
					return
				}
			}
		}
	}
}

// exportCmd writes units to path; an existing file is replaced only when
// overwrite is set (:save!, :export!). note is said with the result.
func exportCmd(path string, overwrite bool, note, force string, units func(count *int) iter.Seq[*decode.Unit], write func(w *os.File, units iter.Seq[*decode.Unit]) error) tea.Cmd {
	return func() tea.Msg {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if !overwrite {
			flags |= os.O_EXCL
		}
		f, err := os.OpenFile(path, flags, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return exportDoneMsg{path: path, err: errors.New("the file exists (" + force + " replaces it)")}
		}
		if err != nil {
			return exportDoneMsg{path: path, err: err}
		}
		n := 0
		err = write(f, units(&n))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return exportDoneMsg{path: path, n: n, note: note, err: err}
	}
}

func (m *Model) exportDone(msg exportDoneMsg) {
	if msg.err != nil {
		m.setStatus("export "+msg.path+": "+msg.err.Error(), true)
		return
	}
	if msg.what != "" {
		m.setStatus("wrote "+msg.what+" to "+msg.path, false)
		return
	}
	s := "wrote " + strconv.Itoa(msg.n) + " unit"
	if msg.n != 1 {
		s += "s"
	}
	s += " to " + msg.path
	if msg.note != "" {
		s += " (" + msg.note + ")"
	}
	m.setStatus(s, false)
}

// definitionsCmd writes the broker's definitions to path.
func definitionsCmd(path string, write func(w io.Writer) error) tea.Cmd {
	return func() tea.Msg {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return exportDoneMsg{path: path, err: err}
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return exportDoneMsg{path: path, what: "the broker's definitions", err: err}
	}
}
