package filter

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// The memo tests' units are ProtoPgSQL, whose finder (no protocol package
// is linked into this test binary) is memoFinder: it answers from the
// unit's tree and counts its calls, standing in for a protocol's.
var memoFinds atomic.Int64

func init() {
	decode.RegisterFieldNames(decode.FieldName{Name: "amqp.method.arguments.delivery_tag", Proto: decode.ProtoAMQP091})
	decode.RegisterFinder(decode.ProtoPgSQL, func(u *decode.Unit, name string, k int) (decode.Field, bool, bool) {
		memoFinds.Add(1)
		var hits []*decode.Field
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Name == name {
				hits = append(hits, f)
			}
			return true
		})
		if k < len(hits) {
			return *hits[k], true, true
		}
		return decode.Field{}, false, true
	})
}

// memoUnits returns units numbered from 1: every third has a routing key
// (a string), a delivery tag (a number), a flag (a boolean) and a mode
// with display text; every ninth has two tags.
func memoUnits(n int) []*decode.Unit {
	units := make([]*decode.Unit, n)
	for i := range units {
		u := &decode.Unit{N: i + 1, Conn: testConn, Proto: decode.ProtoPgSQL, Type: "basic.ack", Len: i}
		var fs []*decode.Field
		if i%3 == 0 {
			u.Type = "basic.publish"
			args := &decode.Field{Name: "amqp.method.arguments", Kind: decode.KindMap}
			args.Add(leaf("amqp.method.arguments.routing_key", "orders."+strconv.Itoa(i%7)))
			args.Add(leaf("amqp.method.arguments.delivery_tag", uint64(i%11)))
			args.Add(leaf("amqp.method.arguments.mandatory", i%2 == 0))
			mode := leaf("amqp.header.properties.delivery_mode", uint64(1+i%2))
			mode.Display = [...]string{"transient", "persistent"}[i%2]
			args.Add(mode)
			if i%9 == 0 {
				args.Add(leaf("amqp.method.arguments.delivery_tag", uint64(100+i%5)))
			}
			fs = []*decode.Field{args}
		}
		u.Dissect = func(*decode.Unit) []*decode.Field { return fs }
		units[i] = u
	}
	return units
}

var memoExprs = []string{
	`amqp.method.arguments.routing_key == "orders.3"`,
	`amqp.method.arguments.routing_key != "orders.3"`,
	`!(amqp.method.arguments.routing_key == "orders.3")`,
	`amqp.method.arguments.routing_key contains "rs.4"`,
	`amqp.method.arguments.routing_key`,
	`!amqp.method.arguments.routing_key`,
	`amqp.method.arguments.delivery_tag > 5`,
	`amqp.method.arguments.delivery_tag == 102`,
	`all amqp.method.arguments.delivery_tag < 50`,
	`any amqp.method.arguments.delivery_tag < 50`,
	`amqp.method.arguments.delivery_tag in {1 3 100..103}`,
	`amqp.method.arguments.mandatory == true`,
	`amqp.method.arguments.mandatory`,
	`amqp.header.properties.delivery_mode == "persistent"`,
	`amqp.header.properties.delivery_mode == 2`,
	`amqp.method.arguments.routing_key matches "[0-4]$" || frame.len < 10`,
	`amqp.method.arguments && frame.len > 100`,
}

// TestMemoAgrees: filters compiled with a Memo give what filters compiled
// without give, on a first run and on later runs (what units hold then
// known), for strings, numbers, booleans, display texts, repeated fields,
// presence, negations, quantifiers and sets; and later runs look up only
// what the memo could not keep.
func TestMemoAgrees(t *testing.T) {
	units := memoUnits(3000)
	memo := NewMemo()
	for round := 0; round < 3; round++ {
		for _, expr := range memoExprs {
			plain, err := Compile(expr)
			if err != nil {
				t.Fatal(err)
			}
			with, err := CompileWith(expr, memo)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range units {
				if a, b := plain.Match(u), with.Match(u); a != b {
					t.Fatalf("round %d, %s on unit %d: %v with the memo, %v without", round, expr, u.N, b, a)
				}
			}
		}
	}
	// Kept: routing keys (strings) and single delivery tags; looked up
	// again: units with two tags. Absent units are never looked up again.
	for _, c := range []struct {
		expr string
		want int64
	}{
		{`amqp.method.arguments.routing_key == "x"`, 0},
		{`amqp.method.arguments.delivery_tag == 7`, int64(len(units)/9+1) * 4}, // two tags: k=0..2, and the k=1 probe
		{`amqp.method.arguments.mandatory == false`, 0},
	} {
		f, err := CompileWith(c.expr, memo)
		if err != nil {
			t.Fatal(err)
		}
		memoFinds.Store(0)
		for _, u := range units {
			f.Match(u)
		}
		if got := memoFinds.Load(); got > c.want {
			t.Errorf("%s: %d lookups on a run with the memo filled, want at most %d", c.expr, got, c.want)
		}
	}
}

// TestMemoConcurrent runs filters sharing a Memo from several goroutines
// over the same units, more than one chunk of them (go test -race checks
// the claims and bits).
func TestMemoConcurrent(t *testing.T) {
	units := memoUnits(memoChunkUnits + 5000)
	memo := NewMemo()
	for _, expr := range []string{`amqp.method.arguments.routing_key == "orders.2"`, `amqp.method.arguments.delivery_tag > 4`} {
		plain, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, u := range units {
			if plain.Match(u) {
				want++
			}
		}
		var wg sync.WaitGroup
		counts := make([]int, 4)
		for w := range counts {
			wg.Go(func() {
				f, _ := CompileWith(expr, memo)
				for r := 0; r < 2; r++ {
					n := 0
					for _, u := range units {
						if f.Match(u) {
							n++
						}
					}
					counts[w] = n
				}
			})
		}
		wg.Wait()
		for w, c := range counts {
			if c != want {
				t.Errorf("%s: goroutine %d matched %d units, want %d", expr, w, c, want)
			}
		}
	}
}

// TestMemoBounded: names past the limits are not remembered (or keep no
// values), and units without a number or past the last chunk never are.
func TestMemoBounded(t *testing.T) {
	memo := NewMemo()
	for i := 0; i < maxMemoFields; i++ {
		f := memo.field("f" + strconv.Itoa(i))
		if f == nil {
			t.Fatalf("field %d not remembered", i)
		}
		if i%2 == 1 {
			continue // fields offered no value take no value slot
		}
		f.keep(1, &value{kind: kUint, u: 7})
		var v value
		kept := f.lookup(1, &v) == memoKept
		if want := i/2 < maxValuedFields; kept != want || kept && v.u != 7 {
			t.Errorf("field %d: value kept %v (%d), want kept %v", i, kept, v.u, want)
		}
	}
	if memo.field("one.too.many") != nil {
		t.Error("a field past the limit is remembered")
	}
	f := memo.field("f0")
	var v value
	for _, n := range []int{0, -5, memoChunkUnits*memoChunks + 1} {
		f.markAbsent(n)
		f.keep(n, &value{kind: kInt, i: 3})
		if st := f.lookup(n, &v); st != memoUnknown {
			t.Errorf("unit %d remembered (%d)", n, st)
		}
	}
}

// TestMemoAllocs: once the memo knows the units, a filter compiled with it
// allocates nothing, on units that lack the field and on units whose value
// it kept.
func TestMemoAllocs(t *testing.T) {
	units := memoUnits(30)
	memo := NewMemo()
	for _, expr := range []string{`amqp.method.arguments.routing_key == "orders.3"`, `amqp.method.arguments.delivery_tag > 5`} {
		f, err := CompileWith(expr, memo)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range units {
			f.Match(u) // fill the memo
		}
		for _, u := range units[1:4] { // lacks the field, has it once, lacks it
			if n := testing.AllocsPerRun(100, func() { f.Match(u) }); n != 0 {
				t.Errorf("%s on unit %d: %v allocations per Match", expr, u.N, n)
			}
		}
	}
}
