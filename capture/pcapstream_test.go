package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// TestPcapStreamAgreesWithPcapgo reads every shipped pcap file, and
// hand-made ones cut at every length and with bytes changed at random,
// with pcapStream and with gopacket's pcapgo.Reader, which this package
// read streamed pcap files with before: the same link type, the same
// records (bytes, times, lengths) and the same errors, in the same places.
func TestPcapStreamAgreesWithPcapgo(t *testing.T) {
	var files [][]byte
	var names []string
	for _, glob := range []string{"testdata/*.pcap", "../testdata/*.pcap", "../testdata/hostile/*.pcap"} {
		m, _ := filepath.Glob(glob)
		for _, f := range m {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			files, names = append(files, b), append(names, f)
		}
	}
	if len(files) < 5 {
		t.Fatalf("only %d pcap files found", len(files))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, whole := range [][]byte{smallPcap(binary.LittleEndian, false, 1), smallPcap(binary.BigEndian, true, 113)} {
		for n := 0; n <= len(whole); n++ {
			files, names = append(files, whole[:n]), append(names, "cut")
		}
		for range 500 {
			b := bytes.Clone(whole)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = byte(rng.Uint32())
			}
			files, names = append(files, b), append(names, "damaged")
		}
	}
	for i, b := range files {
		comparePcapReaders(t, names[i], b)
	}
}

func comparePcapReaders(t *testing.T, name string, b []byte) {
	t.Helper()
	want, werr := pcapgo.NewReader(bytes.NewReader(b))
	got, gerr := newPcapStream(bytes.NewReader(b))
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%s (%d bytes): header: pcapgo %v, pcapStream %v", name, len(b), werr, gerr)
	}
	if werr != nil {
		return
	}
	if uint16(want.LinkType()) != uint16(got.link) {
		t.Fatalf("%s: link type: pcapgo %d, pcapStream %d", name, want.LinkType(), got.link)
	}
	for k := 0; ; k++ {
		wd, ci, werr := want.ZeroCopyReadPacketData()
		gd, ts, caplen, length, gerr := got.next()
		if (werr == nil) != (gerr == nil) || werr != nil && (werr.Error() != gerr.Error() || errors.Is(werr, io.EOF) != errors.Is(gerr, io.EOF)) {
			t.Fatalf("%s: record %d: pcapgo %v, pcapStream %v", name, k, werr, gerr)
		}
		if werr != nil {
			return
		}
		if !bytes.Equal(wd, gd) || !ci.Timestamp.Equal(ts) || ci.CaptureLength != caplen || ci.Length != length {
			t.Fatalf("%s: record %d: pcapgo %d bytes at %v (%d/%d), pcapStream %d bytes at %v (%d/%d)",
				name, k, len(wd), ci.Timestamp, ci.CaptureLength, ci.Length, len(gd), ts, caplen, length)
		}
	}
}

// smallPcap is a pcap file of a few records of assorted sizes.
func smallPcap(order binary.ByteOrder, nano bool, link uint32) []byte {
	b := make([]byte, 24)
	magic := uint32(magicPcapMicro)
	if nano {
		magic = magicPcapNano
	}
	order.PutUint32(b[0:], magic)
	order.PutUint16(b[4:], 2)
	order.PutUint16(b[6:], 4)
	order.PutUint32(b[16:], 65535)
	order.PutUint32(b[20:], link)
	for i, n := range []int{0, 1, 60, 1514, 7, 300} {
		var h [16]byte
		order.PutUint32(h[0:], uint32(1700000000+i))
		order.PutUint32(h[4:], uint32(i*999))
		order.PutUint32(h[8:], uint32(n))
		order.PutUint32(h[12:], uint32(n+i))
		b = append(b, h[:]...)
		for j := range n {
			b = append(b, byte(i*31+j))
		}
	}
	return b
}
