package brokerpanel

import (
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// checksumSource is a source that verifies checksums.
type checksumSource struct {
	*source
	ck state.Checksums
}

func (s checksumSource) Checksums() state.Checksums { return s.ck }

// TestOverviewShowsChecksumMismatches: a broker verifying checksums has
// its counts and its latest mismatches on the overview, newest first. A
// broker not verifying shows no checksum line.
func TestOverviewShowsChecksumMismatches(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	src := checksumSource{testSource(), state.Checksums{Verifying: true, Verified: 7, Mismatches: 2, Recent: []state.ChecksumMismatch{
		{At: at, Where: "arrival", Connection: "c1", Flow: 3, Exchange: "", MessageID: "m-old", Algorithm: "crc-32", Expected: 0xdeadbeef, Actual: 0x1},
		{At: at.Add(time.Second), Where: "delivery", Connection: "c2", Flow: 4, Queue: "q", MessageID: "m-new", Algorithm: "adler-32", Expected: 2, Actual: 3},
	}}}
	m := newPanel(220, 30)
	m.SetSnapshot(Take(src, at))
	v := view(m)
	has(t, v, "verified 7", "mismatches 2", "arrival crc-32 expected 0xdeadbeef got 0x00000001 message-id m-old to exchange (AMQP default) conn c1 (3)",
		"delivery adler-32 expected 0x00000002 got 0x00000003 message-id m-new from queue q conn c2 (4)")
	if strings.Index(v, "m-new") > strings.Index(v, "m-old") {
		t.Errorf("the newest mismatch is not first:\n%s", v)
	}
	m2 := newPanel(220, 30)
	m2.SetSnapshot(Take(testSource(), at))
	if strings.Contains(view(m2), "Checksums") {
		t.Errorf("a source that does not verify checksums shows a checksum line:\n%s", view(m2))
	}
}
