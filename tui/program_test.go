package tui

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/filter"
	"github.com/wiretap-dev/wiretap/tui/internal/fake"
)

// TestProgram runs the real bubbletea program (no terminal) while a
// source sends units concurrently and a filter is typed, and checks the
// final model: every unit stored, the filter's rows exactly the matching
// units. Under -race it checks the store's snapshot discipline.
func TestProgram(t *testing.T) {
	const expr = `amqp.checksum == "mismatch" || pgsql.type == "CommandComplete"`
	units := fake.Generate(200000, 9)
	ch := make(chan []*decode.Unit)
	go func() {
		defer close(ch)
		for i := 0; i < len(units); i += 512 {
			ch <- units[i:min(i+512, len(units))]
		}
	}()
	var p *tea.Program
	started := make(chan struct{})
	var once sync.Once
	settled := func(m tea.Model, msg tea.Msg) tea.Msg {
		once.Do(func() { close(started) })
		if mm, ok := m.(Model); ok && mm.done && mm.flt.expr == expr && !mm.flt.running && int(mm.flt.upto) == mm.st.Len() {
			return tea.QuitMsg{}
		}
		return msg
	}
	typed := make(chan struct{})
	go func() {
		defer close(typed)
		<-started
		for _, k := range "/" + expr {
			p.Send(tea.KeyPressMsg{Code: k, Text: string(k)})
		}
		p.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	}()
	m, err := run(context.Background(), Options{Title: "t", Units: ch},
		tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(120, 40), tea.WithoutSignals(),
		tea.WithFilter(settled), func(q *tea.Program) { p = q })
	<-typed
	if err != nil {
		t.Fatal(err)
	}
	final := m.(Model)
	if final.st.Len() != len(units) {
		t.Fatalf("stored %d of %d units", final.st.Len(), len(units))
	}
	f, err := filter.Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	var want []int32
	for i, u := range units {
		if f.Match(u) {
			want = append(want, int32(i))
		}
	}
	got := seqSlice(final.units.Rows())
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("row %d is unit %d, want %d", i, got[i], want[i])
		}
	}
}

// TestProgramBurstOfKeys types a filter whose every prefix from "frame"
// on is valid as one burst of keys, as a paste does, into the real
// program, and checks that the filter applied is the one in the bar: the
// bar's changes must be applied in key order, though bubbletea runs
// commands on goroutines of their own.
func TestProgramBurstOfKeys(t *testing.T) {
	const expr = `frame.len > 1000000000`
	// Many units keep the processors busy scanning while the keys arrive,
	// which is when commands' goroutines get reordered.
	units := fake.Generate(200000, 3)
	for round := 0; round < 10; round++ {
		ch := make(chan []*decode.Unit, 1)
		ch <- units
		close(ch)
		var p *tea.Program
		started := make(chan struct{})
		var once sync.Once
		var sent sync.WaitGroup
		sent.Add(1)
		exited := make(chan struct{})
		settle := func(m tea.Model, msg tea.Msg) tea.Msg {
			once.Do(func() { close(started) })
			if mm, ok := m.(Model); ok && mm.done && mm.bar.Value() == expr && !mm.flt.running {
				if _, quit := msg.(settledMsg); quit {
					return tea.QuitMsg{}
				}
			}
			return msg
		}
		go func() {
			defer sent.Done()
			<-started
			p.Send(tea.KeyPressMsg{Code: '/', Text: "/"})
			for _, k := range expr {
				p.Send(tea.KeyPressMsg{Code: k, Text: string(k)})
			}
			// Ask to quit until the program has settled: every command of
			// the burst finished, the last scan done.
			for {
				select {
				case <-exited:
					return
				case <-time.After(20 * time.Millisecond):
					p.Send(settledMsg{})
				}
			}
		}()
		m, err := run(context.Background(), Options{Title: "t", Units: ch},
			tea.WithInput(nil), tea.WithOutput(io.Discard), tea.WithWindowSize(120, 40), tea.WithoutSignals(),
			tea.WithFilter(settle), func(q *tea.Program) { p = q })
		close(exited)
		sent.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.(Model).flt.expr; got != expr {
			t.Fatalf("round %d: filter applied is %q, the bar holds %q", round, got, expr)
		}
	}
}

type settledMsg struct{}
