package tui

import (
	"bufio"
	"encoding/json"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
	"github.com/wiretap-dev/wiretap/tui/store"
)

// selected returns the unit under the list's cursor.
func (d *driver) selected() *decode.Unit {
	d.t.Helper()
	ix := d.m.units.Selected()
	if ix < 0 {
		d.t.Fatal("no unit selected")
	}
	return d.m.st.Unit(ix)
}

// firstOf returns the first stored unit satisfying ok.
func (d *driver) firstOf(ok func(u *decode.Unit) bool) *decode.Unit {
	d.t.Helper()
	for _, u := range d.m.st.Snapshot().All() {
		if ok(u) {
			return u
		}
	}
	d.t.Fatal("no such unit")
	return nil
}

func (d *driver) gotoUnit(n int) {
	d.keys(":")
	d.typeText("goto " + strconv.Itoa(n))
	d.keys("enter")
}

func TestScreenFitsTerminal(t *testing.T) {
	for _, sz := range [][2]int{{160, 50}, {120, 36}, {100, 30}, {80, 24}, {60, 20}} {
		d := withUnits(t, 500, sz[0], sz[1])
		for _, screen := range []string{"main", "z", "?", "S"} {
			if screen != "main" {
				d.keys(screen)
			}
			lines := strings.Split(d.screen(), "\n")
			if len(lines) != sz[1] {
				t.Errorf("%dx%d %s: %d lines", sz[0], sz[1], screen, len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w != sz[0] {
					t.Errorf("%dx%d %s: line %d is %d cells wide: %q", sz[0], sz[1], screen, i, w, l)
				}
			}
			if screen != "main" {
				d.keys("esc")
			}
		}
	}
}

func TestProgressiveLoading(t *testing.T) {
	ch := make(chan []*decode.Unit, 4)
	done, total := int64(25), int64(100)
	d := newDriver(t, Options{Title: "big.pcap", Units: ch, Progress: func() (int64, int64) { return done, total }}, 120, 30)
	d.contains("reading 25%", "waiting for units")
	g := fake.New(7)
	d.feed(g.Units(50), false)
	d.contains("reading 25%", strconv.Itoa(d.m.st.Len())+" units", "protocol-header")
	done = 100
	d.feed(g.Units(50), true)
	d.lacks("reading")
	d.contains(strconv.Itoa(d.m.st.Len()) + " units")
}

func TestFilterLiveValidationAndApply(t *testing.T) {
	d := withUnits(t, 600, 140, 40)
	d.keys("/")
	d.typeText(`pgsql.type == "DataRo`)
	d.contains("filter:") // error text from the language
	d.typeText(`w"`)
	d.lacks("filter:") // compiles now, and was applied live
	for _, ix := range seqSlice(d.m.units.Rows()) {
		if u := d.m.st.Unit(ix); u.Type != "DataRow" {
			t.Fatalf("row #%d is %s", u.N, u.Type)
		}
	}
	if d.m.units.Len() == 0 {
		t.Fatal("no DataRow rows")
	}
	d.keys("enter")
	d.contains(`filter pgsql.type == "DataRow": `, "B*", "└ DataRow")

	// esc in the bar reverts to the filter applied before.
	d.keys("/")
	d.typeText(` || 1`)
	d.keys("esc")
	if d.m.flt.expr != `pgsql.type == "DataRow"` {
		t.Fatalf("filter after esc = %q", d.m.flt.expr)
	}
	// esc outside clears it.
	d.keys("esc")
	if d.m.flt.match != nil || d.m.units.Len() != d.m.st.Top().Len() {
		t.Fatalf("filter not cleared: %q, %d rows", d.m.flt.expr, d.m.units.Len())
	}
	// A filter typed and abandoned leaves no filter.
	d.keys("/")
	d.typeText("amqp")
	d.keys("esc")
	if d.m.flt.match != nil || d.m.units.Len() != d.m.st.Top().Len() {
		t.Fatalf("filter not cleared: %q, %d rows", d.m.flt.expr, d.m.units.Len())
	}
}

func TestFilterErrorUnderlinedAndNotApplied(t *testing.T) {
	d := withUnits(t, 100, 120, 30)
	d.keys("/")
	d.typeText(`amqp.methd == 1`)
	if d.m.bar.Err() == nil {
		t.Fatal("no error for unknown field")
	}
	pos, n := d.m.lang.ErrorSpan(d.m.bar.Err())
	if pos != 0 || n != len("amqp.methd") {
		t.Errorf("error span %d+%d", pos, n)
	}
	if !strings.Contains(d.m.bar.View(), "\x1b[") {
		t.Error("bar has no styling for the error")
	}
	d.keys("enter") // refused while invalid
	if !d.m.bar.Active || d.m.flt.expr == "amqp.methd == 1" {
		t.Fatal("invalid filter applied")
	}
}

func TestFilterCompletion(t *testing.T) {
	d := withUnits(t, 100, 120, 30)
	d.keys("/")
	d.typeText("amqp.checks")
	d.keys("tab")
	if v := d.m.bar.Value(); !strings.HasPrefix(v, "amqp.checksum") {
		t.Fatalf("completed to %q", v)
	}
}

func TestChecksumMismatchSelectable(t *testing.T) {
	d := withUnits(t, 300, 140, 40)
	d.keys("/")
	d.typeText(`amqp.checksum == "mismatch"`)
	d.keys("enter")
	if d.m.units.Len() == 0 {
		t.Fatal("no mismatching transfers")
	}
	u := d.selected()
	if u.Checksum() == nil || u.Checksum().Status != decode.ChecksumMismatch {
		t.Fatalf("selected %+v", u.Checksum())
	}
	d.contains("✗", "checksum MISMATCH (crc-32: footer says 0x")
	// The connection row summarises verdicts with symbols.
	d.contains("✓", "-")
}

func TestExpandCompressedGroup(t *testing.T) {
	d := withUnits(t, 300, 140, 40)
	parent := d.firstOf(func(u *decode.Unit) bool { return u.Type == "CompressedMessages" })
	d.gotoUnit(parent.N)
	if d.selected() != parent {
		t.Fatalf("goto selected #%d", d.selected().N)
	}
	d.contains("▸ CompressedMessages")
	d.lacks("└ ParseComplete")
	d.keys("enter")
	d.contains("▾ CompressedMessages", "└ ParseComplete", "B*")
	d.keys("j")
	if u := d.selected(); u.Parent != parent || u.Type != "ParseComplete" {
		t.Fatalf("row after container: #%d %s", u.N, u.Type)
	}
	d.keys("h") // on a nested row: collapse the container, back on it
	if d.selected() != parent {
		t.Fatal("h did not return to the container")
	}
	d.lacks("└ ParseComplete")
}

func TestAnswerJumps(t *testing.T) {
	d := withUnits(t, 3000, 140, 40)
	st := d.m.st
	cases := []struct {
		req    string
		answer func(req, ans *decode.Unit) bool
	}{
		{"queue.declare", func(r, a *decode.Unit) bool { return a.Type == "queue.declare-ok" && a.Channel == r.Channel }},
		{"confirm.select", func(r, a *decode.Unit) bool { return a.Type == "confirm.select-ok" }},
		{"basic.publish", func(r, a *decode.Unit) bool {
			tag, _ := store.FieldUint(a.Fields(), "deliverytag")
			return a.Type == "basic.ack" && tag == publishSeq(st, r)
		}},
		{"transfer", func(r, a *decode.Unit) bool {
			id, _ := store.FieldUint(r.Fields(), "deliveryid")
			first, _ := store.FieldUint(a.Fields(), "first")
			return a.Type == "disposition" && id == first
		}},
		{"Parse", func(r, a *decode.Unit) bool { return a.Type == "ParseComplete" && a.Parent != nil }},
		{"Bind", func(r, a *decode.Unit) bool { return a.Type == "BindComplete" }},
		{"Execute", func(r, a *decode.Unit) bool { return a.Type == "CommandComplete" }},
		{"Sync", func(r, a *decode.Unit) bool { return a.Type == "ReadyForQuery" }},
	}
	for _, c := range cases {
		// The tenth request of its kind (or the last, if fewer), so
		// pairing has state to get wrong.
		var req *decode.Unit
		k := 0
		for _, u := range st.Snapshot().All() {
			if u.Type == c.req && k < 10 {
				req = u
				k++
			}
		}
		if req == nil {
			t.Fatalf("no %s in the fake capture", c.req)
		}
		d.gotoUnit(req.N)
		d.keys("a")
		ans := d.selected()
		if ans == req || !c.answer(req, ans) || ans.N < req.N {
			t.Errorf("%s #%d: answer #%d %s (%s)", c.req, req.N, ans.N, ans.Type, d.m.status)
			continue
		}
		d.keys("A")
		if d.selected() != req {
			t.Errorf("%s: A from #%d went to #%d", c.req, ans.N, d.selected().N)
		}
		d.keys("a", "ctrl+o")
		if d.selected() != req {
			t.Errorf("%s: ctrl+o went to #%d", c.req, d.selected().N)
		}
	}
}

// publishSeq recomputes a publish's confirm sequence number the slow way:
// publishes on its channel after confirm.select, counted.
func publishSeq(st *store.Store, pub *decode.Unit) uint64 {
	var seq uint64
	on := false
	for _, u := range st.Snapshot().All() {
		if u.Conn != pub.Conn || u.Channel != pub.Channel {
			continue
		}
		if u.Type == "confirm.select" {
			on, seq = true, 0
		}
		if on && u.Type == "basic.publish" {
			seq++
		}
		if u == pub {
			return seq
		}
	}
	return 0
}

func TestMarksAndGotoCount(t *testing.T) {
	d := withUnits(t, 500, 120, 30)
	d.keys("1", "2", "G")
	if n := d.selected().N; n != 12 {
		t.Fatalf("12G selected #%d", n)
	}
	d.keys("m", "x", "G")
	if d.selected().N == 12 {
		t.Fatal("G did not move")
	}
	d.keys("'", "x")
	if n := d.selected().N; n != 12 {
		t.Fatalf("'x selected #%d", n)
	}
	d.contains("▶x")
	d.keys("'", "q")
	d.contains("no mark q")
}

func TestVimMotions(t *testing.T) {
	d := withUnits(t, 500, 120, 30)
	top := d.m.st.Top().Slice()
	d.keys("j", "j", "j", "k")
	if d.m.units.Cursor() != 2 {
		t.Fatalf("cursor %d after jjjk", d.m.units.Cursor())
	}
	page := d.m.rects[PaneUnits].h - 1
	d.keys("ctrl+d")
	if c := d.m.units.Cursor(); c != 2+page/2 {
		t.Fatalf("ctrl+d: cursor %d, want %d", c, 2+page/2)
	}
	d.keys("ctrl+u", "G")
	if c := d.m.units.Cursor(); c != len(top)-1 {
		t.Fatalf("G: cursor %d", c)
	}
	d.contains("#" + strconv.Itoa(d.m.st.Unit(top[len(top)-1]).N))
	d.keys("g")
	if d.m.units.Cursor() != 0 {
		t.Fatal("g")
	}
}

func TestSearch(t *testing.T) {
	d := withUnits(t, 800, 120, 30)
	d.keys("s")
	d.typeText("invoices")
	d.keys("enter")
	first := d.selected()
	if !strings.Contains(first.Summary, "invoices") {
		t.Fatalf("search stopped on #%d %q", first.N, first.Summary)
	}
	d.keys("n")
	second := d.selected()
	if second.N <= first.N || !strings.Contains(second.Summary+second.Type, "invoices") && !searchFields(second, "invoices") {
		t.Fatalf("n went to #%d %q", second.N, second.Summary)
	}
	d.keys("N")
	if d.selected() != first {
		t.Fatalf("N went to #%d", d.selected().N)
	}
}

func searchFields(u *decode.Unit, s string) bool {
	found := false
	decode.Walk(u.Fields(), func(f *decode.Field) bool {
		found = found || strings.Contains(f.Text(), s)
		return true
	})
	return found
}

func TestPanesTabMaximiseAndDetail(t *testing.T) {
	d := withUnits(t, 100, 140, 40)
	tr := d.firstOf(func(u *decode.Unit) bool { return u.Type == "transfer" })
	d.gotoUnit(tr.N)
	d.keys("tab")
	if d.m.focus != PaneDetail {
		t.Fatalf("focus %d", d.m.focus)
	}
	d.contains("transfer: \"transfer\"", "delivery-id: ", "(described list 0x14)")
	// Down to delivery-id: the hex title names its range.
	for i := 0; i < 4 && (d.m.field == nil || d.m.field.Key != "delivery-id"); i++ {
		d.keys("j")
	}
	d.contains("delivery-id [8:12]")
	d.keys("z")
	if strings.Count(d.screen(), "╭─") != 1 {
		t.Fatal("maximised screen has more than one pane")
	}
	d.keys("z", "tab", "tab", "tab")
	if d.m.focus != PaneUnits {
		t.Fatalf("tab cycle ends on %d", d.m.focus)
	}
}

func TestConnectionChoice(t *testing.T) {
	d := withUnits(t, 300, 140, 40)
	d.keys("shift+tab") // connections
	d.keys("j")         // first connection
	c := d.m.st.Conns()[d.m.connSel]
	if c.ID != 1 {
		t.Fatalf("first row is connection %d", c.ID)
	}
	for _, ix := range seqSlice(d.m.units.Rows()) {
		if d.m.st.Unit(ix).Conn != c {
			t.Fatal("unit of another connection listed")
		}
	}
	// A filter then runs within the connection.
	d.send(tea.KeyPressMsg{Code: '/', Text: "/"})
	d.typeText(`frame.len > 0`)
	d.keys("enter")
	if d.m.flt.matched() != d.m.st.ConnUnits(d.m.connSel).Len() {
		t.Fatalf("filter within connection: %d rows, conn has %d", d.m.flt.matched(), d.m.st.ConnUnits(d.m.connSel).Len())
	}
	d.keys(":")
	d.typeText("conn 3")
	d.keys("enter")
	if d.m.st.Conns()[d.m.connSel].ID != 3 {
		t.Fatal(":conn 3")
	}
	d.keys(":")
	d.typeText("conn 0")
	d.keys("enter")
	if d.m.connSel != -1 {
		t.Fatal(":conn 0")
	}
}

func TestMouse(t *testing.T) {
	d := withUnits(t, 300, 140, 40)
	r := d.m.rects[PaneUnits]
	// Row 3 of the list: inner y 0 is the header.
	d.send(tea.MouseClickMsg{X: r.x + 5, Y: r.y + 3, Button: tea.MouseLeft})
	if c := d.m.units.Cursor(); c != 2 {
		t.Fatalf("click selected row %d", c)
	}
	d.send(tea.MouseWheelMsg{X: r.x + 5, Y: r.y + 3, Button: tea.MouseWheelDown})
	if c := d.m.units.Cursor(); c != 5 {
		t.Fatalf("wheel: cursor %d", c)
	}
	dr := d.m.rects[PaneDetail]
	d.send(tea.MouseClickMsg{X: dr.x + 2, Y: dr.y + 1, Button: tea.MouseLeft})
	if d.m.focus != PaneDetail {
		t.Fatal("click did not focus the detail pane")
	}
}

func TestFollowLive(t *testing.T) {
	ch := make(chan []*decode.Unit)
	d := newDriver(t, Options{Title: "broker", Live: true, Units: ch}, 120, 30)
	g := fake.New(3)
	d.feed(g.Units(100), false)
	d.contains("▶ follow", "live")
	last := func() int32 { rows := d.m.units.Rows(); return rows.At(rows.Len() - 1) }
	if d.m.units.Selected() != last() {
		t.Fatal("follow: cursor not on the newest unit")
	}
	d.keys("k") // moving up leaves follow mode
	d.feed(g.Units(100), false)
	if d.m.units.Follow || d.m.units.Selected() == last() {
		t.Fatal("still following after k")
	}
	d.keys("F")
	if d.m.units.Selected() != last() {
		t.Fatal("F did not go to the newest unit")
	}
	d.keys("p")
	n := d.m.units.Len()
	d.feed(g.Units(100), false)
	if d.m.units.Len() != n {
		t.Fatal("paused list grew")
	}
	d.contains(strconv.Itoa(d.m.st.Len()) + " units")
	d.keys("p")
	if d.m.units.Len() == n {
		t.Fatal("resumed list did not catch up")
	}
}

func TestHelpListsEveryKey(t *testing.T) {
	d := withUnits(t, 10, 120, 120)
	d.keys("?")
	s := d.screen()
	for _, sec := range d.m.km.Sections() {
		for _, b := range sec.Bindings {
			if h := b.Help(); !strings.Contains(s, h.Key) || !strings.Contains(s, h.Desc) {
				t.Errorf("help lacks %q %q", h.Key, h.Desc)
			}
		}
	}
	// Every binding of the key map is in a section.
	listed := map[string]bool{}
	for _, sec := range d.m.km.Sections() {
		for _, b := range sec.Bindings {
			listed[strings.Join(b.Keys(), " ")] = true
		}
	}
	for _, b := range allBindings(d.m.km) {
		if !listed[strings.Join(b.Keys(), " ")] && b.Help().Desc != "apply" && b.Help().Desc != "cancel" {
			t.Errorf("binding %v not in help", b.Keys())
		}
	}
	d.keys("esc")
	d.lacks("Help: every key")
}

func allBindings(km any) []key.Binding {
	var out []key.Binding
	v := reflectFields(km)
	for _, f := range v {
		if b, ok := f.(key.Binding); ok {
			out = append(out, b)
		}
	}
	return out
}

func TestStatsView(t *testing.T) {
	d := withUnits(t, 2000, 120, 80)
	d.keys("S")
	d.contains("Units per type", "basic.publish", "Units over time", "Request → answer latency",
		"<=1ms", "<=5ms", "<=50ms", "<=500ms", "<=1000ms", ">1s", "p50", "p90", "p99")
	if !strings.ContainsAny(d.screen(), "▁▂▃▄▅▆▇█") {
		t.Error("no chart")
	}
}

func TestCommandsExport(t *testing.T) {
	dir := t.TempDir()
	var pcapUnits []*decode.Unit
	opt := Options{Title: "x", ExportPcapng: func(w io.Writer, units iter.Seq[*decode.Unit]) error {
		pcapUnits = slices.Collect(units)
		_, err := w.Write([]byte("pcapng"))
		return err
	}}
	d := newDriver(t, opt, 120, 30)
	d.feed(fake.Generate(400, 1), true)
	d.keys("/")
	d.typeText(`pgsql.type == "DataRow" || amqp.method == "basic.ack"`)
	d.keys("enter")
	shown := d.m.units.Len()

	jpath := filepath.Join(dir, "out.json")
	d.keys(":")
	d.typeText("export " + jpath)
	d.keys("enter")
	d.contains("wrote " + strconv.Itoa(shown) + " units to " + jpath)
	f, err := os.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		if typ := obj["type"]; typ != "DataRow" && typ != "basic.ack" {
			t.Fatalf("exported %v", typ)
		}
		lines++
	}
	if lines != shown {
		t.Fatalf("%d lines, %d shown", lines, shown)
	}

	ppath := filepath.Join(dir, "out.pcapng")
	d.keys("w")
	d.typeText(ppath)
	d.keys("enter")
	if b, err := os.ReadFile(ppath); err != nil || string(b) != "pcapng" {
		t.Fatalf("pcapng file: %q %v", b, err)
	}
	for _, u := range pcapUnits {
		if u.Parent != nil {
			t.Fatal("nested unit handed to the pcapng writer")
		}
		if u.Type != "CompressedMessages" && u.Type != "basic.ack" {
			t.Fatalf("pcapng export got %s", u.Type)
		}
	}
	// A filtered view's file says what it leaves out.
	d.contains("only the frames the filter matches")
	// An existing file is not replaced without the bang.
	os.WriteFile(ppath, []byte("keep me"), 0o644)
	d.keys(":")
	d.typeText("save " + ppath)
	d.keys("enter")
	d.contains("the file exists (:save! replaces it)")
	if b, _ := os.ReadFile(ppath); string(b) != "keep me" {
		t.Fatalf(":save replaced an existing file: %q", b)
	}
	d.keys(":")
	d.typeText("w! " + ppath)
	d.keys("enter")
	if b, _ := os.ReadFile(ppath); string(b) != "pcapng" {
		t.Fatalf(":w! did not replace the file: %q", b)
	}
	d.keys(":")
	d.typeText("export " + jpath)
	d.keys("enter")
	d.contains("the file exists (:export! replaces it)")
	d.keys(":")
	d.typeText("frobnicate")
	d.keys("enter")
	d.contains("unknown command: frobnicate")
	d.keys(":")
	d.typeText("q")
	nm, cmd := d.m.Update(keyMsg("enter"))
	d.m = nm.(Model)
	if cmd == nil {
		t.Fatal(":q returned no command")
	}
	// The command line's report is executed with the key: enter on :q
	// returns the quit command itself.
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal(":q did not quit")
	}
}

func TestGolden(t *testing.T) {
	d := withUnits(t, 400, 120, 36)
	d.golden("main")
	parent := d.firstOf(func(u *decode.Unit) bool { return u.Type == "CompressedMessages" })
	d.gotoUnit(parent.N)
	d.keys("enter", "j", "tab")
	d.golden("expanded")
	d.keys("esc", "S")
	d.golden("stats")
	n := withUnits(t, 400, 80, 24)
	n.golden("narrow")
}

func TestCompactLayoutTakesTurns(t *testing.T) {
	d := withUnits(t, 100, 80, 24)
	d.contains("Detail #1")
	d.lacks("Bytes (")
	d.keys("tab", "tab") // detail, then bytes
	if d.m.focus != PaneHex {
		t.Fatalf("focus %d", d.m.focus)
	}
	d.contains("Bytes (8 bytes)", "0000  41 4d 51 50")
	d.lacks("Detail #1")
}

func TestFilterProgressShown(t *testing.T) {
	d := withUnits(t, 40000, 120, 30)
	d.firstResult = true // stop after the first screenful, as a keypress would
	d.keys("/")
	d.typeText(`frame.len > 0`)
	if !d.m.flt.running {
		t.Fatal("scan of the rest not under way")
	}
	d.contains("filtering ")
	if d.m.units.Len() != firstScreen {
		t.Fatalf("first result %d rows", d.m.units.Len())
	}
}

// TestStatsConnectionNotes decodes a real zstd-compressed libpq session
// and checks the statistics view shows the connection's compression
// report, and that a source still running says when notes come.
func TestStatsConnectionNotes(t *testing.T) {
	var units []*decode.Unit
	p := pipeline.New(pipeline.Config{Sink: func(u *decode.Unit) { units = append(units, u) }})
	if _, err := capture.ReadFile("../testdata/pgsql-libpq-zstd.pcapng", p, nil); err != nil {
		t.Fatal(err)
	}
	p.Finish()
	var note string
	for _, c := range p.Conns() {
		for _, n := range c.Notes {
			if strings.HasPrefix(n, "pgsql compression") {
				note = n
			}
		}
	}
	if note == "" {
		t.Fatal("the capture's connection has no compression note")
	}

	d := newDriver(t, Options{Title: "x"}, 200, 120)
	d.feed(units, false)
	d.keys("S")
	d.contains("Connection notes", "shown when the source ends")

	d = newDriver(t, Options{Title: "x"}, 200, 120)
	d.feed(units, true)
	d.keys("S")
	d.contains("Connection notes", "conn 1: "+note[:40])
}

// TestStartOptions: --filter and --conn given on the command line apply
// from the start, the connection chosen once its units arrive.
func TestStartOptions(t *testing.T) {
	d := newDriver(t, Options{Title: "fake.pcapng", Filter: "frame.len > 0", Conn: 3}, 140, 40)
	units := fake.Generate(300, 1)
	d.feed(units[:150], false)
	d.feed(units[150:], true)
	if d.m.flt.expr != "frame.len > 0" || d.m.flt.match == nil {
		t.Fatalf("filter %q not applied", d.m.flt.expr)
	}
	if d.m.connSel < 0 || d.m.st.Conns()[d.m.connSel].ID != 3 {
		t.Fatalf("connection 3 not chosen: %d", d.m.connSel)
	}
	if want := d.m.st.ConnUnits(d.m.connSel).Len(); d.m.flt.matched() != want {
		t.Fatalf("%d rows, connection 3 has %d units", d.m.flt.matched(), want)
	}
	bad := newDriver(t, Options{Title: "fake.pcapng", Filter: "amqp.methd == 1"}, 140, 40)
	if bad.m.flt.match != nil || !strings.Contains(bad.m.status, "did you mean amqp.method") {
		t.Fatalf("a bad start filter: status %q", bad.m.status)
	}
}

// TestConnCommandSaysWhatExists: :conn past the last connection names the
// ones there are.
func TestConnCommandSaysWhatExists(t *testing.T) {
	d := withUnits(t, 300, 140, 40)
	d.keys(":")
	d.typeText("conn 99")
	d.keys("enter")
	if n := len(d.m.st.Conns()); !strings.Contains(d.m.status, "connections are 1 to "+strconv.Itoa(n)) {
		t.Fatalf("status %q", d.m.status)
	}
}

// TestTitleSaysDropped: a live source's dropped packets appear in the
// title once there are any.
func TestTitleSaysDropped(t *testing.T) {
	var n int64
	d := newDriver(t, Options{Title: "capture lo", Live: true, Dropped: func() int64 { return n }}, 160, 30)
	d.feed(fake.Generate(10, 1), false)
	if s := d.screen(); strings.Contains(s, "dropped") {
		t.Errorf("nothing dropped, yet the title says so:\n%s", strings.SplitN(s, "\n", 2)[0])
	}
	n = 12345
	d.feed(fake.Generate(10, 1), false)
	if title := strings.SplitN(d.screen(), "\n", 2)[0]; !strings.Contains(title, "12,345 packets dropped") {
		t.Errorf("title %q: want the 12,345 packets dropped", title)
	}
}
