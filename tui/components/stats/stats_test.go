package stats

import (
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/tui/keys"
	"github.com/wiretap-dev/wiretap/tui/store"
	"github.com/wiretap-dev/wiretap/tui/styles"
)

func TestChartLevels(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(60, 40)
	// Peak 16 over 2 rows of 8 levels each: 16 fills both rows, 8 the
	// bottom row, 1 one eighth of it, 0 nothing.
	rows := m.chart([]int{16, 8, 1, 0}, 2)
	got := []string{ansi.Strip(rows[0]), ansi.Strip(rows[1])}
	want := []string{"      16 │█   ", "       0 │██▁ "}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestHistogramView(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(80, 60)
	ms := time.Millisecond
	st := store.Stats{Units: 10, Overall: store.Summarise([]time.Duration{ms / 2, 3 * ms, 3 * ms, 2 * time.Second})}
	m.SetStats(st, nil)
	v := ansi.Strip(m.View())
	for _, want := range []string{"4 pairs", "p50 3.00ms", "<=1ms", "1  25.0%", "<=5ms", "2  50.0%", ">1s", "max 2.00s"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}

// TestApproxPercentiles: percentiles of a histogram (past
// store.ExactLatencies pairs) are marked as approximate, with their bound.
func TestApproxPercentiles(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(120, 60)
	lat := store.Summarise([]time.Duration{time.Millisecond, 2 * time.Millisecond})
	lat.Approx = true
	m.SetStats(store.Stats{Units: 10, Overall: lat}, nil)
	v := ansi.Strip(m.View())
	for _, want := range []string{"p50 ≈1.00ms", "p99 ≈2.00ms", "max 2.00ms", "(percentiles within 0.8%)"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}

func TestBrokerLatencySection(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(200, 80)
	m.SetStats(store.Stats{}, nil)
	if v := ansi.Strip(m.View()); strings.Contains(v, "inside the broker") {
		t.Fatalf("a broker section without a broker:\n%s", v)
	}
	m.SetBrokerLatency([]BrokerLatency{})
	if v := ansi.Strip(m.View()); !strings.Contains(v, "Latency inside the broker") || !strings.Contains(v, "nothing delivered yet") {
		t.Fatalf("empty broker section:\n%s", v)
	}
	m.SetBrokerLatency([]BrokerLatency{{What: "queue 'work' in vhost '/'",
		PublishToDeliver: state.Latency{Count: 7, Buckets: [6]uint64{6, 0, 1}, P50: 300 * time.Microsecond, P99: 20 * time.Millisecond}}})
	v := ansi.Strip(m.View())
	for _, want := range []string{"queue 'work' in vhost '/' publish→deliver: 7", "p50 300µs", "p99 20ms", "<=1ms 6", "<=50ms 1", ">1s 0"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "deliver→ack") {
		t.Errorf("an empty deliver→ack histogram is shown:\n%s", v)
	}
}

// TestEveryTypeReachable: past the first screenful of types the view
// scrolls to the last one.
func TestEveryTypeReachable(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(100, 20)
	var st store.Stats
	for i := range 60 {
		st.Types = append(st.Types, store.TypeCount{Proto: "pgsql", Type: "Type" + strconv.Itoa(i), Units: 1})
	}
	m.SetStats(st, nil)
	found := false
	for range 100 {
		if strings.Contains(ansi.Strip(m.View()), "Type59") {
			found = true
			break
		}
		m, _ = m.Update(tea.KeyPressMsg{Code: 'j', Text: "j"})
	}
	if !found {
		t.Fatal("the 60th type is never shown")
	}
}

func TestSourceWarnings(t *testing.T) {
	m := New(keys.DefaultKeyMap(), styles.DefaultStyles())
	m.SetSize(120, 60)
	m.SetStats(store.Stats{}, nil)
	if strings.Contains(ansi.Strip(m.View()), "Source warnings") {
		t.Fatal("a warnings section without warnings")
	}
	m.SetWarnings([]string{"capture: cut short after 3 packets", "ip: 4096 incomplete datagrams held"})
	v := ansi.Strip(m.View())
	for _, want := range []string{"Source warnings", "cut short after 3 packets", "4096 incomplete datagrams"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
}
