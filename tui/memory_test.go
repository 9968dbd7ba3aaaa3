package tui

import (
	"bytes"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
	"github.com/wiretap-dev/wiretap/tui/store"
)

// TestMemoryBudgetKeepsEveryView: with a budget so small that every
// unit's bytes are spilled, the detail and hex panes, a filter on a field,
// answers and both exports show what they show with no budget; the title
// shows the memory in use.
func TestMemoryBudgetKeepsEveryView(t *testing.T) {
	dir := t.TempDir()
	run := func(budget int64, name string) (*driver, []byte, string) {
		var pcap bytes.Buffer
		opt := Options{Title: "x", Memory: budget, ExportPcapng: func(w io.Writer, units iter.Seq[*decode.Unit]) error {
			for u := range units {
				pcap.Write(u.Raw)
			}
			return nil
		}}
		d := newDriver(t, opt, 140, 50)
		t.Cleanup(func() { d.m.st.Close() })
		// fake.Generate is deterministic: the same units, apart, for each.
		units := fake.Generate(6000, 3)
		for i := 0; i < len(units); i += 1000 {
			d.send(unitsMsg{batches: [][]*decode.Unit{units[i:min(i+1000, len(units))]}, closed: i+1000 >= len(units)})
		}
		d.keys("/")
		d.typeText(`amqp.method.arguments.routing_key == "orders" || pgsql.payload`)
		d.keys("enter")
		d.keys("g", "j", "j", "j")
		jpath := filepath.Join(dir, name+".json")
		d.keys(":")
		d.typeText("export " + jpath)
		d.keys("enter")
		d.keys("w")
		d.typeText(filepath.Join(dir, name+".pcapng"))
		d.keys("enter")
		j, err := os.ReadFile(jpath)
		if err != nil {
			t.Fatal(err)
		}
		return d, j, pcap.String()
	}
	ref, refJSON, refPcap := run(0, "ref")
	d, gotJSON, gotPcap := run(1, "spilled")
	if n, err := d.m.st.Spilled(); n != d.m.st.Len() || err != nil {
		t.Fatalf("%d of %d units spilled (%v)", n, d.m.st.Len(), err)
	}
	if !slices.Equal(d.m.matches().Rows().Slice(), ref.m.matches().Rows().Slice()) || ref.m.flt.matched() == 0 {
		t.Fatalf("filter: %d rows, want %d", d.m.flt.matched(), ref.m.flt.matched())
	}
	if d.m.units.Selected() != ref.m.units.Selected() {
		t.Fatal("a different unit selected")
	}
	if got, want := d.m.detail.View(), ref.m.detail.View(); got != want || !strings.Contains(want, "length") {
		t.Fatalf("detail pane:\n%s\nwant:\n%s", got, want)
	}
	if got, want := d.m.hex.View(), ref.m.hex.View(); got != want {
		t.Fatalf("hex pane:\n%s\nwant:\n%s", got, want)
	}
	if !bytes.Equal(gotJSON, refJSON) || len(refJSON) == 0 {
		t.Fatalf("JSON export differs (%d bytes, want %d)", len(gotJSON), len(refJSON))
	}
	if gotPcap != refPcap || refPcap == "" {
		t.Fatalf("pcapng export differs (%d bytes, want %d)", len(gotPcap), len(refPcap))
	}
	for i := range int32(d.m.st.Len()) {
		if d.m.st.Answer(i) != ref.m.st.Answer(i) {
			t.Fatalf("answer of %d differs", i)
		}
	}
	d.contains("mem ")
	ref.lacks("mem ")
}

// TestShallowFilterOnFrozenUnits: filters on virtual fields, given from
// the start (--filter, caught up as units arrive), edited in the filter
// bar, given with :filter, and within a chosen connection, find over
// units all frozen (matched on their records, unread blobs) the rows they
// find with no budget.
func TestShallowFilterOnFrozenUnits(t *testing.T) {
	units := func() []*decode.Unit { return fake.Generate(8000, 5) }
	steps := func(budget int64) (rows [][]int32, d *driver) {
		d = newDriver(t, Options{Title: "x", Memory: budget, Filter: `amqp.channel == 1 && frame.number > 2000 || frame.len > 60`}, 140, 50)
		t.Cleanup(func() { d.m.st.Close() })
		us := units()
		feed := func(us []*decode.Unit, closed bool) {
			for i := 0; i < len(us); i += 500 {
				d.send(unitsMsg{batches: [][]*decode.Unit{us[i:min(i+500, len(us))]}, closed: closed && i+500 >= len(us)})
			}
		}
		snap := func() {
			if !d.m.filterShallow() {
				t.Fatalf("%q: not shallow", d.m.flt.expr)
			}
			rows = append(rows, d.m.matches().Rows().Slice())
		}
		feed(us[:5000], false)
		snap()
		d.keys("/")
		d.typeText(` || pgsql.type == "DataRow"`)
		d.keys("enter")
		snap()
		d.keys(":")
		d.typeText(`filter conn == 2 || frame.len > 300`)
		d.keys("enter")
		snap()
		d.keys(":")
		d.typeText("conn 2")
		d.keys("enter")
		snap()
		feed(us[5000:], true)
		snap()
		return rows, d
	}
	want, _ := steps(0)
	got, d := steps(1)
	if k, _ := d.m.st.Spilled(); k != d.m.st.Len() {
		t.Fatalf("%d of %d units frozen", k, d.m.st.Len())
	}
	for i := range want {
		if len(want[i]) == 0 || !slices.Equal(got[i], want[i]) {
			t.Fatalf("step %d: %d rows frozen, want %d", i, len(got[i]), len(want[i]))
		}
	}
}

// TestFilterResultPagesOut: under a budget far below what a filter's
// matches take, the filter's list pages out to the spill file as the scan
// hands it over, and the unit list, G and the catch-up of units that
// arrive later show what they show with no budget.
func TestFilterResultPagesOut(t *testing.T) {
	run := func(budget int64) *driver {
		d := newDriver(t, Options{Title: "x", Memory: budget}, 140, 50)
		t.Cleanup(func() { d.m.st.Close() })
		units := fake.Generate(150_000, 8)
		const early = 120_000
		for i := 0; i < early; i += 5000 {
			d.send(unitsMsg{batches: [][]*decode.Unit{units[i:min(i+5000, early)]}})
		}
		d.keys(":")
		d.typeText(`filter !(amqp.method.arguments.routing_key == "orders")`)
		d.keys("enter")
		d.keys("G")
		// More than a background scan's worth arrives: caught up in pages.
		d.send(unitsMsg{batches: [][]*decode.Unit{units[early:]}, closed: true})
		return d
	}
	ref, d := run(0), run(1)
	want, got := ref.m.matches().Rows().Slice(), d.m.matches().Rows().Slice()
	if len(want) < 4*store.ListPage || !slices.Equal(got, want) {
		t.Fatalf("%d matches, want %d", len(got), len(want))
	}
	if l := d.m.matches(); l.Paged() < l.Len()-store.ListPage {
		t.Fatalf("%d of %d matches in the spill file", l.Paged(), l.Len())
	}
	if ref.m.matches().Paged() != 0 {
		t.Fatal("matches written to a file with no budget")
	}
	if d.m.units.Selected() != ref.m.units.Selected() || d.m.units.Len() != ref.m.units.Len() {
		t.Fatalf("unit list: %d rows at %d, want %d at %d", d.m.units.Len(), d.m.units.Selected(), ref.m.units.Len(), ref.m.units.Selected())
	}
	// The screens but their title (which shows the memory used).
	body := func(d *driver) string { _, s, _ := strings.Cut(d.screen(), "\n"); return s }
	if body(d) != body(ref) {
		t.Fatalf("screen:\n%s\nwant:\n%s", d.screen(), ref.screen())
	}
}

// TestFilterMatchingEverythingStaysBounded: a filter matching every one
// of many frozen units adds to the store's accounted memory no more than
// a page of its list, and to the heap less than a fraction of the 4 bytes
// a match its result used to take; clearing it gives that back.
func TestFilterMatchingEverythingStaysBounded(t *testing.T) {
	const n = 600_000
	d := newDriver(t, Options{Title: "x", Memory: 4 << 20}, 140, 50)
	t.Cleanup(func() { d.m.st.Close() })
	g := fake.New(12)
	for d.m.st.Len() < n {
		d.send(unitsMsg{batches: [][]*decode.Unit{g.Units(8192)}})
	}
	d.send(unitsMsg{closed: true})
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	used0, _ := d.m.st.Memory()
	heap0 := heap()
	d.keys(":")
	d.typeText(`filter frame.number > 0`)
	d.keys("enter")
	if d.m.flt.running || d.m.flt.matched() != d.m.st.Len() {
		t.Fatalf("%d of %d units match", d.m.flt.matched(), d.m.st.Len())
	}
	used, _ := d.m.st.Memory()
	grown := heap() - heap0
	t.Logf("%d matches: accounted %+d bytes, heap %+d bytes (a slice of them: %d)", d.m.flt.matched(), used-used0, grown, 4*d.m.flt.matched())
	if used-used0 > 4*store.ListPage {
		t.Fatalf("the filter's matches cost %d accounted bytes", used-used0)
	}
	if grown > int64(d.m.flt.matched()) {
		t.Fatalf("the heap grew by %d bytes for %d matches", grown, d.m.flt.matched())
	}
	d.keys(":")
	d.typeText(`filter`)
	d.keys("enter")
	if used, _ := d.m.st.Memory(); d.m.flt.match != nil || used > used0 {
		t.Fatalf("filter cleared: %d bytes accounted, %d before it", used, used0)
	}
}
