package capture

import (
	"net/netip"
	"testing"
)

// TestFlowKey checks that a connection's key is the same from either
// direction and differs whenever an address, a port or the address's
// family does.
func TestFlowKey(t *testing.T) {
	ap := netip.MustParseAddrPort
	a, b := ap("10.0.0.1:5672"), ap("10.0.0.2:40000")
	if keyOf(a, b) != keyOf(b, a) {
		t.Error("the two directions of a connection have different keys")
	}
	others := []struct{ a, b netip.AddrPort }{
		{ap("10.0.0.1:5673"), b},
		{a, ap("10.0.0.2:40001")},
		{ap("10.0.0.3:5672"), b},
		{ap("[::ffff:10.0.0.1]:5672"), b}, // IPv4-mapped: another address
		{ap("[::ffff:10.0.0.1]:5672"), ap("[::ffff:10.0.0.2]:40000")},
		{ap("[fe80::1]:5672"), ap("[fe80::2]:40000")},
		{a, a},
	}
	seen := map[flowKey]int{keyOf(a, b): -1}
	for i, o := range others {
		k := keyOf(o.a, o.b)
		if j, dup := seen[k]; dup {
			t.Errorf("%v-%v has the key of case %d", o.a, o.b, j)
		}
		seen[k] = i
	}
}
