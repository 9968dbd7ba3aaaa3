package store

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

func TestIndexes(t *testing.T) {
	units := fake.Generate(5000, 1)
	s := New()
	// Batches of odd sizes, so containers and their nested units straddle
	// batch boundaries.
	for i := 0; i < len(units); i += 7 {
		s.Append(units[i:min(i+7, len(units))])
	}
	if s.Len() != len(units) {
		t.Fatalf("Len %d", s.Len())
	}
	top, nested := 0, 0
	for i, u := range units {
		ix := int32(i)
		if s.IndexOfN(u.N) != ix || s.Unit(ix) != u {
			t.Fatalf("IndexOfN(%d) = %d", u.N, s.IndexOfN(u.N))
		}
		if u.Parent == nil {
			top++
			if s.Parent(ix) != -1 {
				t.Fatalf("#%d has a parent", u.N)
			}
			continue
		}
		nested++
		p := s.Parent(ix)
		if p < 0 || s.Unit(p) != u.Parent {
			t.Fatalf("#%d: parent %d", u.N, p)
		}
		found := false
		for _, k := range s.Kids(p) {
			found = found || k == ix
		}
		if !found {
			t.Fatalf("#%d not among its container's kids", u.N)
		}
	}
	if s.Top().Len() != top || nested == 0 {
		t.Fatalf("top %d want %d; nested %d", s.Top().Len(), top, nested)
	}
	total := 0
	for c, conn := range s.Conns() {
		for _, ix := range s.ConnUnits(c).Slice() {
			if s.Unit(ix).Conn != conn {
				t.Fatal("unit in another connection's index")
			}
		}
		total += s.ConnUnits(c).Len()
		if s.ConnIndex(conn) != c {
			t.Fatal("ConnIndex")
		}
	}
	if total != len(units) {
		t.Fatalf("connection indexes hold %d units", total)
	}
	if s.IndexOfN(0) != -1 || s.IndexOfN(len(units)+1) != -1 {
		t.Fatal("IndexOfN out of range")
	}
}

func TestIndexOfNWithGaps(t *testing.T) {
	units := fake.Generate(100, 2)
	for i, u := range units {
		u.N = 10 + 3*i
	}
	s := New()
	s.Append(units)
	if got := s.IndexOfN(10 + 3*40); got != 40 {
		t.Fatalf("got %d", got)
	}
	if s.IndexOfN(11) != -1 {
		t.Fatal("found a missing number")
	}
}

// TestPairing checks every pair against what the fake generator knows:
// acks carry the publish sequence, dispositions the delivery-id, and
// PostgreSQL answers come in request order.
func TestPairing(t *testing.T) {
	units := fake.Generate(20000, 3)
	s := New()
	s.Append(units)
	s.PairAll()
	seq := map[*decode.Unit]uint64{}
	var n uint64
	for _, u := range units {
		if u.Type == "basic.publish" {
			n++
			seq[u] = n
		}
	}
	pairs := map[string]int{}
	s.Pairs(func(req, ans int32) {
		r, a := s.Unit(req), s.Unit(ans)
		pairs[r.Type+"->"+a.Type]++
		if a.N <= r.N && a.Parent == nil {
			t.Errorf("#%d %s answered by earlier #%d %s", r.N, r.Type, a.N, a.Type)
		}
		if r.Conn != a.Conn || r.Dir == a.Dir {
			t.Errorf("#%d and #%d: connection or direction", r.N, a.N)
		}
		switch r.Type {
		case "basic.publish":
			tag, _ := FieldUint(a.Fields(), "deliverytag")
			if tag != seq[r] {
				t.Errorf("publish seq %d acked by tag %d", seq[r], tag)
			}
		case "transfer":
			id, _ := FieldUint(r.Fields(), "deliveryid")
			first, _ := FieldUint(a.Fields(), "first")
			if id != first {
				t.Errorf("transfer %d settled by disposition of %d", id, first)
			}
		case "queue.declare":
			if a.Type != "queue.declare-ok" || string(a.Raw[11:len(a.Raw)-1]) != string(r.Raw[11:len(r.Raw)-1]) {
				t.Errorf("queue.declare #%d answered by #%d %s", r.N, a.N, a.Type)
			}
		}
		if s.Request(ans) != req && r.Type != "basic.publish" {
			t.Errorf("Request(#%d) = %d, want #%d", a.N, s.Request(ans), r.N)
		}
	})
	for _, want := range []string{"basic.publish->basic.ack", "transfer->disposition", "queue.declare->queue.declare-ok",
		"confirm.select->confirm.select-ok", "Parse->ParseComplete", "Bind->BindComplete", "Execute->CommandComplete", "Sync->ReadyForQuery"} {
		if pairs[want] == 0 {
			t.Errorf("no %s pairs (%v)", want, pairs)
		}
	}
	// Every acked publish is paired: the generator acks in order.
	acks := 0
	for _, u := range units {
		if u.Type == "basic.ack" {
			acks++
		}
	}
	if pairs["basic.publish->basic.ack"] != acks {
		t.Errorf("%d acks, %d publish pairs", acks, pairs["basic.publish->basic.ack"])
	}
}

func TestPairingIncremental(t *testing.T) {
	units := fake.Generate(3000, 4)
	whole := New()
	whole.Append(units)
	whole.PairAll()
	inc := New()
	for i := 0; i < len(units); i += 100 {
		inc.Append(units[i:min(i+100, len(units))])
		inc.Answer(int32(i)) // pairs what has arrived so far
	}
	inc.PairAll()
	for i := range units {
		if whole.Answer(int32(i)) != inc.Answer(int32(i)) {
			t.Fatalf("#%d: answer %d whole, %d incremental", units[i].N, whole.Answer(int32(i)), inc.Answer(int32(i)))
		}
	}
}

func TestPgErrorResponse(t *testing.T) {
	c := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	mk := func(n int, dir decode.Dir, typ string) *decode.Unit {
		u := &decode.Unit{N: n, Conn: c, Dir: dir, Proto: decode.ProtoPgSQL, Type: typ}
		u.SetTime(time.Unix(0, int64(n)))
		return u
	}
	units := []*decode.Unit{
		mk(1, decode.DirF, "Parse"), mk(2, decode.DirF, "Bind"), mk(3, decode.DirF, "Execute"), mk(4, decode.DirF, "Sync"),
		mk(5, decode.DirB, "ErrorResponse"), mk(6, decode.DirB, "ReadyForQuery"),
		mk(7, decode.DirF, "Parse"), mk(8, decode.DirF, "Sync"),
		mk(9, decode.DirB, "ParseComplete"), mk(10, decode.DirB, "ReadyForQuery"),
	}
	s := New()
	s.Append(units)
	want := map[int]int{1: 5, 2: -1, 3: -1, 4: 6, 7: 9, 8: 10}
	for req, ans := range want {
		got := s.Answer(int32(req - 1))
		if ans < 0 && got != -1 || ans > 0 && got != int32(ans-1) {
			t.Errorf("answer to #%d = index %d, want #%d", req, got, ans)
		}
	}
}

func TestSummarise(t *testing.T) {
	ms := time.Millisecond
	l := Summarise([]time.Duration{500 * time.Microsecond, ms, 2 * ms, 40 * ms, 400 * ms, 999 * ms, 2 * time.Second, 3 * ms, 4 * ms, 5 * ms})
	if l.Buckets != [6]int{2, 4, 1, 1, 1, 1} {
		t.Errorf("buckets %v", l.Buckets)
	}
	if l.P50 != 4*ms || l.P90 != 999*ms || l.P99 != 2*time.Second || l.Max != 2*time.Second {
		t.Errorf("p50 %v p90 %v p99 %v max %v", l.P50, l.P90, l.P99, l.Max)
	}
	if (Summarise(nil) != Latency{}) {
		t.Error("empty")
	}
}

func TestScanCancelsAndReportsProgress(t *testing.T) {
	units := fake.Generate(20000, 5)
	var progress atomic.Int64
	isRow := func(u *decode.Unit) bool { return u.Type == "DataRow" }
	rows, next, err := Scan(context.Background(), ViewOf(units), nil, 0, 0, isRow, false, &progress)
	if err != nil || len(rows) == 0 || progress.Load() == 0 || next != int32(len(units)) {
		t.Fatalf("rows %d err %v progress %d next %d", len(rows), err, progress.Load(), next)
	}
	// With a limit, the scan stops after the limit-th match and resumes.
	first, next, _ := Scan(context.Background(), ViewOf(units), nil, 0, 10, isRow, false, nil)
	rest, _, _ := Scan(context.Background(), ViewOf(units), nil, next, 0, isRow, false, nil)
	if len(first) != 10 || next != first[9]+1 || len(first)+len(rest) != len(rows) || rest[0] != rows[10] {
		t.Fatalf("limited scan: %d rows, next %d", len(first), next)
	}
	for _, ix := range rows {
		if units[ix].Type != "DataRow" {
			t.Fatal("wrong row")
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Scan(ctx, ViewOf(units), nil, 0, 0, func(*decode.Unit) bool { return true }, false, nil); err == nil {
		t.Fatal("cancelled scan finished")
	}
	p, _ := Find(context.Background(), ViewOf(units), RowsOf(rows), 0, -1, func(u *decode.Unit) bool { return true })
	if p != len(rows)-1 {
		t.Fatalf("Find backwards wraps to %d", p)
	}
}

func BenchmarkAppend(b *testing.B) {
	units := fake.Generate(1<<16, 6)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := New()
		for j := 0; j < len(units); j += 1024 {
			s.Append(units[j:min(j+1024, len(units))])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(units)), "ns/unit")
}

func TestScanAllMatchesScan(t *testing.T) {
	units := fake.Generate(300000, 8)
	odd := func(u *decode.Unit) bool { return u.N%7 == 3 || u.Type == "transfer" }
	want, _, _ := Scan(context.Background(), ViewOf(units), nil, 1234, 0, odd, false, nil)
	var progress atomic.Int64
	got, err := ScanAll(context.Background(), ViewOf(units), 1234, odd, false, &progress)
	if err != nil || len(got) != len(want) {
		t.Fatalf("%d rows, want %d (%v)", len(got), len(want), err)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d: %d, want %d", i, got[i], want[i])
		}
	}
	if progress.Load() == 0 {
		t.Error("no progress reported")
	}
}

// BenchmarkStoreMemory reports the heap the store adds per unit (its
// indexes), apart from the units the pipeline allocated, on a million units.
func BenchmarkStoreMemory(b *testing.B) {
	units := fake.Generate(1_000_000, 10)
	var s *Store
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s = New()
		for j := 0; j < len(units); j += 1024 {
			s.Append(units[j:min(j+1024, len(units))])
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(units)), "B/unit")
	}
	runtime.KeepAlive(s)
}

// BenchmarkStats measures the statistics view's computation on a million
// units, pairing included (the first time S is pressed).
func BenchmarkStats(b *testing.B) {
	units := fake.Generate(1_000_000, 11)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		st := StatsOf(ViewOf(units), 120)
		if st.Overall.N == 0 {
			b.Fatal("no pairs")
		}
	}
}

func TestContainerBeforeItsUnits(t *testing.T) {
	c := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	parent := &decode.Unit{N: 1, Conn: c, Type: "CompressedMessages"}
	a := &decode.Unit{N: 2, Conn: c, Type: "DataRow", Parent: parent}
	b := &decode.Unit{N: 3, Conn: c, Type: "CommandComplete", Parent: parent}
	s := New()
	s.Append([]*decode.Unit{parent})
	s.Append([]*decode.Unit{a, b})
	if k := s.Kids(0); len(k) != 2 || k[0] != 1 || k[1] != 2 || s.Top().Len() != 1 || s.Parent(2) != 0 {
		t.Fatalf("kids %v top %v", k, s.Top())
	}
}
