package output_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// units decodes a capture into memory (at most limit units; 0: all).
func units(tb testing.TB, path string, limit int) []*decode.Unit {
	tb.Helper()
	var us []*decode.Unit
	pl := pipeline.New(pipeline.Config{Sink: func(u *decode.Unit) {
		if limit == 0 || len(us) < limit {
			us = append(us, u)
		}
	}})
	if _, err := capture.ReadFile(path, pl, nil); err != nil && len(us) == 0 {
		tb.Skipf("%s: %v", path, err)
	}
	pl.Finish()
	return us
}

// captures lists the shipped captures, the hostile ones, and the corpus
// (scripts/corpus.sh) when it was recorded, but for its scale-MB files:
// they repeat one shape at sizes up to 10 GB, for timing, not fidelity.
func captures(tb testing.TB) []string {
	globs := []string{"../../testdata/*.pcap*", "../../testdata/hostile/*.pcapng"}
	if !testing.Short() {
		globs = append(globs, "../../testdata/corpus/*.pcapng")
	}
	var files []string
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		for _, f := range m {
			if !strings.HasPrefix(filepath.Base(f), "scale-") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		tb.Skip("no captures")
	}
	return files
}

// Every unit's JSON is the same bytes whether its fields come from a
// protocol's direct renderer (decode.FieldsJSON) or from its field tree,
// with and without --raw and under a small field limit, over every real
// capture in the repository, the hostile ones that are not compressed,
// and the corpus when it was recorded (not with -short).
func TestFastFieldsMatchTree(t *testing.T) {
	for _, path := range captures(t) {
		name := filepath.Base(path)
		limit := 0
		if strings.Contains(path, "/corpus/") || strings.Contains(path, "/hostile/") {
			limit = 100000
		}
		t.Run(name, func(t *testing.T) {
			us := units(t, path, limit)
			fast, bad := 0, 0
			for _, opt := range []output.JSONOptions{{}, {Raw: true}, {MaxFields: 3}} {
				tree := opt
				tree.TreeOnly = true
				enc := output.NewJSONEncoder(opt)
				var a, b []byte
				for _, u := range us {
					a = enc.Append(a[:0], u)
					b = output.AppendJSON(b[:0], u, tree)
					if !bytes.Equal(a, b) {
						if bad++; bad <= 3 {
							t.Errorf("unit %d (%s):\nfast %s\ntree %s", u.N, u.Type, a, b)
						}
					}
					if _, ok := u.AppendFieldsJSON(nil, -1); ok {
						fast++
					}
				}
			}
			// The text encoder's remembered columns against a line made
			// afresh for each unit.
			var first time.Time
			if len(us) > 0 {
				first = us[0].Time()
			}
			te := output.TextEncoder{First: first}
			var a, b []byte
			for _, u := range us {
				a = te.Append(a[:0], u)
				b = output.AppendText(b[:0], u, first)
				if !bytes.Equal(a, b) {
					if bad++; bad <= 3 {
						t.Errorf("unit %d text:\nencoder %q\nafresh  %q", u.N, a, b)
					}
				}
			}
			t.Logf("%d units, %d rendered directly", len(us), fast/3)
		})
	}
}

// A DataRow, a CopyData, a NoData, a Sync, a basic.publish and .deliver,
// a content header and body render, as JSON and as text,
// through the encoders and through AppendJSON and AppendText, without
// allocating.
func TestJSONEncoderAllocs(t *testing.T) {
	us := units(t, "../../testdata/pgsql-libpq.pcapng", 0)
	us = append(us, units(t, "../../testdata/amqp091-go.pcapng", 0)...)
	seen := map[string]*decode.Unit{}
	for _, u := range us {
		if _, ok := u.AppendFieldsJSON(nil, -1); ok && seen[u.Type] == nil {
			seen[u.Type] = u
		}
	}
	for _, typ := range []string{"DataRow", "CopyData", "NoData", "Sync", "basic.publish", "basic.deliver", "content-header", "content-body"} {
		u := seen[typ]
		if u == nil {
			t.Errorf("no %s rendered directly", typ)
			continue
		}
		enc := output.NewJSONEncoder(output.JSONOptions{})
		buf := enc.Append(nil, u)
		if n := testing.AllocsPerRun(100, func() { buf = enc.Append(buf[:0], u) }); n != 0 {
			t.Errorf("%s: %v allocations per unit, want 0", typ, n)
		}
		te := output.TextEncoder{First: u.Time()}
		tb := te.Append(nil, u)
		if n := testing.AllocsPerRun(100, func() { tb = te.Append(tb[:0], u) }); n != 0 {
			t.Errorf("%s text: %v allocations per unit, want 0", typ, n)
		}
		if n := testing.AllocsPerRun(100, func() { tb = output.AppendText(tb[:0], u, time.Time{}) }); n != 0 {
			t.Errorf("%s AppendText: %v allocations per unit, want 0", typ, n)
		}
		if n := testing.AllocsPerRun(100, func() { buf = output.AppendJSON(buf[:0], u, output.JSONOptions{}) }); n != 0 {
			t.Errorf("%s AppendJSON: %v allocations per unit, want 0", typ, n)
		}
	}
}

// BenchmarkRender renders the units of each corpus shape (the first 200k;
// scripts/corpus.sh records them) as JSON through the encoder, as JSON from
// the field trees, and as text: ns/op is per unit, B/s the units' bytes.
func BenchmarkRender(b *testing.B) {
	files, _ := filepath.Glob("../../testdata/corpus/*.pcapng")
	if len(files) == 0 {
		files = []string{"../../testdata/pgsql-libpq.pcapng", "../../testdata/amqp091-pika.pcapng"}
	}
	if s := os.Getenv("WIRETAP_BENCH_SHAPES"); s != "" {
		files = nil
		for _, n := range strings.Split(s, ",") {
			files = append(files, "../../testdata/corpus/"+n+".pcapng")
		}
	}
	for _, path := range files {
		us := units(b, path, 200000)
		var size int64
		for _, u := range us {
			size += int64(len(u.Raw))
		}
		name := strings.TrimSuffix(filepath.Base(path), ".pcapng")
		run := func(b *testing.B, fn func(dst []byte, u *decode.Unit) []byte) {
			b.ReportAllocs()
			b.SetBytes(size / int64(len(us)))
			var buf []byte
			i := 0
			for b.Loop() {
				buf = fn(buf[:0], us[i])
				if i++; i == len(us) {
					i = 0
				}
			}
		}
		b.Run(name+"/json", func(b *testing.B) {
			enc := output.NewJSONEncoder(output.JSONOptions{})
			run(b, enc.Append)
		})
		b.Run(name+"/json-tree", func(b *testing.B) {
			run(b, func(dst []byte, u *decode.Unit) []byte {
				return output.AppendJSON(dst, u, output.JSONOptions{TreeOnly: true})
			})
		})
		b.Run(name+"/text", func(b *testing.B) {
			enc := output.TextEncoder{First: us[0].Time()}
			run(b, enc.Append)
		})
	}
}
