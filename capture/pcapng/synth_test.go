package pcapng_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// streams collects each flow's bytes per direction.
type streams struct {
	data   map[int]*[2]bytes.Buffer
	gaps   map[int]int
	flows  map[int]capture.Flow
	closed int
}

func newStreams() *streams {
	return &streams{data: map[int]*[2]bytes.Buffer{}, gaps: map[int]int{}, flows: map[int]capture.Flow{}}
}

func (s *streams) get(f *capture.Flow) *[2]bytes.Buffer {
	s.flows[f.ID] = *f
	b := s.data[f.ID]
	if b == nil {
		b = new([2]bytes.Buffer)
		s.data[f.ID] = b
	}
	return b
}

func (s *streams) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	d := 1
	if fromA {
		d = 0
	}
	s.get(f)[d].Write(data)
}
func (s *streams) Gap(f *capture.Flow, fromA bool, n int, t time.Time) { s.get(f); s.gaps[f.ID] += n }
func (s *streams) Close(f *capture.Flow, t time.Time)                  { s.get(f); s.closed++ }

type exchange struct {
	a, b   string
	chunks []chunk
}

type chunk struct {
	fromA bool
	data  []byte
	gap   int
}

func exchanges() []exchange {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes: many segments
	return []exchange{
		{a: "127.0.0.1:40001", b: "127.0.0.1:5672", chunks: []chunk{
			{fromA: true, data: []byte("AMQP\x00\x00\x09\x01")},
			{fromA: false, data: big},
			{fromA: true, data: []byte("ok")},
		}},
		{a: "[::1]:40002", b: "[::1]:5432", chunks: []chunk{
			{fromA: true, data: []byte("\x00\x00\x00\x08\x04\xd2\x16\x2f")},
			{fromA: false, data: []byte("N")},
		}},
		{a: "127.0.0.1:40003", b: "[::1]:5672", chunks: []chunk{ // mixed families, as a proxy sees them
			{fromA: true, data: []byte("mixed")},
			{fromA: false, data: []byte("families")},
		}},
	}
}

// synthesise writes the exchanges, interleaved, to a pcapng file.
func synthesise(t *testing.T, mss int) (string, []exchange) {
	t.Helper()
	var buf bytes.Buffer
	w := pcapng.NewWriter(&buf)
	s := pcapng.NewSynth(w)
	s.MSS = mss
	ex := exchanges()
	flows := make([]*capture.Flow, len(ex))
	t0 := time.Unix(1700000000, 0)
	for i, e := range ex {
		flows[i] = &capture.Flow{ID: i + 1, A: netip.MustParseAddrPort(e.a), B: netip.MustParseAddrPort(e.b), SYN: true, First: t0}
	}
	for step := 0; ; step++ {
		any := false
		for i, e := range ex {
			if step < len(e.chunks) {
				any = true
				s.Data(flows[i], e.chunks[step].fromA, e.chunks[step].data, t0.Add(time.Duration(step)*time.Millisecond))
			}
		}
		if !any {
			break
		}
	}
	for _, f := range flows {
		s.Close(f, t0.Add(time.Second))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "synth.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ex
}

func want(e exchange) [2][]byte {
	var w [2][]byte
	for _, c := range e.chunks {
		d := 1
		if c.fromA {
			d = 0
		}
		w[d] = append(w[d], c.data...)
	}
	return w
}

func TestSynthRoundTrip(t *testing.T) {
	for _, mss := range []int{0, 100} {
		path, ex := synthesise(t, mss)
		got := newStreams()
		stats, err := capture.ReadFile(path, got, nil)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Flows != len(ex) || got.closed != len(ex) || stats.Skipped != 0 || len(stats.Warnings) != 0 {
			t.Fatalf("mss %d: stats %+v, closed %d", mss, stats, got.closed)
		}
		for i, e := range ex {
			f := got.flows[i+1]
			if !f.SYN || f.A.Addr().Unmap() != netip.MustParseAddrPort(e.a).Addr() || f.A.Port() != netip.MustParseAddrPort(e.a).Port() {
				t.Errorf("mss %d: flow %d = %+v, want A %s", mss, i+1, f, e.a)
			}
			w := want(e)
			for d := range 2 {
				if !bytes.Equal(got.data[i+1][d].Bytes(), w[d]) {
					t.Errorf("mss %d: flow %d direction %d: %d bytes, want %d", mss, i+1, d, got.data[i+1][d].Len(), len(w[d]))
				}
			}
			if got.gaps[i+1] != 0 {
				t.Errorf("flow %d: gaps %d", i+1, got.gaps[i+1])
			}
		}
	}
}

func TestSynthGap(t *testing.T) {
	var buf bytes.Buffer
	w := pcapng.NewWriter(&buf)
	s := pcapng.NewSynth(w)
	f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.1.1.1:1"), B: netip.MustParseAddrPort("10.1.1.2:2")}
	s.Data(f, true, []byte("abc"), time.Unix(1, 0))
	s.Gap(f, true, 7, time.Unix(1, 0))
	s.Data(f, true, []byte("def"), time.Unix(2, 0))
	s.Close(f, time.Unix(3, 0))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := newStreams()
	if _, err := capture.Read(&buf, "gap", got, nil); err != nil {
		t.Fatal(err)
	}
	if got.data[1][0].String() != "abcdef" || got.gaps[1] != 7 {
		t.Errorf("stream %q, gaps %d", got.data[1][0].String(), got.gaps[1])
	}
}

func TestWriterEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := pcapng.NewWriter(&buf).Close(); err != nil {
		t.Fatal(err)
	}
	stats, err := capture.Read(&buf, "empty", newStreams(), nil)
	if err != nil || stats.Packets != 0 || stats.Truncated {
		t.Errorf("err %v, stats %+v", err, stats)
	}
}

// needTool returns the path of a tool, skipping the test when it is
// missing, unless CI=true, where a missing tool fails.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is needed (install Debian's tshark package)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return path
}

// TestSynthTshark checks that tshark reads the synthesised capture without
// a malformed packet, a bad checksum or a TCP analysis warning, and that its
// reassembly of each stream is ours.
func TestSynthTshark(t *testing.T) {
	tshark := needTool(t, "tshark")
	path, ex := synthesise(t, 0)
	out, err := exec.Command(tshark, "-n", "-r", path,
		"-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
		"-Y", "_ws.malformed || _ws.expert.severity >= 6291456 || tcp.analysis.flags",
		"-T", "fields", "-e", "frame.number", "-e", "_ws.expert.message").Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("tshark finds problems:\n%s", s)
	}
	for i, e := range ex {
		out, err := exec.Command(tshark, "-n", "-r", path, "-q", "-z", "follow,tcp,raw,"+strconv.Itoa(i)).Output()
		if err != nil {
			t.Fatalf("tshark follow: %v\n%s", err, out)
		}
		var got [2][]byte
		// The hex lines come after "Node 1: ..." and before the closing
		// rule; the server's lines are indented with a tab.
		_, body, _ := strings.Cut(string(out), "\nNode 1: ")
		_, body, _ = strings.Cut(body, "\n")
		body, _, _ = strings.Cut(body, "=====")
		for _, line := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			d := 0
			if strings.HasPrefix(line, "\t") {
				d = 1
			}
			b, err := hex.DecodeString(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("follow output %q: %v", line, err)
			}
			got[d] = append(got[d], b...)
		}
		w := want(e)
		for d := range 2 {
			if !bytes.Equal(got[d], w[d]) {
				t.Errorf("stream %d direction %d: tshark reassembles %d bytes, want %d", i, d, len(got[d]), len(w[d]))
			}
		}
	}
}

func TestPcapWriter(t *testing.T) {
	var buf bytes.Buffer
	w := pcapng.NewPcapWriter(&buf)
	s := pcapng.NewSynth(w)
	f := &capture.Flow{ID: 7, A: netip.MustParseAddrPort("[2001:db8::1]:1"), B: netip.MustParseAddrPort("[2001:db8::2]:2"), SYN: true}
	s.Data(f, true, []byte("over pcap"), time.Unix(5, 123456789))
	s.Close(f, time.Unix(6, 0))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(&capture.Packet{Link: 113, Data: []byte{1}}); err == nil {
		t.Error("a second link type was accepted")
	}
	if got := binary.LittleEndian.Uint32(buf.Bytes()); got != 0xa1b23c4d {
		t.Errorf("magic %#x, want the nanosecond pcap magic", got)
	}
	got := newStreams()
	if _, err := capture.Read(&buf, "pcap", got, nil); err != nil {
		t.Fatal(err)
	}
	if got.data[1][0].String() != "over pcap" || !got.flows[1].First.Equal(time.Unix(5, 123456789)) {
		t.Errorf("read %q at %v", got.data[1][0].String(), got.flows[1].First)
	}
}

// TestWriterLinkTypes writes packets of two link types, as a live capture
// on "any" next to one on an Ethernet interface gives, and reads them back.
func TestWriterLinkTypes(t *testing.T) {
	var src bytes.Buffer
	sw := pcapng.NewWriter(&src)
	s := pcapng.NewSynth(sw)
	f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.9.0.1:1000"), B: netip.MustParseAddrPort("10.9.0.2:2000"), SYN: true}
	s.Data(f, true, []byte("ethernet and cooked"), time.Unix(10, 0))
	s.Close(f, time.Unix(11, 0))
	sw.Close()

	// Rewrite every other packet as Linux cooked (SLL2): the same IP packet
	// behind a 20-byte header.
	var out bytes.Buffer
	w := pcapng.NewWriter(&out)
	n := 0
	opt := &capture.Options{Tap: func(p *capture.Packet) {
		q := *p
		if n%2 == 1 {
			sll2 := make([]byte, 20, 20+len(p.Data))
			copy(sll2, p.Data[12:14]) // protocol: the EtherType
			sll2[9] = 1               // ARPHRD_ETHER
			q.Link, q.Data = 276, append(sll2, p.Data[14:]...)
			q.Length = len(q.Data)
		}
		n++
		if err := w.WritePacket(&q); err != nil {
			t.Fatal(err)
		}
	}}
	if _, err := capture.Read(&src, "src", newStreams(), opt); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mixed.pcapng")
	os.WriteFile(path, out.Bytes(), 0o644)
	got := newStreams()
	if _, err := capture.ReadFile(path, got, nil); err != nil {
		t.Fatal(err)
	}
	if got.data[1][0].String() != "ethernet and cooked" {
		t.Errorf("read back %q", got.data[1][0].String())
	}
	if _, err := exec.LookPath("tshark"); err == nil {
		encaps, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "frame.encap_type").Output()
		if err != nil {
			t.Fatal(err)
		}
		if e := strings.Fields(string(encaps)); len(e) != n || e[0] != "1" || e[1] != "210" {
			t.Errorf("tshark reads encapsulations %q", e)
		}
	}
}
