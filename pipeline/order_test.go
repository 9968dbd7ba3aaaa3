package pipeline

import (
	"net/netip"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
)

// TestLateConnectionsSortedOnce: connections reported in reverse order of
// their IDs are listed in ID order, with one sort per Conns call that
// needs one, not one per late connection (issue 14: 60k connections cost
// 60k sorts).
func TestLateConnectionsSortedOnce(t *testing.T) {
	const n = 20000
	p, _ := collect(Config{})
	for id := n; id >= 1; id-- {
		a := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(id >> 8), byte(id)}), 40000)
		f := &capture.Flow{ID: id, A: a, B: netip.MustParseAddrPort("10.0.0.1:5672"), SYN: true, First: t0}
		p.Data(f, true, amqp091Header, t0)
	}
	if p.sorts != 0 {
		t.Fatalf("%d sorts before anyone asked for the connections", p.sorts)
	}
	cs := p.Conns()
	if len(cs) != n {
		t.Fatalf("%d connections, want %d", len(cs), n)
	}
	for i, c := range cs {
		if c.ID != i+1 {
			t.Fatalf("connection %d has ID %d", i, c.ID)
		}
	}
	p.Conns()
	if p.sorts != 1 {
		t.Errorf("%d sorts for %d late connections and two Conns calls, want 1", p.sorts, n)
	}
	p.Finish()
}
