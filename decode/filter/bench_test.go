package filter

import (
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// unitsPerOp is how many units one benchmark operation filters.
const unitsPerOp = 1 << 20

// syntheticUnits builds a pool of AMQP 0-9-1 units of mixed types, each
// with a prebuilt field tree, so that the benchmarks measure the filter and
// not a dissector.
func syntheticUnits(n int) ([]*decode.Unit, int64) {
	types := []string{"basic.publish", "content-header", "content-body", "basic.deliver", "basic.ack"}
	conn := testConn
	units := make([]*decode.Unit, n)
	var bytes int64
	for i := range units {
		typ := types[i%len(types)]
		var fs []*decode.Field
		if typ == "basic.publish" || typ == "basic.deliver" {
			args := &decode.Field{Name: "amqp.method.arguments", Kind: decode.KindMap}
			args.Add(leaf("amqp.method.arguments.exchange", "ex"))
			args.Add(leaf("amqp.method.arguments.routing_key", "orders."+strconv.Itoa(i%100)))
			args.Add(leaf("amqp.method.arguments.mandatory", i%2 == 0))
			fs = []*decode.Field{args}
		}
		u := &decode.Unit{
			N: i + 1, Conn: conn,
			Proto: decode.ProtoAMQP091, Channel: uint16(i % 8), HasChannel: true,
			Type: typ, Summary: typ, Len: 20 + i%2000,
		}
		u.SetTime(t0.Add(time.Duration(i) * time.Microsecond))
		if fs != nil {
			u.Dissect = func(*decode.Unit) []*decode.Field { return fs }
		}
		units[i] = u
		bytes += int64(u.Len)
	}
	return units, bytes
}

// benchMatch filters unitsPerOp units per operation, cycling through a
// pool of distinct units: "cold" is 64K units (about 15 MB of units, more
// than the caches hold, as in a big capture), "hot" 256 units that stay in
// cache, which isolates the filter's own cost.
func benchMatch(b *testing.B, expr string) {
	f, err := Compile(expr)
	if err != nil {
		b.Fatal(err)
	}
	for _, pc := range []struct {
		name string
		pool int
	}{{"cold", 1 << 16}, {"hot", 1 << 8}} {
		b.Run(pc.name, func(b *testing.B) {
			units, poolBytes := syntheticUnits(pc.pool)
			b.SetBytes(poolBytes * int64(unitsPerOp/pc.pool))
			b.ReportAllocs()
			b.ResetTimer()
			matched := 0
			for b.Loop() {
				for i := 0; i < unitsPerOp; i++ {
					if f.Match(units[i&(pc.pool-1)]) {
						matched++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/unitsPerOp, "ns/unit")
			if matched == 0 {
				b.Fatal("nothing matched")
			}
		})
	}
}

// BenchmarkMatchVirtual filters 1M units on header fields only.
func BenchmarkMatchVirtual(b *testing.B) {
	benchMatch(b, `amqp.method == "basic.publish" && amqp.channel == 2 || frame.len > 1900`)
}

// BenchmarkMatchTree filters 1M units on a field of their tree.
func BenchmarkMatchTree(b *testing.B) {
	benchMatch(b, `amqp.method.arguments.routing_key == "orders.40"`)
}

// BenchmarkMatchRegexp filters 1M units with a regular expression over a
// tree field.
func BenchmarkMatchRegexp(b *testing.B) {
	benchMatch(b, `amqp.method.arguments.routing_key matches "^orders\\.4[0-9]$"`)
}

func BenchmarkCompile(b *testing.B) {
	const expr = `amqp.method == "basic.publish" && (amqp.channel in {1 2 3} || frame.len > 1000) && summary matches "(?i)orders"`
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(expr); err != nil {
			b.Fatal(err)
		}
	}
}
