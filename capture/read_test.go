package capture_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// conversation is a short exchange with the handshake, out-of-order data
// and a FIN each way.
func conversation(c, s string) []tcp {
	return []tcp{
		{src: c, dst: s, seq: 100, flags: syn},
		{src: s, dst: c, seq: 500, ack: 101, flags: syn | ack},
		{src: c, dst: s, seq: 101, ack: 501, flags: ack},
		{src: c, dst: s, seq: 101, ack: 501, flags: ack | psh, payload: "AMQP\x00\x00\x09\x01"},
		{src: s, dst: c, seq: 505, ack: 109, flags: ack | psh, payload: "5678"},
		{src: s, dst: c, seq: 501, ack: 109, flags: ack | psh, payload: "1234"},
		{src: c, dst: s, seq: 109, ack: 509, flags: ack | fin},
		{src: s, dst: c, seq: 509, ack: 110, flags: ack | fin},
		{src: c, dst: s, seq: 110, ack: 510, flags: ack},
	}
}

const conversationLog = `data 1 true "AMQP\x00\x00\t\x01"
data 1 false "1234"
data 1 false "5678"
close 1
`

func readBytes(t *testing.T, b []byte, opt *capture.Options) (*recorder, *capture.Stats) {
	t.Helper()
	r := newRecorder()
	stats, err := capture.Read(bytes.NewReader(b), "test", r, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r, stats
}

func TestReadLinkTypes(t *testing.T) {
	tests := []struct {
		name  string
		link  uint32 // in the file header
		frame uint16 // how to frame each packet (see frame)
		vlans int
		v6    bool
	}{
		{name: "ethernet", link: 1, frame: 1},
		{name: "ethernet ipv6", link: 1, frame: 1, v6: true},
		{name: "802.1Q", link: 1, frame: 1, vlans: 1},
		{name: "QinQ", link: 1, frame: 1, vlans: 2, v6: true},
		{name: "linux SLL", link: 113, frame: 113},
		{name: "linux SLL2", link: 276, frame: 276, v6: true},
		{name: "NULL little endian", link: 0, frame: 0, v6: true},
		{name: "NULL big endian", link: 0, frame: 0x8000},
		{name: "LOOP", link: 108, frame: 108, v6: true},
		{name: "raw 101", link: 101, frame: 101},
		{name: "raw 12", link: 12, frame: 101, v6: true},
		{name: "raw 14", link: 14, frame: 101},
		{name: "IPV4", link: 228, frame: 101},
		{name: "IPV6", link: 229, frame: 101, v6: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, s := cli, srv
			if tt.v6 {
				c, s = "[2001:db8::1]:40000", "[2001:db8::2]:5672"
			}
			var recs []record
			t0 := time.Unix(1700000000, 123456000)
			for i, seg := range conversation(c, s) {
				ext := 0
				if tt.v6 {
					ext = i % 3 // some packets with extension headers
				}
				recs = append(recs, record{t: t0.Add(time.Duration(i) * time.Second), data: frame(tt.frame, seg.ip(ext), tt.vlans)})
			}
			for _, order := range []byteOrder{binary.LittleEndian, binary.BigEndian} {
				for _, nano := range []bool{false, true} {
					r, stats := readBytes(t, pcapFile(order, nano, tt.link, recs), nil)
					if got := r.log.String(); got != conversationLog {
						t.Errorf("%v nano=%v: got\n%s", order, nano, got)
					}
					if stats.TCP != 9 || stats.Skipped != 0 || stats.Truncated {
						t.Errorf("stats %+v", stats)
					}
					if f := r.flows[1]; f.A.String() != c || !f.SYN || !f.First.Equal(t0) {
						t.Errorf("flow %+v", f)
					}
				}
			}
			ng := ngSection(binary.LittleEndian, []ngIface{{link: uint16(tt.link)}}, recs)
			if r, _ := readBytes(t, ng, nil); r.log.String() != conversationLog {
				t.Errorf("pcapng: got\n%s", r.log.String())
			}
		})
	}
}

// TestReadPcapngInterfaces reads a file of two sections in opposite byte
// orders, each with interfaces of different link types and timestamp
// resolutions, the packets of two connections spread over them.
func TestReadPcapngInterfaces(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	segs1 := conversation(cli, srv)
	segs2 := conversation("[2001:db8::1]:40000", "[2001:db8::2]:5432")
	ifaces := []ngIface{{link: 1}, {link: 276, tsresol: 9}, {link: 101, tsresol: 0x80 | 20}}
	var sec1, sec2 []record
	for i := range segs1 {
		tm := t0.Add(time.Duration(i) * 250 * time.Millisecond)
		link := []uint16{1, 276, 101}[i%3]
		sec1 = append(sec1, record{t: tm, iface: i % 3, data: frame(link, segs1[i].ip(0), 0)})
		sec2 = append(sec2, record{t: tm.Add(time.Hour), iface: (i + 1) % 3, data: frame([]uint16{1, 276, 101}[(i+1)%3], segs2[i].ip(1), 0)})
	}
	file := append(ngSection(binary.LittleEndian, ifaces, sec1), ngSection(binary.BigEndian, ifaces, sec2)...)
	r, stats := readBytes(t, file, nil)
	want := conversationLog + strings.NewReplacer(" 1 ", " 2 ", "close 1", "close 2").Replace(conversationLog)
	if got := r.log.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if stats.Packets != 18 || stats.TCP != 18 {
		t.Errorf("stats %+v", stats)
	}
	// Timestamps survive each interface's resolution (2^-20 s is within a
	// microsecond).
	if got := r.flows[2].First; got.Sub(t0.Add(time.Hour)).Abs() > time.Microsecond {
		t.Errorf("flow 2 First = %v, want %v", got, t0.Add(time.Hour))
	}
}

func TestReadTruncated(t *testing.T) {
	var recs []record
	for i, seg := range conversation(cli, srv) {
		recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(1, seg.ip(0), 0)})
	}
	for _, format := range []string{"pcap", "pcapng"} {
		var file []byte
		if format == "pcap" {
			file = pcapFile(binary.LittleEndian, false, 1, recs[:6])
		} else {
			file = ngSection(binary.LittleEndian, []ngIface{{link: 1}}, recs[:6])
		}
		// Cut inside the last record: the server's "1234".
		file = file[:len(file)-6]
		r, stats := readBytes(t, file, nil)
		if !stats.Truncated || len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "test: cut short after 5 packets") {
			t.Errorf("%s: stats %+v", format, stats)
		}
		want := "data 1 true \"AMQP\\x00\\x00\\t\\x01\"\ngap 1 false 4\ndata 1 false \"5678\"\nclose 1\n"
		if got := r.log.String(); got != want {
			t.Errorf("%s: got\n%s\nwant\n%s", format, got, want)
		}
	}
}

func TestReadNotCapture(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":     "",
		"text.txt":  "hello, this is not a capture\n",
		"short":     "\xd4\xc3",
		"badgzip":   "\x1f\x8b\x08garbage",
		"badpcapng": "\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x00\x00\x00\x00",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := capture.ReadFile(path, newRecorder(), nil)
		if !errors.Is(err, capture.ErrNotCapture) {
			t.Errorf("%s: err = %v, want ErrNotCapture", name, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "capture: "+path+": not a pcap or pcapng file") || strings.Contains(msg, "\n") {
			t.Errorf("%s: message %q", name, msg)
		}
	}
	if _, err := capture.ReadFile(filepath.Join(dir, "missing.pcap"), newRecorder(), nil); err == nil || errors.Is(err, capture.ErrNotCapture) {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestReadProgressAndTap(t *testing.T) {
	var recs []record
	for i, seg := range conversation(cli, srv) {
		recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(1, seg.ip(0), 0)})
	}
	file := pcapFile(binary.LittleEndian, true, 1, recs)
	path := filepath.Join(t.TempDir(), "x.pcap")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	var lastRead, lastTotal int64
	var tapped int
	opt := &capture.Options{
		Progress: func(read, total int64) { lastRead, lastTotal = read, total },
		Tap: func(p *capture.Packet) {
			if !bytes.Equal(p.Data, recs[tapped].data) || !p.Time.Equal(recs[tapped].t) {
				t.Errorf("tap %d: %x at %v", tapped, p.Data, p.Time)
			}
			tapped++
		},
	}
	if _, err := capture.ReadFile(path, newRecorder(), opt); err != nil {
		t.Fatal(err)
	}
	if lastRead != int64(len(file)) || lastTotal != int64(len(file)) || tapped != len(recs) {
		t.Errorf("progress %d/%d of %d, tapped %d", lastRead, lastTotal, len(file), tapped)
	}
}

// fragments splits an IPv4 packet into fragments of at most size payload
// bytes (a multiple of 8).
func fragments(ip []byte, size int) [][]byte {
	hdr, payload := ip[:20], ip[20:]
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		f := append(bytes.Clone(hdr), payload[off:end]...)
		binary.BigEndian.PutUint16(f[2:], uint16(len(f)))
		ff := uint16(off / 8)
		if end < len(payload) {
			ff |= 0x2000 // more fragments
		}
		binary.BigEndian.PutUint16(f[6:], ff)
		binary.BigEndian.PutUint16(f[4:], 77) // identification
		out = append(out, f)
	}
	return out
}

func TestReadIPv4Fragments(t *testing.T) {
	segs := conversation(cli, srv)
	segs[3].payload = strings.Repeat("0123456789", 30)
	for i := 4; i < len(segs); i++ {
		if segs[i].src == cli {
			segs[i].seq += uint32(len(segs[3].payload) - 8)
		}
	}
	var recs []record
	for i, s := range segs {
		ip := s.ip(0)
		if i != 3 {
			recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(1, ip, 0)})
			continue
		}
		fr := fragments(ip, 64)
		// Out of order, one of them twice.
		for _, j := range []int{2, 0, 4, 1, 2, 3} {
			recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(1, fr[j], 0)})
		}
	}
	r, stats := readBytes(t, pcapFile(binary.LittleEndian, false, 1, recs), nil)
	if stats.Fragments != 6 {
		t.Errorf("stats %+v", stats)
	}
	if got := r.stream[1][0].String(); got != segs[3].payload {
		t.Errorf("client sent %q", got)
	}
	if got := r.stream[1][1].String(); got != "12345678" || r.closed[1] != 1 {
		t.Errorf("server sent %q; closed %d", got, r.closed[1])
	}
	// A fragment whose datagram never completes is dropped.
	frag := fragments(segs[3].ip(0), 64)[0]
	_, stats = readBytes(t, pcapFile(binary.LittleEndian, false, 1, []record{{data: frame(1, frag, 0)}}), nil)
	if stats.Fragments != 1 || stats.TCP != 0 {
		t.Errorf("stats %+v", stats)
	}
}

func TestReadGzip(t *testing.T) {
	var recs []record
	for i, seg := range conversation(cli, srv) {
		recs = append(recs, record{t: time.Unix(int64(i), 0), data: frame(1, seg.ip(0), 0)})
	}
	for _, file := range [][]byte{
		pcapFile(binary.BigEndian, false, 1, recs),
		ngSection(binary.LittleEndian, []ngIface{{link: 1}}, recs),
	} {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(file)
		zw.Close()
		// Both handlers of a MultiHandler see the same calls.
		r1, r2 := newRecorder(), newRecorder()
		if _, err := capture.Read(&z, "gz", capture.MultiHandler(r1, r2), nil); err != nil {
			t.Fatal(err)
		}
		if r1.log.String() != conversationLog || r2.log.String() != conversationLog {
			t.Errorf("got\n%s\n%s", r1.log.String(), r2.log.String())
		}
	}
}

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../testdata/amqp091-pika.pcap")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"a.pcap", good, true},
		{"a.pcap.gz", gz.Bytes(), true},
		{"notes.txt", []byte("not a capture at all\n"), false},
		{"empty", nil, false},
	} {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, tc.data, 0o644)
		err := capture.Probe(p)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, capture.ErrNotCapture)) {
			t.Errorf("%s: Probe = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	if err := capture.Probe(filepath.Join(dir, "missing")); err == nil || errors.Is(err, capture.ErrNotCapture) {
		t.Errorf("missing file: %v", err)
	}
}
