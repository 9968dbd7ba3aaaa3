package tui

import (
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

const million = 1_000_000

var (
	millionOnce  sync.Once
	millionUnits []*decode.Unit
)

// oneMillion returns a million fake units (generated once per test binary).
func oneMillion() []*decode.Unit {
	millionOnce.Do(func() { millionUnits = fake.Generate(million, 42) })
	return millionUnits
}

// queued returns a channel holding units in batches of 1024, closed, as a
// pipeline that has read a whole file before the UI looked would leave it.
func queued(units []*decode.Unit) chan []*decode.Unit {
	ch := make(chan []*decode.Unit, len(units)/1024+1)
	for i := 0; i < len(units); i += 1024 {
		ch <- units[i:min(i+1024, len(units))]
	}
	close(ch)
	return ch
}

// BenchmarkFirstFrame measures the time from starting the program with a
// million units queued to its first rendered frame with units on it.
func BenchmarkFirstFrame(b *testing.B) {
	units := oneMillion()
	b.ReportAllocs()
	b.ResetTimer() // the million units are made once, not measured
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ch := queued(units)
		b.StartTimer()
		var m tea.Model = New(Options{Title: "bench", Units: ch})
		m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
		m, _ = m.Update(waitUnitsUpTo(ch, firstUnits)())
		mm := m.(Model)
		if s := mm.Render(); len(s) == 0 || mm.units.Len() == 0 {
			b.Fatal("empty first frame")
		}
	}
}

// loaded returns a model holding a million units, sized 160×50.
func loaded(b *testing.B) Model {
	var m tea.Model = New(Options{Title: "bench"})
	nm := m.(Model)
	nm.driven = true
	m = nm
	m, _ = m.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	m, _ = m.Update(unitsMsg{batches: [][]*decode.Unit{oneMillion()}, closed: true})
	return m.(Model)
}

// BenchmarkScrollKeypress measures one "j" on a million units, with the
// frame it produces.
func BenchmarkScrollKeypress(b *testing.B) {
	m := loaded(b)
	j, k := keyMsg("j"), keyMsg("k")
	b.ReportAllocs()
	b.ResetTimer()
	var tm tea.Model = m
	for i := 0; i < b.N; i++ {
		key := j
		if i%200 >= 100 {
			key = k
		}
		tm, _ = tm.Update(key)
		_ = tm.(Model).Render()
	}
}

// BenchmarkPageKeypress is BenchmarkScrollKeypress with ctrl+d and G/g,
// which jump far.
func BenchmarkPageKeypress(b *testing.B) {
	m := loaded(b)
	keys := []tea.KeyPressMsg{keyMsg("ctrl+d"), keyMsg("G"), keyMsg("ctrl+u"), keyMsg("g")}
	b.ReportAllocs()
	b.ResetTimer()
	var tm tea.Model = m
	for i := 0; i < b.N; i++ {
		tm, _ = tm.Update(keys[i%len(keys)])
		_ = tm.(Model).Render()
	}
}

// BenchmarkFilterKeypress measures one keypress in the filter bar that
// changes a valid filter over a million units, up to the frame showing
// the first run's matches: a screenful, or what the first 64Ki units
// hold (the scan of the rest goes on in the background and the next
// keypress cancels it).
func BenchmarkFilterKeypress(b *testing.B) { benchFilter(b, true) }

// BenchmarkFilterComplete is BenchmarkFilterKeypress up to the end of the
// scan: every match of a million units found.
func BenchmarkFilterComplete(b *testing.B) { benchFilter(b, false) }

func benchFilter(b *testing.B, first bool) {
	for _, c := range []struct{ name, expr string }{
		{"header", `pgsql.type == "DataRow" || amqp.checksum == "mismatch"`},
		{"rare", `frame.len > 60`},
		{"fields", `amqp.method.arguments.routing_key == "orders"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := withFilter(b, loaded(b), c.expr)
			d.firstResult = first
			editFilter(b, d, func() {
				if !first && d.m.units.Len() == 0 {
					b.Fatal("no rows")
				}
			})
			b.ReportMetric(float64(d.m.flt.matched()), "rows")
		})
	}
}

var (
	realOnce  sync.Once
	realUnits []*decode.Unit
)

// realMillion returns a million units decoded by the real pipeline: the
// units of testdata/amqp091-pika.pcapng (a pika session against RabbitMQ
// 3.10) repeated, numbered in order, so filters run the real finders and
// dissectors (fake units carry fake trees).
func realMillion(b testing.TB) []*decode.Unit {
	realOnce.Do(func() {
		var one []*decode.Unit
		p := pipeline.New(pipeline.Config{Sink: func(u *decode.Unit) { one = append(one, u) }})
		if _, err := capture.ReadFile("../testdata/amqp091-pika.pcapng", p, nil); err != nil {
			b.Fatal(err)
		}
		p.Finish()
		realUnits = make([]*decode.Unit, 0, million+len(one))
		slab := make([]decode.Unit, million+len(one))
		for len(realUnits) < million {
			for _, u := range one {
				c := &slab[len(realUnits)]
				*c = *u
				c.N = len(realUnits) + 1
				realUnits = append(realUnits, c)
			}
		}
	})
	return realUnits
}

// BenchmarkFilterReal is BenchmarkFilterComplete on a million real units:
// one keypress changing a valid filter, up to every match found. Under
// "frozen" the store's budget (--memory 64MiB) holds few of them whole:
// the rest are frozen to records and blobs, as on a large capture.
func BenchmarkFilterReal(b *testing.B) {
	units := realMillion(b)
	cases := []struct{ name, expr string }{
		{"method", `amqp.method == "basic.publish"`},
		{"len", `frame.len > 1000`},
		{"routing_key", `amqp.method.arguments.routing_key == "k1"`},
		{"header", `amqp.header.body-size > 10`},
	}
	run := func(b *testing.B, memory int64, name, expr string) {
		b.Run(name, func(b *testing.B) {
			var m tea.Model = New(Options{Title: "bench", Memory: memory})
			nm := m.(Model)
			nm.driven = true
			b.Cleanup(func() { nm.st.Close() })
			m, _ = nm.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
			m, _ = m.Update(unitsMsg{batches: [][]*decode.Unit{units}, closed: true})
			if k, _ := nm.st.Spilled(); memory > 0 && k < len(units)*9/10 {
				b.Fatalf("%d of %d units frozen", k, len(units))
			}
			d := withFilter(b, m.(Model), expr)
			editFilter(b, d, func() {})
			if d.m.flt.matched() == 0 {
				b.Fatal("no rows")
			}
			b.ReportMetric(float64(d.m.flt.matched()), "rows")
		})
	}
	for _, c := range cases {
		run(b, 0, c.name, c.expr)
	}
	b.Run("frozen", func(b *testing.B) {
		for _, c := range cases {
			run(b, 64<<20, c.name, c.expr)
		}
	})
}

// withFilter returns a driver over m with expr typed into the filter bar
// (applied as typed).
func withFilter(b *testing.B, m Model, expr string) *driver {
	d := &driver{t: b, m: m}
	d.keys("/")
	d.typeText(expr)
	if d.m.flt.expr != expr {
		b.Fatalf("%q does not compile: %v", expr, d.m.bar.Err())
	}
	return d
}

// editFilter times b.N keypresses in the filter bar, alternately " " and
// backspace (the expression stays valid and each key starts a new scan),
// each with the frame it produces; check runs after each key. The timer
// is stopped on return.
func editFilter(b *testing.B, d *driver, check func()) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			d.keys("space")
		} else {
			d.keys("backspace")
		}
		check()
		_ = d.m.Render()
	}
	b.StopTimer()
}
