package pcapng_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
)

// The writers were gopacket's pcapgo.NgWriter and pcapgo.Writer, set up as
// below; wiretap's own encoders must write the same bytes for the same
// calls. refNg and refPcap are the former Writer and PcapWriter, as they
// were, minus their error messages.

type refNg struct {
	w      io.Writer
	ng     *pcapgo.NgWriter
	ifaces map[layers.LinkType]int
}

func newRefNg(w io.Writer) *refNg {
	return &refNg{w: w, ifaces: map[layers.LinkType]int{}}
}

func (w *refNg) iface(link layers.LinkType) (int, error) {
	if id, ok := w.ifaces[link]; ok {
		return id, nil
	}
	intf := pcapgo.NgInterface{
		Name:                "wiretap" + strconv.Itoa(len(w.ifaces)),
		OS:                  runtime.GOOS,
		LinkType:            link,
		TimestampResolution: 9,
	}
	var id int
	var err error
	if w.ng == nil {
		w.ng, err = pcapgo.NewNgWriterInterface(w.w, intf, pcapgo.NgWriterOptions{
			SectionInfo: pcapgo.NgSectionInfo{OS: runtime.GOOS, Application: "wiretap"},
		})
	} else {
		id, err = w.ng.AddInterface(intf)
	}
	if err != nil {
		return 0, err
	}
	w.ifaces[link] = id
	return id, nil
}

func (w *refNg) WritePacket(p *capture.Packet) error {
	id, err := w.iface(layers.LinkType(p.Link))
	if err != nil {
		return err
	}
	ci := gopacket.CaptureInfo{Timestamp: p.Time, CaptureLength: len(p.Data), Length: max(p.Length, len(p.Data)), InterfaceIndex: id}
	return w.ng.WritePacket(ci, p.Data)
}

func (w *refNg) Begin(link capture.LinkType) error {
	_, err := w.iface(layers.LinkType(link))
	return err
}

func (w *refNg) Flush() error {
	if w.ng == nil {
		return nil
	}
	return w.ng.Flush()
}

func (w *refNg) Close() error {
	if w.ng == nil {
		if err := w.Begin(capture.LinkTypeEthernet); err != nil {
			return err
		}
	}
	return w.Flush()
}

type refPcap struct {
	w      *pcapgo.Writer
	link   layers.LinkType
	header bool
}

func newRefPcap(w io.Writer) *refPcap { return &refPcap{w: pcapgo.NewWriterNanos(w)} }

func (w *refPcap) WritePacket(p *capture.Packet) error {
	if !w.header {
		w.header, w.link = true, layers.LinkType(p.Link)
		if err := w.w.WriteFileHeader(262144, w.link); err != nil {
			return err
		}
	}
	if layers.LinkType(p.Link) != w.link {
		return errors.New("mixed link types")
	}
	ci := gopacket.CaptureInfo{Timestamp: p.Time, CaptureLength: len(p.Data), Length: max(p.Length, len(p.Data))}
	return w.w.WritePacket(ci, p.Data)
}

func (w *refPcap) Close() error {
	if !w.header {
		w.header = true
		return w.w.WriteFileHeader(262144, layers.LinkTypeEthernet)
	}
	return nil
}

// payload returns n bytes that differ from one packet to the next.
func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// testPackets are packets of one link type: every padding (0 to 3 bytes),
// none at all, several times the 4 KiB the pcapng writer buffers, more
// than 64 KiB; times with nanoseconds; lengths on the wire above the
// captured length, below it (raised), zero.
func testPackets(link capture.LinkType, base time.Time) []capture.Packet {
	var ps []capture.Packet
	for i, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 60, 1514, 4093, 4096, 9001, 70001} {
		p := capture.Packet{
			Link: link,
			Time: base.Add(time.Duration(i)*time.Second + time.Duration(i*123457)),
			Data: payload(n, byte(link)+byte(i)),
		}
		switch i % 3 {
		case 0:
			p.Length = n // as captured
		case 1:
			p.Length = n + 1 + i*1000 // truncated capture
		case 2:
			p.Length = n / 2 // raised to n
		}
		ps = append(ps, p)
	}
	return ps
}

var testLinks = []capture.LinkType{
	capture.LinkTypeEthernet, capture.LinkTypeRaw, capture.LinkTypeLinuxSLL, capture.LinkTypeNull,
	276, // LINKTYPE_LINUX_SLL2
	0xffff,
}

var testBase = time.Date(2024, 2, 29, 23, 59, 58, 999_999_990, time.UTC)

// ngWriter is what Writer and refNg share.
type ngWriter interface {
	WritePacket(p *capture.Packet) error
	Begin(link capture.LinkType) error
	Flush() error
	Close() error
}

// ngScript is a sequence of calls on a pcapng writer.
type ngScript struct {
	name string
	run  func(w ngWriter) ([]capture.Packet, error)
}

func writeAll(w ngWriter, ps []capture.Packet) error {
	for i := range ps {
		if err := w.WritePacket(&ps[i]); err != nil {
			return err
		}
	}
	return nil
}

var ngScripts = []ngScript{
	{"empty", func(w ngWriter) ([]capture.Packet, error) { return nil, w.Close() }},
	{"begin only", func(w ngWriter) ([]capture.Packet, error) {
		if err := w.Begin(capture.LinkTypeEthernet); err != nil {
			return nil, err
		}
		return nil, w.Close()
	}},
	{"begin raw", func(w ngWriter) ([]capture.Packet, error) {
		if err := w.Begin(capture.LinkTypeRaw); err != nil {
			return nil, err
		}
		return nil, w.Close()
	}},
	{"one link type", func(w ngWriter) ([]capture.Packet, error) {
		ps := testPackets(capture.LinkTypeEthernet, testBase)
		if err := writeAll(w, ps); err != nil {
			return nil, err
		}
		return ps, w.Close()
	}},
	{"link types in turn", func(w ngWriter) ([]capture.Packet, error) {
		var ps []capture.Packet
		for i, link := range testLinks {
			ps = append(ps, testPackets(link, testBase.Add(time.Duration(i)*time.Hour))...)
		}
		if err := writeAll(w, ps); err != nil {
			return nil, err
		}
		return ps, w.Close()
	}},
	{"link types interleaved, Begin and Flush between", func(w ngWriter) ([]capture.Packet, error) {
		if err := w.Begin(capture.LinkTypeLinuxSLL); err != nil {
			return nil, err
		}
		if err := w.Begin(capture.LinkTypeLinuxSLL); err != nil {
			return nil, err
		}
		var ps []capture.Packet
		for i := range 40 {
			link := testLinks[i%len(testLinks)]
			ps = append(ps, capture.Packet{
				Link:   link,
				Time:   testBase.Add(time.Duration(i) * 1001 * time.Nanosecond),
				Data:   payload(i*37%11, byte(i)),
				Length: i,
			})
		}
		for i := range ps {
			if err := w.WritePacket(&ps[i]); err != nil {
				return nil, err
			}
			if i%7 == 3 {
				if err := w.Flush(); err != nil {
					return nil, err
				}
			}
			if i == 20 {
				if err := w.Begin(capture.LinkTypeRaw); err != nil { // already known
					return nil, err
				}
				if err := w.Begin(99); err != nil { // new: an interface with no packets
					return nil, err
				}
			}
		}
		return ps, w.Close()
	}},
	{"odd times", func(w ngWriter) ([]capture.Packet, error) {
		ps := []capture.Packet{
			{Link: capture.LinkTypeEthernet, Time: time.Unix(0, 0), Data: []byte{1}},
			{Link: capture.LinkTypeEthernet, Time: time.Unix(0, 1), Data: []byte{2, 3}},
			{Link: capture.LinkTypeEthernet, Time: time.Unix(1<<32, 5), Data: []byte{4, 5, 6}},    // past 2106
			{Link: capture.LinkTypeEthernet, Time: time.Unix(-86400, 999999999), Data: []byte{7}}, // before 1970
			{Link: capture.LinkTypeEthernet, Time: time.Unix(1700000000, 123456789).In(time.FixedZone("x", 3600)), Data: []byte{8}},
			{Link: capture.LinkTypeEthernet, Data: []byte{9}}, // the zero time
		}
		if err := writeAll(w, ps); err != nil {
			return nil, err
		}
		return ps, w.Close()
	}},
}

// TestWriterBytes checks that Writer writes what pcapgo.NgWriter wrote, and
// that pcapgo reads it back.
func TestWriterBytes(t *testing.T) {
	for _, sc := range ngScripts {
		t.Run(sc.name, func(t *testing.T) {
			var got, want bytes.Buffer
			ps, err := sc.run(pcapng.NewWriter(&got))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sc.run(newRefNg(&want)); err != nil {
				t.Fatalf("pcapgo: %v", err)
			}
			if err := firstDiff(got.Bytes(), want.Bytes()); err != nil {
				t.Fatal(err)
			}
			checkNgReadBack(t, got.Bytes(), ps)
		})
	}
}

// firstDiff describes where a and b differ.
func firstDiff(got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	return fmt.Errorf("%d bytes written, want %d; first difference at offset %d:\n got  % x\n want % x",
		len(got), len(want), i, got[i:min(i+16, len(got))], want[i:min(i+16, len(want))])
}

func checkNgReadBack(t *testing.T, file []byte, ps []capture.Packet) {
	t.Helper()
	r, err := pcapgo.NewNgReader(bytes.NewReader(file), pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		t.Fatal(err)
	}
	if si := r.SectionInfo(); si.Application != "wiretap" || si.OS != runtime.GOOS {
		t.Errorf("section %+v", si)
	}
	for i, p := range ps {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if got := capture.LinkType(ci.AncillaryData[0].(layers.LinkType)); got != p.Link {
			t.Errorf("packet %d: link type %d, want %d", i, got, p.Link)
		}
		intf, err := r.Interface(ci.InterfaceIndex)
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		if capture.LinkType(intf.LinkType) != p.Link || intf.OS != runtime.GOOS ||
			intf.Name != "wiretap"+strconv.Itoa(ci.InterfaceIndex) || intf.TimestampResolution != 9 {
			t.Errorf("packet %d: interface %+v", i, intf)
		}
		checkRecord(t, i, p, data, ci)
	}
	if _, _, err := r.ReadPacketData(); err != io.EOF {
		t.Errorf("after the packets: %v, want EOF", err)
	}
}

func checkRecord(t *testing.T, i int, p capture.Packet, data []byte, ci gopacket.CaptureInfo) {
	t.Helper()
	if !bytes.Equal(data, p.Data) {
		t.Errorf("packet %d: %d bytes read back, want %d (or others)", i, len(data), len(p.Data))
	}
	if ci.CaptureLength != len(p.Data) || ci.Length != max(p.Length, len(p.Data)) {
		t.Errorf("packet %d: lengths %d/%d, want %d/%d", i, ci.CaptureLength, ci.Length, len(p.Data), max(p.Length, len(p.Data)))
	}
	// The readers take the time as unsigned.
	if p.Time.Unix() >= 0 && p.Time.Unix() < 1<<32 && !ci.Timestamp.Equal(p.Time) {
		t.Errorf("packet %d: time %v, want %v", i, ci.Timestamp, p.Time)
	}
}

// TestPcapWriterBytes checks that PcapWriter writes what pcapgo.Writer
// (NewWriterNanos) wrote, for a file of each link type, and that pcapgo
// reads it back.
func TestPcapWriterBytes(t *testing.T) {
	scripts := map[string][]capture.Packet{"empty": nil}
	for i, link := range testLinks {
		scripts[fmt.Sprint("link type ", link)] = testPackets(link, testBase.Add(time.Duration(i)*time.Hour))
	}
	scripts["odd times"] = []capture.Packet{
		{Link: capture.LinkTypeRaw, Time: time.Unix(0, 0), Data: []byte{1}},
		{Link: capture.LinkTypeRaw, Time: time.Unix(0, 999999999), Data: []byte{2, 3}},
		{Link: capture.LinkTypeRaw, Time: time.Unix(1<<32+3, 5), Data: []byte{4, 5, 6}}, // past 2106
		{Link: capture.LinkTypeRaw, Time: time.Unix(-86400, 1), Data: []byte{7}},        // before 1970
		{Link: capture.LinkTypeRaw, Time: time.Unix(1700000000, 123456789).In(time.FixedZone("x", -7200)), Data: []byte{8}},
	}
	for name, ps := range scripts {
		t.Run(name, func(t *testing.T) {
			var got, want bytes.Buffer
			w, ref := pcapng.NewPcapWriter(&got), newRefPcap(&want)
			for i := range ps {
				if err := w.WritePacket(&ps[i]); err != nil {
					t.Fatal(err)
				}
				if err := ref.WritePacket(&ps[i]); err != nil {
					t.Fatalf("pcapgo: %v", err)
				}
			}
			if len(ps) > 0 {
				// Another link type is refused, and writes nothing.
				other := capture.Packet{Link: ps[0].Link + 1, Time: testBase, Data: []byte{1, 2}}
				if err := w.WritePacket(&other); err == nil || !strings.HasPrefix(err.Error(), "pcap: ") {
					t.Errorf("a second link type: error %v", err)
				}
				ref.WritePacket(&other)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ref.Close(); err != nil {
				t.Fatal(err)
			}
			if err := firstDiff(got.Bytes(), want.Bytes()); err != nil {
				t.Fatal(err)
			}

			r, err := pcapgo.NewReader(bytes.NewReader(got.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			wantLink := capture.LinkTypeEthernet
			if len(ps) > 0 {
				wantLink = ps[0].Link
			}
			if capture.LinkType(r.LinkType()) != wantLink || r.Snaplen() != 262144 || r.Resolution().ToDuration() != time.Nanosecond {
				t.Errorf("file header: link type %d, snap length %d, resolution %v", r.LinkType(), r.Snaplen(), r.Resolution())
			}
			for i, p := range ps {
				data, ci, err := r.ReadPacketData()
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				checkRecord(t, i, p, data, ci)
			}
			if _, _, err := r.ReadPacketData(); err != io.EOF {
				t.Errorf("after the packets: %v, want EOF", err)
			}
		})
	}
}

// TestPcapWriterZeroTime: a packet without a time is written with the
// current one, as pcapgo did.
func TestPcapWriterZeroTime(t *testing.T) {
	var buf bytes.Buffer
	w := pcapng.NewPcapWriter(&buf)
	before := time.Now().Unix()
	if err := w.WritePacket(&capture.Packet{Link: capture.LinkTypeEthernet, Data: []byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	b := buf.Bytes()
	if len(b) != 24+16+3 {
		t.Fatalf("%d bytes written", len(b))
	}
	if s := int64(binary.LittleEndian.Uint32(b[24:])); s < before || s > after {
		t.Errorf("time %d, want within [%d, %d]", s, before, after)
	}
	if ns := binary.LittleEndian.Uint32(b[28:]); ns >= 1e9 {
		t.Errorf("nanoseconds %d", ns)
	}
}

// TestWriterHeaderBytes pins the start of a pcapng file to the format
// itself, in case pcapgo and the writer ever agree on something wrong.
func TestWriterHeaderBytes(t *testing.T) {
	var buf bytes.Buffer
	w := pcapng.NewWriter(&buf)
	p := capture.Packet{Link: capture.LinkTypeRaw, Time: time.Unix(1, 2), Data: []byte{0xaa}, Length: 9}
	if err := w.WritePacket(&p); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	b := buf.Bytes()
	pad := func(s string) int { return 4 + (len(s)+3)&^3 }
	shbLen := 28 + pad("wiretap") + pad(runtime.GOOS) + 4
	idbLen := 20 + pad("wiretap0") + pad(runtime.GOOS) + 8 + 4
	if len(b) != shbLen+idbLen+36 {
		t.Fatalf("%d bytes, want %d", len(b), shbLen+idbLen+36)
	}
	shb, idb, epb := b[:shbLen], b[shbLen:shbLen+idbLen], b[shbLen+idbLen:]
	if le.Uint32(shb) != 0x0A0D0D0A || le.Uint32(shb[4:]) != uint32(shbLen) || le.Uint32(shb[8:]) != 0x1A2B3C4D ||
		le.Uint16(shb[12:]) != 1 || le.Uint16(shb[14:]) != 0 || le.Uint64(shb[16:]) != ^uint64(0) ||
		le.Uint16(shb[24:]) != 4 || string(shb[28:35]) != "wiretap" || le.Uint32(shb[shbLen-4:]) != uint32(shbLen) {
		t.Errorf("section header % x", shb)
	}
	if le.Uint32(idb) != 1 || le.Uint32(idb[4:]) != uint32(idbLen) || le.Uint16(idb[8:]) != 101 || le.Uint32(idb[12:]) != 0 ||
		le.Uint16(idb[16:]) != 2 || string(idb[20:28]) != "wiretap0" ||
		!bytes.Equal(idb[idbLen-16:], []byte{9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0, byte(idbLen), 0, 0, 0}) {
		t.Errorf("interface % x", idb)
	}
	wantEPB := []byte{
		6, 0, 0, 0, 36, 0, 0, 0, // type, length
		0, 0, 0, 0, // interface
		0, 0, 0, 0, 0x02, 0xca, 0x9a, 0x3b, // 1_000_000_002 ns: high, low
		1, 0, 0, 0, 9, 0, 0, 0, // captured, original length
		0xaa, 0, 0, 0, // data, padding
		36, 0, 0, 0,
	}
	if !bytes.Equal(epb, wantEPB) {
		t.Errorf("enhanced packet\n got  % x\n want % x", epb, wantEPB)
	}
}

// failWriter fails once n bytes have been written.
type failWriter struct{ n int }

var errFail = errors.New("disk full")

func (f *failWriter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		k := f.n
		f.n = 0
		return k, errFail
	}
	f.n -= len(b)
	return len(b), nil
}

// TestWriterErrors: a failed write is reported, prefixed, with the cause,
// and again by every later call, wherever it happens.
func TestWriterErrors(t *testing.T) {
	ps := testPackets(capture.LinkTypeEthernet, testBase)
	for _, n := range []int{0, 1, 100, 5000, 20000, 80000} {
		w := pcapng.NewWriter(&failWriter{n: n})
		var err error
		for i := range ps {
			if err = w.WritePacket(&ps[i]); err != nil {
				break
			}
		}
		if err == nil {
			err = w.Close()
		}
		if !errors.Is(err, errFail) || !strings.HasPrefix(err.Error(), "pcapng: ") {
			t.Errorf("failing after %d bytes: error %v", n, err)
		}
		if err2 := w.WritePacket(&ps[0]); !errors.Is(err2, errFail) {
			t.Errorf("failing after %d bytes: then %v", n, err2)
		}
		if err2 := w.Close(); !errors.Is(err2, errFail) {
			t.Errorf("failing after %d bytes: then Close %v", n, err2)
		}

		pw := pcapng.NewPcapWriter(&failWriter{n: n})
		err = nil
		for i := range ps {
			if err = pw.WritePacket(&ps[i]); err != nil {
				break
			}
		}
		if err == nil {
			err = pw.Close()
		}
		if n < 24+16*len(ps)+len(bytes.Join(dataOf(ps), nil)) {
			if !errors.Is(err, errFail) || !strings.HasPrefix(err.Error(), "pcap: ") {
				t.Errorf("pcap failing after %d bytes: error %v", n, err)
			}
			if err2 := pw.WritePacket(&ps[0]); !errors.Is(err2, errFail) {
				t.Errorf("pcap failing after %d bytes: then %v", n, err2)
			}
		}
	}
}

func dataOf(ps []capture.Packet) [][]byte {
	var d [][]byte
	for _, p := range ps {
		d = append(d, p.Data)
	}
	return d
}

// TestWriterAllocs: writing a packet of a known link type allocates
// nothing.
func TestWriterAllocs(t *testing.T) {
	w := pcapng.NewWriter(io.Discard)
	pw := pcapng.NewPcapWriter(io.Discard)
	p := capture.Packet{Link: capture.LinkTypeEthernet, Time: testBase, Data: payload(61, 0), Length: 70}
	w.WritePacket(&p)
	pw.WritePacket(&p)
	if n := testing.AllocsPerRun(100, func() { w.WritePacket(&p) }); n != 0 {
		t.Errorf("Writer: %v allocations a packet", n)
	}
	if n := testing.AllocsPerRun(100, func() { pw.WritePacket(&p) }); n != 0 {
		t.Errorf("PcapWriter: %v allocations a packet", n)
	}
}
