package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// bulky returns n units of one connection whose bytes (4 KiB each, every
// byte telling its unit apart) are most of what they cost.
func bulky(n int) []*decode.Unit {
	c := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	out := make([]*decode.Unit, n)
	for i := range out {
		raw := bytes.Repeat([]byte{byte(i), byte(i >> 8), byte(i >> 16), 0xa5}, 1024)
		out[i] = &decode.Unit{N: i + 1, Conn: c, Dir: decode.Dir(i & 1), Type: "DataRow", Summary: "DataRow " + strconv.Itoa(i), Raw: raw, Len: len(raw)}
	}
	return out
}

func rawOf(units []*decode.Unit) [][]byte {
	out := make([][]byte, len(units))
	for i, u := range units {
		out[i] = slices.Clone(u.Raw)
	}
	return out
}

// TestBudgetBoundsAccountedMemory: with units whose bytes far exceed the
// budget, what the store accounts stays within it after every batch, the
// oldest units are the ones spilled, and the accounting adds up.
func TestBudgetBoundsAccountedMemory(t *testing.T) {
	const budget = 2 << 20
	units := bulky(4000) // 16 MiB of bytes
	s := New()
	s.SetBudget(budget)
	defer s.Close()
	for i := 0; i < len(units); i += 37 {
		s.Append(units[i:min(i+37, len(units))])
		used, b := s.Memory()
		if b != budget || used > budget {
			t.Fatalf("after %d units: %d bytes accounted, budget %d", s.Len(), used, b)
		}
	}
	n, err := s.Spilled()
	if err != nil || n < len(units)*3/4 {
		t.Fatalf("%d of %d units spilled (%v)", n, len(units), err)
	}
	var resident int64
	for i, u := range units {
		got := s.Unit(int32(i))
		if (i < n) == (got == u) || !bytes.Equal(got.Raw, u.Raw) || got.Summary != u.Summary || u.Raw == nil {
			t.Fatalf("unit %d: held whole %v, %d frozen", i, got == u, n)
		}
		if i >= n {
			resident += int64(len(u.Raw))
		}
	}
	if used, _ := s.Memory(); used != s.mem.index+resident {
		t.Fatalf("accounted %d, index %d + resident %d", used, s.mem.index, resident)
	}
}

// TestSpilledUnitsComeBackIdentical: every way of reading a unit's bytes
// (Load, a View's Load and Range) gives the bytes it arrived with, spilled
// or not, and a loaded copy keeps them while more is spilled.
func TestSpilledUnitsComeBackIdentical(t *testing.T) {
	units := bulky(3000)
	want := rawOf(units)
	s := New()
	s.SetBudget(1 << 20)
	defer s.Close()
	s.Append(units[:1000])
	early := s.Load(10)
	s.Append(units[1000:])
	if n, _ := s.Spilled(); n < 2000 {
		t.Fatalf("only %d spilled", n)
	}
	if !bytes.Equal(early.Raw, want[10]) {
		t.Fatal("a loaded copy changed when its unit was spilled")
	}
	v := s.Snapshot()
	for i := range units {
		ix := int32(i)
		if got := s.Load(ix); !bytes.Equal(got.Raw, want[i]) || got.N != units[i].N {
			t.Fatalf("Load(%d): %d bytes, #%d", i, len(got.Raw), got.N)
		}
		if got := v.Load(ix); !bytes.Equal(got.Raw, want[i]) {
			t.Fatalf("View.Load(%d): %d bytes", i, len(got.Raw))
		}
	}
	seen := 0
	v.Range(5, len(units), func(i int32, u *decode.Unit) bool {
		if int(i) != 5+seen || !bytes.Equal(u.Raw, want[i]) {
			t.Fatalf("Range at %d (call %d): %d bytes", i, seen, len(u.Raw))
		}
		seen++
		return true
	})
	if seen != len(units)-5 {
		t.Fatalf("Range saw %d units", seen)
	}
}

// budgeted returns a store over a fresh copy of the fake capture (the
// generator is deterministic) with the given budget.
func budgeted(t *testing.T, n int, budget int64) (*Store, []*decode.Unit) {
	units := fake.Generate(n, 7)
	s := New()
	s.SetBudget(budget)
	t.Cleanup(func() { s.Close() })
	for i := 0; i < len(units); i += 500 {
		s.Append(units[i:min(i+500, len(units))])
	}
	return s, units
}

// TestSpilledFiltersPairsAndStats: filters on fields (which need the
// bytes), searches, answers and statistics give over spilled units what
// they give with everything in memory.
func TestSpilledFiltersPairsAndStats(t *testing.T) {
	const n = 20000
	ref, refUnits := budgeted(t, n, 0)
	var whole int64
	for _, u := range refUnits {
		whole += indexCost + int64(len(u.Summary)) + int64(len(u.Raw))
	}
	// All frozen (what frozen units cost is over the budget), and about
	// half.
	all, _ := budgeted(t, n, 1)
	half, _ := budgeted(t, n, n*frozenCost+(whole-n*frozenCost)/2)
	if k, _ := half.Spilled(); k > n*3/4 || k < n/4 {
		t.Fatalf("%d of %d spilled with half the bytes in the budget", k, n)
	}
	exprs := []string{
		`amqp.method.arguments.routing_key == "orders"`,
		`amqp.method.arguments.delivery_tag > 10 && amqp.channel == 1`,
		`pgsql.query contains "SELECT"`,
		`pgsql.payload`,
		`amqp.method == "basic.ack"`,
	}
	ctx := context.Background()
	for name, s := range map[string]*Store{"all spilled": all, "half spilled": half} {
		if k, err := s.Spilled(); err != nil || k == 0 || (name == "all spilled" && k != n) {
			t.Fatalf("%s: %d spilled (%v)", name, k, err)
		}
		for _, e := range exprs {
			f, err := filter.Compile(e)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ScanAll(ctx, ref.Snapshot(), 0, f.Match, false, nil)
			if err != nil || len(want) == 0 {
				t.Fatalf("%s: no rows to compare (%v)", e, err)
			}
			got, err := ScanAll(ctx, s.Snapshot(), 0, f.Match, false, nil)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s, %s: %d rows, want %d", name, e, len(got), len(want))
			}
			// Scan within a connection reads unit by unit.
			within, refWithin := s.ConnUnits(0), ref.ConnUnits(0)
			wantIn, _, _ := Scan(ctx, ref.Snapshot(), &refWithin, 0, 0, f.Match, false, nil)
			gotIn, _, _ := Scan(ctx, s.Snapshot(), &within, 0, 0, f.Match, false, nil)
			if !slices.Equal(gotIn, wantIn) {
				t.Fatalf("%s, %s within a connection: %d rows, want %d", name, e, len(gotIn), len(wantIn))
			}
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32(i)
			}
			wp, _ := Find(ctx, ref.Snapshot(), RowsOf(rows), n/2, 1, f.Match)
			gp, _ := Find(ctx, s.Snapshot(), RowsOf(rows), n/2, 1, f.Match)
			if wp != gp {
				t.Fatalf("%s, %s: Find at %d, want %d", name, e, gp, wp)
			}
		}
		pairs := 0
		for i := range int32(n) {
			if a := ref.Answer(i); a != s.Answer(i) {
				t.Fatalf("%s: answer of %d is %d, want %d", name, i, s.Answer(i), a)
			} else if a >= 0 {
				pairs++
			}
		}
		if pairs == 0 {
			t.Fatal("nothing paired")
		}
		ws, gs := StatsOf(ref.Snapshot(), 80), StatsOf(s.Snapshot(), 80)
		if ws.Overall != gs.Overall || ws.Units != gs.Units || !slices.Equal(ws.Types, gs.Types) {
			t.Fatalf("%s: stats differ: %+v want %+v", name, gs.Overall, ws.Overall)
		}
	}
}

// TestSpillWhileScanning: a background scan over a snapshot sees every
// unit's own bytes (and a shallow one its own plain fields) while the UI goroutine appends and spills (run with
// -race, it also checks the locking).
func TestSpillWhileScanning(t *testing.T) {
	units := bulky(3000)
	want := rawOf(units)
	s := New()
	s.SetBudget(1 << 20)
	defer s.Close()
	s.Append(units[:1500])
	v := s.Snapshot()
	done := make(chan string)
	go func() {
		bad := ""
		for range 3 {
			v.Range(0, v.Len(), func(i int32, u *decode.Unit) bool {
				if !bytes.Equal(u.Raw, want[i]) {
					bad = "unit " + strconv.Itoa(int(i)) + " has other bytes"
					return false
				}
				return true
			})
			v.RangeShallow(0, v.Len(), func(i int32, u *decode.Unit) bool {
				if u.N != units[i].N || u.Len != units[i].Len || u.Type != units[i].Type {
					bad = "unit " + strconv.Itoa(int(i)) + " has another shell"
					return false
				}
				return true
			})
		}
		done <- bad
	}()
	for i := 1500; i < len(units); i += 10 {
		s.Append(units[i : i+10])
	}
	if bad := <-done; bad != "" {
		t.Fatal(bad)
	}
}

// decodeFile returns the units wiretap read gives for a capture.
func decodeFile(t *testing.T, path string) []*decode.Unit {
	t.Helper()
	var units []*decode.Unit
	pl := pipeline.New(pipeline.Config{Sink: func(u *decode.Unit) { units = append(units, u) }})
	if _, err := capture.ReadFile(path, pl, nil); err != nil {
		t.Fatal(err)
	}
	pl.Finish()
	return units
}

// tree renders a unit's field tree with everything the detail pane and
// the filters read.
func tree(u *decode.Unit) string {
	var b strings.Builder
	decode.Walk(u.Fields(), func(f *decode.Field) bool {
		b.WriteString(f.Key + " " + f.Name + "=" + decode.FormatValue(f.Value) + " " + f.Display + " @" + strconv.Itoa(f.Offset) + "+" + strconv.Itoa(f.Length) + "\n")
		return true
	})
	return string(u.Raw) + "\n" + b.String()
}

// TestSpilledRealUnits: on real captures, whose field trees show other
// units' bytes (an AMQP 0-9-1 message its method and header frames)
// and nest units (PostgreSQL's CompressedMessages), every unit spilled
// gives the field tree and the filter rows it gives in memory.
func TestSpilledRealUnits(t *testing.T) {
	exprs := []string{
		`amqp.method.arguments.routing_key`,
		`amqp.message.body-size > 0`,
		`amqp.message.body contains "a"`,
		`pgsql.query contains "SELECT"`,
		`amqp.performative == "transfer"`,
	}
	for _, name := range []string{"amqp091-pika.pcapng", "amqp091-go.pcapng", "amqp10-goamqp.pcapng", "pgsql-libpq-zstd.pcapng", "pgsql-pgx-lz4.pcapng"} {
		path := filepath.Join("..", "..", "testdata", name)
		ref, spilled := New(), New()
		ref.Append(decodeFile(t, path))
		spilled.SetBudget(1)
		units := decodeFile(t, path)
		for i := 0; i < len(units); i += 50 {
			spilled.Append(units[i:min(i+50, len(units))])
		}
		defer spilled.Close()
		if k, err := spilled.Spilled(); k != len(units) || err != nil {
			t.Fatalf("%s: %d of %d spilled (%v)", name, k, len(units), err)
		}
		v := spilled.Snapshot()
		for i := range int32(len(units)) {
			want := tree(ref.Unit(i))
			if got := tree(spilled.Load(i)); got != want {
				t.Fatalf("%s #%d: field tree\n%s\nwant\n%s", name, ref.Unit(i).N, got, want)
			}
			if got := tree(v.Load(i)); got != want {
				t.Fatalf("%s #%d: field tree from a view differs", name, ref.Unit(i).N)
			}
			if ref.Parent(i) != spilled.Parent(i) || len(ref.Kids(i)) != len(spilled.Kids(i)) || ref.Answer(i) != spilled.Answer(i) {
				t.Fatalf("%s #%d: parent, kids or answer differ", name, ref.Unit(i).N)
			}
		}
		for _, e := range exprs {
			f, err := filter.Compile(e)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ScanAll(context.Background(), ref.Snapshot(), 0, f.Match, false, nil)
			got, _ := ScanAll(context.Background(), v, 0, f.Match, false, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %s: %d rows, want %d", name, e, len(got), len(want))
			}
		}
	}
}

// BenchmarkScanSpilled: a filter on a field over 100k units, all in
// memory and all spilled (read back a block at a time).
func BenchmarkScanSpilled(b *testing.B) {
	f, err := filter.Compile(`amqp.method.arguments.routing_key == "orders"`)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		budget int64
	}{{"resident", 0}, {"spilled", 1}} {
		b.Run(c.name, func(b *testing.B) {
			units := fake.Generate(100000, 5)
			s := New()
			s.SetBudget(c.budget)
			defer s.Close()
			s.Append(units)
			b.ReportAllocs()
			for b.Loop() {
				ScanAll(context.Background(), s.Snapshot(), 0, f.Match, false, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e5, "ns/unit")
		})
	}
}

// BenchmarkLoadSpilled: what the detail pane pays to show a spilled unit.
func BenchmarkLoadSpilled(b *testing.B) {
	s := New()
	s.SetBudget(1)
	defer s.Close()
	s.Append(bulky(1000))
	b.ReportAllocs()
	i := int32(0)
	for b.Loop() {
		s.Load(i)
		i = (i + 7) % 1000
	}
}

// TestFreezeFailureBoundsMemory: when the store can freeze nothing more
// (here its spill file is closed under it, as a full disk would fail its
// writes), it keeps what it has and counts what it no longer keeps,
// instead of growing past its budget.
func TestFreezeFailureBoundsMemory(t *testing.T) {
	const budget = 1 << 20
	units := bulky(2000) // 8 MiB of bytes
	s := New()
	s.SetBudget(budget)
	defer s.Close()
	s.Append(units[:400])
	if k, err := s.Spilled(); k == 0 || err != nil {
		t.Fatalf("%d spilled (%v): the test needs the spill file open", k, err)
	}
	s.mem.spill.Close() // every write from now on fails
	for i := 400; i < len(units); i += 50 {
		s.Append(units[i : i+50])
	}
	if _, err := s.Spilled(); err == nil {
		t.Fatal("no error from a closed spill file")
	}
	used, _ := s.Memory()
	if used > 2*budget {
		t.Fatalf("%d bytes accounted with freezing failed, budget %d", used, budget)
	}
	if s.Dropped() == 0 || s.Len()+s.Dropped() != len(units) {
		t.Fatalf("%d kept, %d dropped, of %d", s.Len(), s.Dropped(), len(units))
	}
	k, _ := s.Spilled()
	for i := k; i < s.Len(); i++ {
		if !bytes.Equal(s.Load(int32(i)).Raw, units[i].Raw) {
			t.Fatalf("unit %d, held whole, lost its bytes", i)
		}
	}
}

// TestDiskLimit: the store's files stop growing at the limit set, and at
// the free space it keeps on their filesystem; it then behaves as on a full
// disk (it says why, keeps what it holds, counts what it no longer keeps),
// and every unit frozen before the bound still comes back.
func TestDiskLimit(t *testing.T) {
	const budget = 1 << 20
	units := bulky(2000) // 8 MiB of bytes
	check := func(t *testing.T, s *Store, want string) {
		for i := 0; i < len(units); i += 50 {
			s.Append(units[i : i+50])
		}
		k, err := s.Spilled()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one saying %q", err, want)
		}
		if k == 0 || s.Dropped() == 0 || s.Len()+s.Dropped() != len(units) {
			t.Fatalf("%d frozen, %d kept, %d dropped, of %d", k, s.Len(), s.Dropped(), len(units))
		}
		for i := range s.Len() {
			if !bytes.Equal(s.Load(int32(i)).Raw, units[i].Raw) {
				t.Fatalf("unit %d lost its bytes", i)
			}
		}
	}
	t.Run("limit", func(t *testing.T) {
		s := New()
		defer s.Close()
		s.SetBudget(budget)
		s.SetDiskLimit(2 << 20)
		check(t, s, "disk limit (--disk 2MiB)")
		if on := s.mem.onDisk(); on > 2<<20+budget {
			t.Fatalf("%d bytes on disk, limit 2 MiB (and a batch past it)", on)
		}
	})
	t.Run("reserve", func(t *testing.T) {
		defer func(f func(*os.File) (int64, int64, error), every int64) { freeSpaceOf, diskCheck = f, every }(freeSpaceOf, diskCheck)
		diskCheck = 256 << 10
		// A 100 GiB filesystem (so 5 GiB are kept free) with 5 GiB and
		// 3 MiB free before the store wrote anything.
		freeSpaceOf = func(f *os.File) (int64, int64, error) { return 5<<30 + 3<<20 - size(f), 100 << 30, nil }
		s := New()
		defer s.Close()
		s.SetBudget(budget)
		check(t, s, "under the 5.0GiB kept free")
		if n := size(s.mem.spill); n < 3<<20 || n > 3<<20+diskCheck+budget {
			t.Fatalf("the spill file stopped at %d bytes, want about 3 MiB", n)
		}
	})
}

// size is the size of file f.
func size(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}
