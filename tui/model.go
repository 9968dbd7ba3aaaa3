package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/components/brokerpanel"
	"github.com/wiretap-dev/wiretap/tui/components/cmdline"
	"github.com/wiretap-dev/wiretap/tui/components/connlist"
	"github.com/wiretap-dev/wiretap/tui/components/detail"
	"github.com/wiretap-dev/wiretap/tui/components/filterbar"
	"github.com/wiretap-dev/wiretap/tui/components/help"
	"github.com/wiretap-dev/wiretap/tui/components/hexview"
	"github.com/wiretap-dev/wiretap/tui/components/stats"
	"github.com/wiretap-dev/wiretap/tui/components/unitlist"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/store"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

// Pane identifies one of the main screen's panes.
type Pane uint8

const (
	PaneConns Pane = iota
	PaneUnits
	PaneDetail
	PaneHex
	numPanes
)

var paneNames = [numPanes]string{"Connections", "Units", "Detail", "Bytes"}

type screen uint8

const (
	screenMain screen = iota
	screenStats
	screenHelp
	screenBroker
)

// Model is the root model: it owns the store and the components and
// dispatches messages to them.
type Model struct {
	opt  Options
	st   *store.Store
	km   *keys.KeyMap
	sty  *styles.Styles
	lang *filterbar.Lang

	conns  connlist.Model
	units  unitlist.Model
	detail detail.Model
	hex    hexview.Model
	stats  stats.Model
	help   help.Model
	panel  brokerpanel.Model
	bar    filterbar.Model
	cmd    cmdline.Model

	w, h      int
	rects     [numPanes]rect
	laidConns int // connections when the layout was computed
	focus     Pane
	maxed     bool
	screen    screen

	done   bool // the source closed Units
	paused bool
	status string
	isErr  bool

	connSel int // -1: all connections
	// pendingConn is the --conn to choose when it appears (0: none).
	pendingConn int

	flt     filterState
	search  searchState
	shown   int32 // unit shown in detail, -1 none
	field   *decode.Field
	jumps   []int32
	marks   map[byte]int32
	prefix  string // "m" or "'" awaiting a letter
	count   int    // numeric prefix (vim's count)
	ticking bool
	// panelTicking: a broker panel refresh is scheduled.
	panelTicking bool
	driven       bool   // tests deliver units and skip timers
	pace         *pacer // nil: every View renders (tests driving the model)
}

// New builds the model; Init starts reading opt.Units.
func New(opt Options) Model {
	km, sty, lang := opt.KeyMap, opt.Styles, opt.Lang
	if km == nil {
		km = keys.DefaultKeyMap()
	}
	if sty == nil {
		sty = styles.DefaultStyles()
	}
	if lang == nil {
		lang = DefaultLang()
	}
	st := store.New()
	// The store gets half the budget, and holds the live heap to it; the
	// rest is the collector's headroom over the live heap (the budget is
	// its soft limit), the decoders' state and the units on their way from
	// the pipeline.
	if opt.Memory > 0 {
		st.SetBudget(max(opt.Memory/2, 1))
	}
	st.SetHeapBound(true)
	st.SetDiskLimit(opt.Disk)
	m := Model{
		opt: opt, st: st, km: km, sty: sty, lang: lang,
		conns:   connlist.New(st, km, sty),
		units:   unitlist.New(st, km, sty),
		detail:  detail.New(km, sty),
		hex:     hexview.New(km, sty),
		stats:   stats.New(km, sty),
		help:    help.New(km, sty),
		panel:   brokerpanel.New(km, sty),
		bar:     filterbar.New(lang, km, sty),
		cmd:     cmdline.New(sty),
		focus:   PaneUnits,
		connSel: -1,
		shown:   -1,
		marks:   map[byte]int32{},
	}
	m.units.Follow = opt.Live
	m.ticking = opt.Units != nil // Init schedules the first tick
	m.focusPane(PaneUnits)
	if opt.Filter != "" {
		// Units are filtered as they arrive (ingest catches the filter up).
		if match, err := lang.Compile(opt.Filter); err != nil {
			m.setStatus(err.Error(), true)
		} else {
			m.flt.expr, m.flt.match = opt.Filter, match
		}
	}
	m.pendingConn = opt.Conn
	return m
}

// Init starts reading units and errors, and the progress ticks that New
// accounted for.
func (m Model) Init() tea.Cmd {
	var tick tea.Cmd
	if m.ticking {
		tick = tickCmd()
	}
	return tea.Batch(waitUnitsUpTo(m.opt.Units, firstUnits), waitErr(m.opt.Err), tick)
}

// Update dispatches a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
	case unitsMsg:
		cmd = m.ingest(msg)
	case errMsg:
		m.setStatus(msg.err.Error(), true)
		cmd = waitErr(m.opt.Err)
	case tickMsg:
		m.ticking = false
		cmd = m.tick()
	case filterDoneMsg:
		cmd = m.filterDone(msg)
	case findDoneMsg:
		m.findDone(msg)
	case exportDoneMsg:
		m.exportDone(msg)
	case brokerSnapMsg:
		cmd = m.brokerRefreshed(msg)
	case brokerpanel.JumpMsg:
		cmd = m.brokerJump(msg)
	case routeMsg:
		m.panel.SetRoute(msg.query, msg.route, msg.err)
	case statsMsg:
		m.stats.SetStats(msg.st, msg.conns)
		m.stats.SetNotes(msg.notes, m.done)
		m.stats.SetBrokerLatency(msg.brokerLat)
	case filterbar.ChangedMsg, filterbar.AppliedMsg, filterbar.CancelledMsg, cmdline.ExecMsg, cmdline.ErrorMsg:
		cmd = m.promptEvent(msg)
	case tea.KeyPressMsg:
		cmd = m.key(msg)
	case tea.MouseMsg:
		cmd = m.mouse(msg)
	}
	cmd = tea.Batch(cmd, m.sync())
	if m.pace != nil {
		cmd = tea.Batch(cmd, m.pace.pace(msg))
	}
	return m, cmd
}

// sync propagates selection: unit -> detail and hex, field -> highlight.
func (m *Model) sync() tea.Cmd {
	if sel := m.units.Selected(); sel != m.shown {
		m.shown = sel
		var u *decode.Unit
		if sel >= 0 {
			u = m.st.Load(sel) // with its bytes, however many are spilled later
		}
		m.detail.SetUnit(u)
		if u != nil {
			m.hex.SetBytes(u.Raw)
		} else {
			m.hex.SetBytes(nil)
		}
		m.field = nil
	}
	if f := m.detail.Field(); f != m.field {
		m.field = f
		if f != nil {
			m.hex.Highlight(f.Offset, f.Length)
		} else {
			m.hex.Highlight(0, 0)
		}
	}
	if c := m.conns.Chosen(); c != m.connSel {
		m.connSel = c
		return m.connChanged()
	}
	return nil
}

// promptDone handles what the filter bar or the command line reports
// after a key at once, in key order. Run as commands, each on a goroutine
// of its own, the reports of a burst of keys (a paste) could arrive out of
// order, and a filter typed as "frame.len > 1000" end up applied as
// "frame.len > 10". The prompts' commands only return a message.
func (m *Model) promptDone(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return m.promptEvent(cmd())
}

// promptEvent acts on a report of the filter bar or the command line.
func (m *Model) promptEvent(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case filterbar.ChangedMsg:
		return m.setFilter(msg.Expr, msg.Match)
	case filterbar.AppliedMsg:
		return m.barApplied(msg)
	case filterbar.CancelledMsg:
		if msg.Mode == filterbar.ModeFilter && msg.Prev != m.flt.expr {
			var match func(*decode.Unit) bool
			if strings.TrimSpace(msg.Prev) != "" {
				match, _ = m.lang.Compile(msg.Prev)
			}
			return m.setFilter(msg.Prev, match)
		}
	case cmdline.ExecMsg:
		return m.exec(msg)
	case cmdline.ErrorMsg:
		m.setStatus(msg.Text, true)
	}
	return nil
}

func (m *Model) setStatus(s string, isErr bool) { m.status, m.isErr = text.OneLine(s), isErr }

// key handles a key press: prompts first, then pending prefixes, then
// global bindings, then the focused component.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.bar.Active:
		m.bar, cmd = m.bar.Update(k)
		return m.promptDone(cmd)
	case m.cmd.Active:
		m.cmd, cmd = m.cmd.Update(k)
		return m.promptDone(cmd)
	case m.prefix != "":
		return m.prefixed(k)
	}
	km := m.km
	if m.screen != screenMain {
		switch {
		case key.Matches(k, km.Quit) && k.String() == "ctrl+c":
			return tea.Quit
		case key.Matches(k, km.Cancel, km.Quit), m.screen == screenHelp && key.Matches(k, km.Help),
			m.screen == screenStats && key.Matches(k, km.Stats), m.screen == screenBroker && key.Matches(k, km.Broker):
			m.screen = screenMain
		case m.screen == screenBroker && key.Matches(k, km.Command):
			m.cmd.Open("")
		case m.screen == screenHelp:
			m.help, cmd = m.help.Update(k)
		case m.screen == screenBroker:
			m.panel, cmd = m.panel.Update(k)
		default:
			m.stats, cmd = m.stats.Update(k)
		}
		return cmd
	}
	if s := k.String(); len(s) == 1 && s[0] >= '0' && s[0] <= '9' && (m.count > 0 || s != "0") {
		m.count = m.count*10 + int(s[0]-'0')
		m.setStatus(strconv.Itoa(m.count), false)
		return nil
	}
	count := m.count
	m.count = 0
	if count > 0 {
		m.status = ""
	}
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.Help):
		m.screen = screenHelp
	case key.Matches(k, km.Stats):
		return m.openStats()
	case key.Matches(k, km.Broker):
		return m.openBroker()
	case key.Matches(k, km.NextPane):
		m.focusPane((m.focus + 1) % numPanes)
	case key.Matches(k, km.PrevPane):
		m.focusPane((m.focus + numPanes - 1) % numPanes)
	case key.Matches(k, km.Maximise):
		m.maxed = !m.maxed
		m.layout()
	case key.Matches(k, km.Filter):
		m.bar.Open(filterbar.ModeFilter, m.flt.expr)
		m.layout()
	case key.Matches(k, km.Search):
		m.bar.Open(filterbar.ModeSearch, m.search.text)
		m.layout()
	case key.Matches(k, km.Command):
		m.cmd.Open("")
	case key.Matches(k, km.SavePcapng):
		if m.opt.ExportPcapng != nil {
			m.cmd.Open("save ")
		} else {
			m.setStatus("pcapng export is not available for this source", true)
		}
	case key.Matches(k, km.ExportJSON):
		m.cmd.Open("export ")
	case key.Matches(k, km.SearchNext):
		return m.find(+1)
	case key.Matches(k, km.SearchPrev):
		return m.find(-1)
	case key.Matches(k, km.Follow):
		m.setFollow(!m.units.Follow)
	case key.Matches(k, km.Pause):
		m.setPaused(!m.paused)
	case key.Matches(k, km.Answer):
		m.jumpPair(true)
	case key.Matches(k, km.Request):
		m.jumpPair(false)
	case key.Matches(k, km.Back):
		m.back()
	case key.Matches(k, km.Mark), key.Matches(k, km.GotoMark):
		m.prefix = k.String()
		m.setStatus(k.String()+"…", false)
	case key.Matches(k, km.ClearFilter):
		return m.escape()
	case count > 0 && key.Matches(k, km.Bottom):
		m.gotoN(count)
	default:
		return m.toFocused(k)
	}
	return nil
}

func (m *Model) prefixed(k tea.KeyPressMsg) tea.Cmd {
	p := m.prefix
	m.prefix = ""
	m.status = ""
	s := k.String()
	if len(s) != 1 || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return nil
	}
	c := s[0]
	if p == "m" {
		ix := m.units.Selected()
		if ix < 0 {
			return nil
		}
		if old, ok := m.marks[c]; ok {
			m.units.SetMark(old, 0)
		}
		m.marks[c] = ix
		m.units.SetMark(ix, c)
		m.setStatus("mark "+s+" set on #"+strconv.Itoa(m.st.Unit(ix).N), false)
		return nil
	}
	ix, ok := m.marks[c]
	if !ok {
		m.setStatus("no mark "+s, true)
		return nil
	}
	m.jumpTo(ix, true)
	return nil
}

// escape clears, in order: a pending status, the search, the filter, the
// connection choice.
func (m *Model) escape() tea.Cmd {
	switch {
	case m.maxed:
		m.maxed = false
		m.layout()
	case m.search.text != "":
		m.search.text = ""
		m.setStatus("search cleared", false)
	case m.flt.expr != "":
		m.setStatus("filter cleared", false)
		return m.setFilter("", nil)
	case m.connSel >= 0:
		m.conns.Choose(-1)
	default:
		m.status = ""
	}
	return nil
}

func (m *Model) toFocused(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	switch m.focus {
	case PaneConns:
		m.conns, cmd = m.conns.Update(msg)
	case PaneUnits:
		m.units, cmd = m.units.Update(msg)
	case PaneDetail:
		m.detail, cmd = m.detail.Update(msg)
	case PaneHex:
		m.hex, cmd = m.hex.Update(msg)
	}
	return cmd
}

func (m *Model) focusPane(p Pane) {
	m.focus = p
	m.conns.Focused = p == PaneConns
	m.units.Focused = p == PaneUnits
	m.detail.Focused = p == PaneDetail
	m.hex.Focused = p == PaneHex
	m.layout() // maximised and compact layouts follow the focus
}

// mouse routes clicks and wheel events to the pane under the pointer, in
// the pane's own coordinates.
func (m *Model) mouse(msg tea.MouseMsg) tea.Cmd {
	if m.screen == screenHelp {
		m.help, _ = m.help.Update(msg)
		return nil
	}
	if m.screen == screenStats {
		m.stats, _ = m.stats.Update(msg)
		return nil
	}
	if m.screen == screenBroker {
		if w, ok := msg.(tea.MouseWheelMsg); ok {
			m.panel, _ = m.panel.Update(w)
		}
		return nil
	}
	mo := msg.Mouse()
	for p := PaneConns; p < numPanes; p++ {
		r := m.rects[p]
		if r.w == 0 || mo.X < r.x || mo.X >= r.x+r.w || mo.Y < r.y-1 || mo.Y >= r.y+r.h {
			continue
		}
		mo.X -= r.x
		mo.Y -= r.y
		switch msg.(type) {
		case tea.MouseClickMsg:
			m.focusPane(p)
			if mo.Y < 0 {
				return nil // the title border
			}
			return m.toFocused(tea.MouseClickMsg(mo))
		case tea.MouseWheelMsg:
			old := m.focus
			m.focus = p
			cmd := m.toFocused(tea.MouseWheelMsg(mo))
			m.focus = old
			return cmd
		}
		return nil
	}
	return nil
}

func (m *Model) setFollow(on bool) {
	m.units.Follow = on
	if on {
		m.paused = false
		m.rebase()
		m.units.SetCursor(m.units.Len() - 1)
	}
}

func (m *Model) setPaused(on bool) {
	m.paused = on
	if on {
		m.units.Follow = false
		m.setStatus("paused: new units are counted but not listed (p resumes)", false)
	} else {
		m.setStatus("", false)
		m.rebase()
	}
}
