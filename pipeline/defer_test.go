package pipeline

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// TestDeferredKeepsOrder: with decode.Options.Defer, as `read` sets it
// (PostgreSQL's CompressedMessages collected after later input, their
// payloads inflating on the side), the pipeline numbers and emits the
// units it does without, in the same order, when the connections of
// several captures, compressed PostgreSQL (zstd and LZ4) and AMQP
// 0-9-1, take turns a few calls at a time.
func TestDeferredKeepsOrder(t *testing.T) {
	var conns [][]stablecheck.Call
	for _, path := range []string{"../testdata/pgsql-libpq-zstd.pcapng", "../testdata/amqp091-go.pcapng", "../testdata/pgsql-pgx-lz4.pcapng"} {
		calls, _, err := stablecheck.FromCapture(path)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, calls...)
	}
	for _, step := range []int{1, 3, 17, 1 << 20} {
		want := interleave(t, conns, step, false)
		got := interleave(t, conns, step, true)
		if len(got) != len(want) {
			t.Fatalf("turns of %d calls: %d units deferred, %d not", step, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("turns of %d calls: unit %d deferred:\n%s\nnot:\n%s", step, i+1, got[i], want[i])
			}
		}
		if !strings.Contains(string(bytes.Join(want, nil)), "CompressedMessages zstd") {
			t.Fatal("no zstd CompressedMessages decoded: the test tests nothing")
		}
	}
}

// interleave feeds conns to a pipeline, step calls of each in turn, and
// renders every unit it emits (text and JSON with the raw bytes).
func interleave(t *testing.T, conns [][]stablecheck.Call, step int, deferred bool) [][]byte {
	opt := decode.DefaultOptions()
	opt.Transient = true
	if deferred {
		opt.Defer = new(decode.Deferred)
	}
	p, us := collect(Config{Options: opt})
	flows := make([]*capture.Flow, len(conns))
	for i := range conns {
		flows[i] = flow(i+1, fmt.Sprintf("10.0.%d.%d:40000", i/200, i%200+1), "10.1.0.1:9999", false)
	}
	next := make([]int, len(conns))
	now := t0
	for left := true; left; {
		left = false
		for i, calls := range conns {
			for k := 0; k < step && next[i] < len(calls); k++ {
				c := calls[next[i]]
				next[i]++
				now = now.Add(time.Microsecond)
				switch {
				case c.End:
					if c.Dir == decode.DirB {
						p.Close(flows[i], now)
					}
				case c.IsGap:
					p.Gap(flows[i], c.Dir == decode.DirF, c.N, now)
				default:
					p.Data(flows[i], c.Dir == decode.DirF, c.Data, now)
				}
			}
			left = left || next[i] < len(calls)
		}
	}
	p.Finish()
	out := make([][]byte, len(*us))
	for i, u := range *us {
		if u.N != i+1 {
			t.Fatalf("unit %d numbered %d", i+1, u.N)
		}
		b := output.AppendText(nil, u, t0)
		out[i] = output.AppendJSON(b, u, output.JSONOptions{Raw: true})
	}
	return out
}
