package tui

import (
	"strconv"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/wiretap-dev/wiretap/decode"
)

// BenchmarkKeypressScale measures the keypresses of
// BenchmarkScrollKeypress and BenchmarkPageKeypress, each with the frame
// it produces, on 1 and 10 million real units stored under the default
// budget (--memory 512MiB), so that most of them are frozen to records
// and blobs as on a large capture: issue 13 asks that the latencies on a
// million hold on ten. The units are realMillion's, copied a batch at a
// time (the store lets go of what it freezes, so the copies do not pile
// up); filling the store is not timed.
//
//	go test -run '^$' -bench KeypressScale -benchtime 200x ./tui
func BenchmarkKeypressScale(b *testing.B) {
	for _, n := range []int{million, 10 * million} {
		b.Run("units="+strconv.Itoa(n/million)+"M", func(b *testing.B) {
			m := scaled(b, n)
			for _, c := range []struct {
				name string
				keys []tea.KeyPressMsg
			}{
				{"j", []tea.KeyPressMsg{keyMsg("j")}},
				{"page", []tea.KeyPressMsg{keyMsg("ctrl+d"), keyMsg("ctrl+u")}},
				{"G-g", []tea.KeyPressMsg{keyMsg("G"), keyMsg("g")}},
			} {
				b.Run(c.name, func(b *testing.B) {
					var tm tea.Model = m
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						tm, _ = tm.Update(c.keys[i%len(c.keys)])
						_ = tm.(Model).Render()
					}
				})
			}
		})
	}
}

// scaled returns a model of n real units under the default budget, sized
// 160×50, the cursor on the first unit.
func scaled(b *testing.B, n int) Model {
	one := realMillion(b)[:million]
	var tm tea.Model = New(Options{Title: "bench", Memory: 512 << 20})
	nm := tm.(Model)
	nm.driven = true
	b.Cleanup(func() { nm.st.Close() })
	tm, _ = nm.Update(tea.WindowSizeMsg{Width: 160, Height: 50})
	const batch = 1 << 16
	for done := 0; done < n; {
		k := min(batch, n-done)
		slab := make([]decode.Unit, k)
		units := make([]*decode.Unit, k)
		for i := range slab {
			slab[i] = *one[(done+i)%million]
			slab[i].N = done + i + 1
			units[i] = &slab[i]
		}
		done += k
		tm, _ = tm.Update(unitsMsg{batches: [][]*decode.Unit{units}, closed: done == n})
	}
	m := tm.(Model)
	if m.st.Len() != n {
		b.Fatalf("stored %d units, want %d", m.st.Len(), n)
	}
	frozen, _ := m.st.Spilled()
	b.Logf("%d units, %d of them frozen", n, frozen)
	tm, _ = m.Update(keyMsg("g"))
	return tm.(Model)
}
