package capture

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// Tests on the hostile corpus (testdata/hostile, written by
// internal/hostilegen) that look at the bounded tables themselves.

// flowBytes is a Handler keeping each flow's bytes from A.
type flowBytes map[int]*bytes.Buffer

func (h flowBytes) Data(f *Flow, fromA bool, data []byte, t time.Time) {
	if fromA {
		if h[f.ID] == nil {
			h[f.ID] = new(bytes.Buffer)
		}
		h[f.ID].Write(data)
	}
}
func (h flowBytes) Gap(*Flow, bool, int, time.Time) {}
func (h flowBytes) Close(*Flow, time.Time)          {}

func hostileFile(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open("../testdata/hostile/" + name)
	if err != nil {
		t.Fatalf("%v (go run ./internal/hostilegen writes the corpus)", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func countWarnings(ws []string, sub string) int {
	n := 0
	for _, w := range ws {
		if strings.Contains(w, sub) {
			n++
		}
	}
	return n
}

// TestFragmentTableBounded: 100k incomplete IPv4 datagrams never hold more
// than MaxPendingDatagrams, the limit is warned about once, and a
// fragmented segment after the flood is still reassembled.
func TestFragmentTableBounded(t *testing.T) {
	src, err := openSource(hostileFile(t, "ip-fragments-100k.pcapng.gz"), "frag")
	if err != nil {
		t.Fatal(err)
	}
	stats := new(Stats)
	h := flowBytes{}
	o := (*Options)(nil).withDefaults()
	asm := NewAssembler(h, &o, stats)
	peak := 0
	for {
		var p Packet
		err := src.next(&p)
		if err != nil {
			break
		}
		asm.Packet(&p)
		peak = max(peak, len(asm.datagrams))
	}
	asm.Flush()
	if stats.Fragments < 100000 {
		t.Errorf("%d fragments read, want at least 100000", stats.Fragments)
	}
	if peak > MaxPendingDatagrams {
		t.Errorf("%d incomplete datagrams held at once, limit %d", peak, MaxPendingDatagrams)
	}
	if n := countWarnings(stats.Warnings, "incomplete IPv4 datagrams pending"); n != 1 {
		t.Errorf("%d warnings about pending datagrams, want 1: %q", n, stats.Warnings)
	}
	hdr := "AMQP\x00\x00\x09\x01"
	var whole int
	for id, b := range h {
		if strings.HasPrefix(b.String(), hdr) && b.Len() == 16 && id > 1 {
			whole++ // a fragmented segment, reassembled
		}
	}
	if whole != 2 {
		t.Errorf("%d fragmented segments reassembled, want 2 (one before the flood, one after)", whole)
	}
	if !strings.HasPrefix(h[1].String(), hdr) || h[1].Len() < 100 {
		t.Errorf("the plain conversation: %d bytes", h[1].Len())
	}
}

// TestPcapngInterfacesBounded: a million interface blocks keep at most
// MaxInterfaces, warn once, a packet of an interface past the bound is
// skipped, and the conversations around them decode in full.
func TestPcapngInterfacesBounded(t *testing.T) {
	src, err := openSource(hostileFile(t, "pcapng-interfaces-1m.pcapng.gz"), "idb")
	if err != nil {
		t.Fatal(err)
	}
	stats := new(Stats)
	src.ng.warn = stats.warn
	h := flowBytes{}
	o := (*Options)(nil).withDefaults()
	asm := NewAssembler(h, &o, stats)
	for {
		var p Packet
		err := src.next(&p)
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("reading: %v", err)
			}
			break
		}
		asm.Packet(&p)
	}
	asm.Flush()
	if len(src.ng.ifaces) > MaxInterfaces || cap(src.ng.ifaces) > 2*MaxInterfaces {
		t.Errorf("%d interfaces kept (capacity %d), limit %d", len(src.ng.ifaces), cap(src.ng.ifaces), MaxInterfaces)
	}
	if src.ng.described < 1000000 {
		t.Errorf("%d interface blocks seen, want a million", src.ng.described)
	}
	if n := countWarnings(stats.Warnings, "more than 65536 interfaces"); n != 1 {
		t.Errorf("%d warnings about interfaces, want 1: %q", n, stats.Warnings)
	}
	a, b := h[1], h[2]
	if a == nil || b == nil || a.Len() != b.Len() || !strings.HasPrefix(a.String(), "AMQP") {
		t.Fatalf("conversations: %v %v", a, b)
	}
	// The packet of interface 999900 was a copy of one of conversation
	// 2's: skipped, it must not have doubled its bytes.
	if a.String() != b.String() {
		t.Errorf("conversation 2 differs from conversation 1 (the skipped packet was read?)")
	}
}

// TestPcapngBogusLength: a block whose length is impossible is reported
// as such, not as a file cut short; what came before is decoded.
func TestPcapngBogusLength(t *testing.T) {
	h := flowBytes{}
	stats, err := Read(hostileFile(t, "pcapng-bogus-length.pcapng"), "bogus", h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "bogus length 6") || strings.Contains(stats.Warnings[0], "cut short") {
		t.Errorf("warnings %q, want one about a bogus length", stats.Warnings)
	}
	if h[1] == nil || !strings.HasPrefix(h[1].String(), "AMQP") {
		t.Errorf("the conversation before the bad block was not decoded")
	}
}

// TestPcapngClaimedLengthNotAllocated: a block claiming 30 MiB at the end
// of a short file is a file cut short, read without allocating 30 MiB.
func TestPcapngClaimedLengthNotAllocated(t *testing.T) {
	b, err := os.ReadFile("../testdata/hostile/pcapng-bogus-length.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	b = b[:2100]                             // up to the bogus block
	b = append(b, 6, 0, 0, 0, 0, 0, 0xe0, 1) // an EPB of 30 MiB (little-endian)
	b = append(b, make([]byte, 100)...)
	src, err := openSource(bytes.NewReader(b), "claimed")
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for last == nil {
		last = src.next(new(Packet))
	}
	if last.Error() != "unexpected EOF" {
		t.Errorf("error %v, want unexpected EOF (cut short)", last)
	}
	if c := cap(src.ng.buf); c > 1<<20 {
		t.Errorf("buffer of %d bytes for a block cut after 100", c)
	}
}
