package store

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// shallowFields returns the names of the virtual fields a shallow filter
// may read: the registered names that compile to a filter that is
// shallow (every other field either dissects or reads a unit's notes).
func shallowFields(t *testing.T) []string {
	var names []string
	for _, fn := range decode.FieldNames() {
		f, err := filter.Compile(fn.Name)
		if err != nil {
			t.Fatalf("%s: %v", fn.Name, err)
		}
		if f.Shallow() {
			names = append(names, fn.Name)
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d shallow fields: %v", len(names), names)
	}
	return names
}

// shallowExprs returns filters over every shallow field of units: each
// present, absent, and compared with literals of every kind (numbers,
// strings, the units' types, addresses, a prefix, a time), the literals
// it does not read as skipped at compile time or false at match time.
func shallowExprs(t *testing.T, units []*decode.Unit) []string {
	lits := []string{"0", "1", "2", "3", "100", "1000", "5672", "5432", `"F"`, `"B"`, `"amqp0-9-1"`, `"amqp1.0"`, `"pgsql"`,
		`"127.0.0.1"`, `"::1"`, `"127.0.0.0/8"`}
	types := map[string]bool{}
	for _, u := range units {
		if !types[u.Type] && len(types) < 6 {
			types[u.Type] = true
			lits = append(lits, strconv.Quote(u.Type))
		}
	}
	if len(units) > 0 {
		lits = append(lits, strconv.Quote(units[len(units)/2].Time().UTC().Format(time.RFC3339Nano)),
			strconv.FormatFloat(float64(units[len(units)/2].UnixNano())/1e9, 'f', -1, 64))
	}
	exprs := []string{`frame.len > 100 && amqp.method == "basic.publish"`, `parent || secret`, `pgsql && !(conn == 1)`}
	for _, name := range shallowFields(t) {
		exprs = append(exprs, name, "!"+name)
		if name == "amqp" || name == "pgsql" {
			continue // tested, they give the unit's bytes
		}
		for _, l := range lits {
			exprs = append(exprs, name+" == "+l, name+" != "+l, name+" > "+l, name+" <= "+l)
		}
	}
	return exprs
}

// frozenCopy returns a store holding the units of path with every unit
// frozen, and one holding them whole.
func frozenCopy(t *testing.T, path string) (frozen, whole *Store) {
	whole, frozen = New(), New()
	whole.Append(decodeFile(t, path))
	frozen.SetBudget(1)
	t.Cleanup(func() { frozen.Close() })
	units := decodeFile(t, path)
	for i := 0; i < len(units); i += 50 {
		frozen.Append(units[i:min(i+50, len(units))])
	}
	if k, err := frozen.Spilled(); k != len(units) || err != nil {
		t.Fatalf("%s: %d of %d frozen (%v)", path, k, len(units), err)
	}
	return frozen, whole
}

// TestShallowScanRealUnits: on the units of every shipped capture, all
// frozen, a filter over any shallow field (with literals of every kind)
// is shallow, and gives on the shells RangeShallow builds from the
// records the answer it gives on the units held whole; ScanAll and Scan
// within a connection give the same rows shallow and thawed.
func TestShallowScanRealUnits(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "*.pcap*"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("captures: %v (%v)", paths, err)
	}
	ctx := context.Background()
	nested := 0
	for _, path := range paths {
		frozen, whole := frozenCopy(t, path)
		v := frozen.Snapshot()
		var units []*decode.Unit
		for i := range int32(whole.Len()) {
			units = append(units, whole.Unit(i))
			if units[i].Parent != nil {
				nested++
			}
		}
		for _, e := range shallowExprs(t, units) {
			f, err := filter.Compile(e)
			if err != nil {
				continue // a literal of a kind the field cannot be compared with
			}
			if !f.Shallow() {
				t.Fatalf("%q is not shallow", e)
			}
			var want []int32
			v.RangeShallow(0, v.Len(), func(i int32, sh *decode.Unit) bool {
				got, ok := f.Match(sh), f.Match(units[i])
				if got != ok {
					t.Fatalf("%s, %q, unit %d (%s): %v on its shell, %v whole", filepath.Base(path), e, units[i].N, units[i].Type, got, ok)
				}
				if ok {
					want = append(want, i)
				}
				return true
			})
			got, err := ScanAll(ctx, v, 0, f.Match, true, nil)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s, %q: ScanAll shallow gives %d rows, want %d (%v)", filepath.Base(path), e, len(got), len(want), err)
			}
			if len(frozen.Conns()) > 0 {
				w, rw := frozen.ConnUnits(0), whole.ConnUnits(0)
				gotIn, _, _ := Scan(ctx, v, &w, 0, 0, f.Match, true, nil)
				wantIn, _, _ := Scan(ctx, whole.Snapshot(), &rw, 0, 0, f.Match, false, nil)
				if !slices.Equal(gotIn, wantIn) {
					t.Fatalf("%s, %q within a connection: %d rows shallow, want %d", filepath.Base(path), e, len(gotIn), len(wantIn))
				}
			}
		}
	}
	if nested == 0 {
		t.Fatal("no nested unit in the captures: parent went untested")
	}
}

// TestShallowScanReadsNoBlob: with the spill file closed under it, so
// that no blob can be read back, a store whose units are almost all
// frozen still gives a shallow filter's rows; a scan that thaws units
// cannot (which shows the test reads what it means to).
func TestShallowScanReadsNoBlob(t *testing.T) {
	const n = 20000
	ref, _ := budgeted(t, n, 0)
	s, _ := budgeted(t, n, 64<<10)
	if k, _ := s.Spilled(); k < n*9/10 {
		t.Fatalf("%d of %d frozen", k, n)
	}
	s.mem.spill.Close()
	ctx := context.Background()
	for _, e := range []string{`amqp.channel == 1 || frame.len > 100`, `amqp.method == "basic.publish"`, `pgsql.type == "DataRow" || conn in {2..4}`, `frame.time_epoch > 0 && tcp.dstport == 5672`} {
		f, err := filter.Compile(e)
		if err != nil || !f.Shallow() {
			t.Fatalf("%q: %v, shallow %v", e, err, f.Shallow())
		}
		want, _ := ScanAll(ctx, ref.Snapshot(), 0, f.Match, false, nil)
		got, err := ScanAll(ctx, s.Snapshot(), 0, f.Match, true, nil)
		if err != nil || len(want) == 0 || len(want) == n || !slices.Equal(got, want) {
			t.Fatalf("%q with the spill file closed: %d rows, want %d (%v)", e, len(got), len(want), err)
		}
		thawed, _ := ScanAll(ctx, s.Snapshot(), 0, f.Match, false, nil)
		if slices.Equal(thawed, want) {
			t.Fatalf("%q: the thawed scan read the closed spill file", e)
		}
	}
}

// TestShallowScanAllocs: a shallow scan allocates nothing per unit, over
// more pages of records than the store caches.
func TestShallowScanAllocs(t *testing.T) {
	const n = (cachedPages + 6) * recPage
	s, _ := budgeted(t, n, 1)
	if k, _ := s.Spilled(); k != s.Len() {
		t.Fatalf("%d of %d frozen", k, s.Len())
	}
	f, err := filter.Compile(`frame.len > 100 && amqp.method == "basic.publish" || ip.dst == "10.0.0.0/8" && frame.time_epoch < 1`)
	if err != nil || !f.Shallow() {
		t.Fatal(err)
	}
	v := s.Snapshot()
	seen := 0
	allocs := testing.AllocsPerRun(3, func() {
		seen = 0
		v.RangeShallow(0, v.Len(), func(_ int32, u *decode.Unit) bool { seen++; f.Match(u); return true })
	})
	if seen != v.Len() || allocs > 3 {
		t.Fatalf("RangeShallow over %d units: %d seen, %.0f allocations", v.Len(), seen, allocs)
	}
	none, _ := filter.Compile(`frame.len < 0`)
	allocs = testing.AllocsPerRun(3, func() { ScanAll(context.Background(), v, 0, none.Match, true, nil) })
	if allocs > 20 {
		t.Fatalf("ScanAll shallow over %d units: %.0f allocations", v.Len(), allocs)
	}
}

// BenchmarkScanFrozen: a filter on virtual fields over 100k frozen
// units, thawed and shallow.
func BenchmarkScanFrozen(b *testing.B) {
	f, err := filter.Compile(`frame.len > 100 && amqp.method == "basic.publish"`)
	if err != nil {
		b.Fatal(err)
	}
	units := fake.Generate(100000, 5)
	s := New()
	s.SetBudget(1)
	defer s.Close()
	s.Append(units)
	for _, shallow := range []bool{false, true} {
		b.Run("shallow="+strconv.FormatBool(shallow), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ScanAll(context.Background(), s.Snapshot(), 0, f.Match, shallow, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/unit")
		})
	}
}
