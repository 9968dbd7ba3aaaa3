package capture

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
)

// isb returns an interface statistics block (little-endian) for interface
// id with isb_ifdrop and isb_osdrop set, an option the reader does not use
// before them.
func isb(id uint32, ifdrop, osdrop uint64) []byte {
	var body []byte
	body = binary.LittleEndian.AppendUint32(body, id)
	body = binary.LittleEndian.AppendUint64(body, 0) // timestamp
	opt := func(code uint16, v uint64) {
		body = binary.LittleEndian.AppendUint16(body, code)
		body = binary.LittleEndian.AppendUint16(body, 8)
		body = binary.LittleEndian.AppendUint64(body, v)
	}
	opt(4, 1000) // isb_ifrecv
	opt(ngOptISBIfdrop, ifdrop)
	opt(ngOptISBOsdrop, osdrop)
	body = append(body, 0, 0, 0, 0) // opt_endofopt
	total := uint32(12 + len(body))
	b := binary.LittleEndian.AppendUint32(nil, ngBlockISB)
	b = binary.LittleEndian.AppendUint32(b, total)
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, total)
}

// TestStatisticsBlockDrops: the drops a pcapng file's interface
// statistics blocks report are counted once per interface (the counters
// are totals, so the last block holds), in every way the file is read,
// with a warning; a damaged statistics block is passed over.
func TestStatisticsBlockDrops(t *testing.T) {
	base, err := os.ReadFile("testdata/loopback-lo.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(base[8:12], []byte{0x4d, 0x3c, 0x2b, 0x1a}) {
		t.Fatal("the sample is not little-endian")
	}
	want, err := ReadFile("testdata/loopback-lo.pcapng", nopHandler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want.Dropped != 0 {
		t.Fatalf("the sample says %d dropped", want.Dropped)
	}
	damaged := isb(0, 99, 99)[:20] // cut inside the timestamp...
	binary.LittleEndian.PutUint32(damaged[4:], 20)
	damaged = append(damaged[:16], damaged[4:8]...) // ...with a consistent length
	file := append(append(append(append([]byte(nil), base...), isb(0, 3, 1)...), damaged...), isb(0, 7, 5)...)
	file = append(file, isb(9, 100, 100)...) // an interface that is not described
	path := t.TempDir() + "/drops.pcapng"
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(how string, st *Stats, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		if st.Dropped != 12 || st.Packets != want.Packets {
			t.Errorf("%s: %d dropped, %d packets; want 12 dropped (7+5 of the last block), %d packets", how, st.Dropped, st.Packets, want.Packets)
		}
		if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "report 12 packets dropped while capturing") {
			t.Errorf("%s: warnings %q", how, st.Warnings)
		}
	}
	st, err := ReadFile(path, nopHandler{}, nil) // mapped
	check("mapped", st, err)
	st, err = Read(bytes.NewReader(file), "piped", nopHandler{}, nil)
	check("piped", st, err)
}

// TestStatisticsBlockDropsSaturate: counters that would wrap when added
// (a hostile file) report the most there can be, not a small number.
func TestStatisticsBlockDropsSaturate(t *testing.T) {
	base, err := os.ReadFile("testdata/loopback-lo.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	file := append(append([]byte(nil), base...), isb(0, 1<<63, 1<<63+5)...)
	st, err := Read(bytes.NewReader(file), "huge", nopHandler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != math.MaxInt64 {
		t.Errorf("%d dropped, want the largest count", st.Dropped)
	}
}
