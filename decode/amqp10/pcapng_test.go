package amqp10

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/decode"
)

// writePcapng turns relay recordings into a pcapng capture (one TCP
// connection per recording, server on port 5672, one segment per relay
// read up to the MSS), so tshark and `wiretap read` can read them.
func writePcapng(recs []*recording) ([]byte, error) {
	var out bytes.Buffer
	w := pcapng.NewWriter(&out)
	s := pcapng.NewSynth(w)
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	server := netip.MustParseAddrPort("127.0.0.1:5672")
	for i, rec := range recs {
		f := &capture.Flow{ID: i + 1, A: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(40000+i)), B: server, SYN: true, First: t}
		for _, c := range rec.chunks {
			t = t.Add(time.Millisecond)
			s.Data(f, c.dir == decode.DirF, c.data, t)
		}
		t = t.Add(time.Millisecond)
		s.Close(f, t)
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func loadProtonRecordings(t *testing.T) []*recording {
	t.Helper()
	var recs []*recording
	for i := 1; ; i++ {
		b, err := os.ReadFile(fixture(protonFixture + ".conn" + strconv.Itoa(i) + ".rec"))
		if err != nil {
			break
		}
		rec, err := unmarshalRecording(b)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		t.Fatal("no proton recordings")
	}
	return recs
}

// TestPcapngFixture keeps testdata/peers/proton-rabbitmq310.pcapng in step
// with the recordings (WIRETAP_RECORD=1 rewrites it).
func TestPcapngFixture(t *testing.T) {
	b, err := writePcapng(loadProtonRecordings(t))
	if err != nil {
		t.Fatal(err)
	}
	path := fixture(protonFixture + ".pcapng")
	if os.Getenv("WIRETAP_RECORD") == "1" {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, b) {
		t.Fatalf("%s is stale or missing (WIRETAP_RECORD=1 go test -run TestPcapngFixture): %v", path, err)
	}
}

// TestTsharkAgrees counts the AMQP 1.0 frames tshark finds in the pcapng
// and compares them with the decoder's units, and reports where tshark
// calls a packet malformed (wiretap must decode those without error).
func TestTsharkAgrees(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		needPeer(t, "tshark is not installed")
	}
	path := fixture(protonFixture + ".pcapng")
	out, err := exec.Command("tshark", "-r", path, "-o", "tcp.desegment_tcp_streams:TRUE", "-T", "fields",
		"-e", "frame.number", "-e", "amqp.performative", "-e", "_ws.malformed", "-Y", "amqp || _ws.malformed").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	tsharkPerf, malformed := 0, 0
	for _, line := range readLines(out) {
		cols := strings.Split(line, "\t")
		if len(cols) < 3 {
			continue
		}
		if cols[1] != "" {
			tsharkPerf += len(strings.Split(cols[1], ","))
		}
		if cols[2] != "" {
			malformed++
		}
	}
	ours := 0
	for _, rec := range loadProtonRecordings(t) {
		d := New(&decode.Conn{ID: 1}, nil, func(u *decode.Unit) {
			if u.Err() != "" {
				t.Errorf("%s: %s", u.Summary, u.Err())
			}
			if u.Type != "protocol-header" && u.Type != "empty" {
				ours++
			}
		})
		for _, c := range rec.chunks {
			d.Feed(c.dir, c.data, time.Time{})
		}
	}
	t.Logf("tshark: %d performatives, %d malformed packets; wiretap: %d performatives, no errors", tsharkPerf, malformed, ours)
	if malformed == 0 && tsharkPerf != ours {
		t.Errorf("tshark sees %d performatives, wiretap %d", tsharkPerf, ours)
	}
	if tsharkPerf > ours {
		t.Errorf("tshark sees more performatives (%d) than wiretap (%d)", tsharkPerf, ours)
	}
}
