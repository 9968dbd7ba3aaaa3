package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// pcapMem reads pcap records (draft-ietf-opsawg-pcap section 5) from a
// file mapped in memory, returning each packet's bytes as a slice of the
// mapping instead of a copy. It gives the errors gopacket's pcapgo.Reader
// gives for the same bytes, so a file reads the same either way
// (TestPcapMemAgreesWithPcapgo).
type pcapMem struct {
	mem     []byte
	off     int
	order   binary.ByteOrder
	factor  uint32 // nanoseconds per timestamp fraction unit
	snaplen uint32
	link    layers.LinkType
}

// pcap file format versions read, as pcapgo reads them.
const (
	pcapVersionMajor = 2
	pcapVersionMinor = 4
	// pcapEagerMax is pcapgo's eagerReadMax, libpcap's MAXIMUM_SNAPLEN:
	// a record up to it is taken whatever the file's snap length.
	pcapEagerMax = 262144
)

// newPcapMem reads the file header; mem starts with a pcap magic number.
func newPcapMem(mem []byte) (*pcapMem, error) {
	if len(mem) < 24 {
		return nil, io.ErrUnexpectedEOF
	}
	r := &pcapMem{mem: mem, off: 24}
	switch magic := binary.LittleEndian.Uint32(mem[0:4]); magic {
	case magicPcapNano:
		r.order, r.factor = binary.LittleEndian, 1
	case 0x4d3cb2a1:
		r.order, r.factor = binary.BigEndian, 1
	case magicPcapMicro:
		r.order, r.factor = binary.LittleEndian, 1000
	case 0xd4c3b2a1:
		r.order, r.factor = binary.BigEndian, 1000
	default:
		return nil, errors.New("Unknown magic " + strconv.FormatUint(uint64(magic), 16))
	}
	if v := r.order.Uint16(mem[4:6]); v != pcapVersionMajor {
		return nil, errors.New("Unknown major version " + strconv.Itoa(int(v)))
	}
	if v := r.order.Uint16(mem[6:8]); v != pcapVersionMinor {
		return nil, errors.New("Unknown minor version " + strconv.Itoa(int(v)))
	}
	r.snaplen = r.order.Uint32(mem[16:20])
	r.link = layers.LinkType(r.order.Uint32(mem[20:24]))
	return r, nil
}

// next returns the next record's packet bytes (a slice of the mapping,
// its capacity cut to its length) and its times and lengths. A file that
// ends between records is io.EOF; one that ends inside a record header is
// io.ErrUnexpectedEOF, and so is one that ends inside a record's bytes,
// unless none of them is there (io.EOF, as io.ReadFull says in pcapgo).
func (r *pcapMem) next() (data []byte, t time.Time, caplen, length int, err error) {
	rest := r.mem[r.off:]
	if len(rest) == 0 {
		return nil, time.Time{}, 0, 0, io.EOF
	}
	if len(rest) < 16 {
		r.off = len(r.mem)
		return nil, time.Time{}, 0, 0, io.ErrUnexpectedEOF
	}
	h := rest[:16]
	// The fraction is multiplied in 32 bits, as pcapgo does.
	t = time.Unix(int64(r.order.Uint32(h[0:4])), int64(r.order.Uint32(h[4:8])*r.factor)).UTC()
	caplen, length = int(r.order.Uint32(h[8:12])), int(r.order.Uint32(h[12:16]))
	r.off += 16
	maxCap := pcapEagerMax
	if r.snaplen > pcapEagerMax {
		maxCap = int(r.snaplen)
	}
	if caplen > maxCap {
		return nil, t, caplen, length, errors.New("capture length exceeds snap length: " + strconv.Itoa(caplen) + " > " + strconv.FormatUint(uint64(r.snaplen), 10))
	}
	if caplen > length {
		return nil, t, caplen, length, errors.New("capture length exceeds original packet length: " + strconv.Itoa(caplen) + " > " + strconv.Itoa(length))
	}
	rest = rest[16:]
	switch {
	case caplen == 0:
	case len(rest) == 0:
		return nil, t, caplen, length, io.EOF
	case len(rest) < caplen:
		r.off = len(r.mem)
		return nil, t, caplen, length, io.ErrUnexpectedEOF
	}
	r.off += caplen
	return rest[:caplen:caplen], t, caplen, length, nil
}
