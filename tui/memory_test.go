package tui

import (
	"bytes"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
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
	if !slices.Equal(d.m.flt.rows, ref.m.flt.rows) || len(ref.m.flt.rows) == 0 {
		t.Fatalf("filter: %d rows, want %d", len(d.m.flt.rows), len(ref.m.flt.rows))
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
			rows = append(rows, slices.Clone(d.m.flt.rows))
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
