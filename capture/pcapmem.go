package capture

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"
)

// pcapMem reads pcap records (draft-ietf-opsawg-pcap section 5) from a
// file mapped in memory, returning each packet's bytes as a slice of the
// mapping instead of a copy; pcapStream reads them from a stream (stdin, a
// gzip-compressed file). Both give the errors gopacket's pcapgo.Reader
// gives for the same bytes, which this package read streams with before,
// so a file reads the same either way (TestPcapMemAgreesWithPcapgo).
type pcapMem struct {
	pcapHeader
	mem []byte
	off int
}

// pcapHeader is what a pcap file header says about its records.
type pcapHeader struct {
	order   binary.ByteOrder
	factor  uint32 // nanoseconds per timestamp fraction unit
	snaplen uint32
	link    LinkType
}

// pcap file format versions read, as pcapgo reads them.
const (
	pcapVersionMajor = 2
	pcapVersionMinor = 4
	// pcapEagerMax is pcapgo's eagerReadMax, libpcap's MAXIMUM_SNAPLEN:
	// a record up to it is taken whatever the file's snap length.
	pcapEagerMax = 262144
)

// parse reads the 24-byte file header h.
func (r *pcapHeader) parse(h []byte) error {
	switch magic := binary.LittleEndian.Uint32(h[0:4]); magic {
	case magicPcapNano:
		r.order, r.factor = binary.LittleEndian, 1
	case 0x4d3cb2a1:
		r.order, r.factor = binary.BigEndian, 1
	case magicPcapMicro:
		r.order, r.factor = binary.LittleEndian, 1000
	case 0xd4c3b2a1:
		r.order, r.factor = binary.BigEndian, 1000
	default:
		return errors.New("Unknown magic " + strconv.FormatUint(uint64(magic), 16))
	}
	if v := r.order.Uint16(h[4:6]); v != pcapVersionMajor {
		return errors.New("Unknown major version " + strconv.Itoa(int(v)))
	}
	if v := r.order.Uint16(h[6:8]); v != pcapVersionMinor {
		return errors.New("Unknown minor version " + strconv.Itoa(int(v)))
	}
	r.snaplen = r.order.Uint32(h[16:20])
	r.link = LinkType(r.order.Uint32(h[20:24]))
	return nil
}

// record reads the 16-byte record header h and checks its lengths.
func (r *pcapHeader) record(h []byte) (t time.Time, caplen, length int, err error) {
	// The fraction is multiplied in 32 bits, as pcapgo does.
	t = time.Unix(int64(r.order.Uint32(h[0:4])), int64(r.order.Uint32(h[4:8])*r.factor)).UTC()
	caplen, length = int(r.order.Uint32(h[8:12])), int(r.order.Uint32(h[12:16]))
	maxCap := pcapEagerMax
	if r.snaplen > pcapEagerMax {
		maxCap = int(r.snaplen)
	}
	if caplen > maxCap {
		return t, caplen, length, errors.New("capture length exceeds snap length: " + strconv.Itoa(caplen) + " > " + strconv.FormatUint(uint64(r.snaplen), 10))
	}
	if caplen > length {
		return t, caplen, length, errors.New("capture length exceeds original packet length: " + strconv.Itoa(caplen) + " > " + strconv.Itoa(length))
	}
	return t, caplen, length, nil
}

// newPcapMem reads the file header; mem starts with a pcap magic number.
func newPcapMem(mem []byte) (*pcapMem, error) {
	if len(mem) < 24 {
		return nil, io.ErrUnexpectedEOF
	}
	r := &pcapMem{mem: mem, off: 24}
	if err := r.parse(mem[:24]); err != nil {
		return nil, err
	}
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
	t, caplen, length, err = r.record(rest[:16])
	r.off += 16
	if err != nil {
		return nil, t, caplen, length, err
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

// pcapStream reads pcap records from a stream into a buffer of its own,
// reused: a packet's bytes are valid until the next call.
type pcapStream struct {
	pcapHeader
	r   io.Reader
	hdr [24]byte
	buf []byte
}

// newPcapStream reads the file header from r, which starts with a pcap
// magic number.
func newPcapStream(r io.Reader) (*pcapStream, error) {
	p := &pcapStream{r: r}
	if n, err := io.ReadFull(r, p.hdr[:24]); err != nil {
		if n < 2 {
			err = io.EOF // pcapgo looks at two bytes for gzip's magic first
		}
		return nil, err
	}
	if err := p.parse(p.hdr[:24]); err != nil {
		return nil, err
	}
	return p, nil
}

// next is pcapMem's next over the stream: io.EOF between records (or
// where a record's bytes should begin), io.ErrUnexpectedEOF inside one.
func (p *pcapStream) next() (data []byte, t time.Time, caplen, length int, err error) {
	if _, err = io.ReadFull(p.r, p.hdr[:16]); err != nil {
		return nil, time.Time{}, 0, 0, err
	}
	if t, caplen, length, err = p.record(p.hdr[:16]); err != nil {
		return nil, t, caplen, length, err
	}
	if caplen > pcapEagerMax {
		// A length from the file: the buffer grows with the bytes that
		// come, so a forged one cannot make it allocate gigabytes.
		return p.nextLong(t, caplen, length)
	}
	if cap(p.buf) < caplen {
		p.buf = make([]byte, caplen, max(caplen, 2*cap(p.buf), 4096))
	}
	data = p.buf[:caplen]
	if _, err = io.ReadFull(p.r, data); err != nil {
		return nil, t, caplen, length, err
	}
	return data, t, caplen, length, nil
}

// nextLong reads a record longer than pcapEagerMax a MiB at a time.
func (p *pcapStream) nextLong(t time.Time, caplen, length int) ([]byte, time.Time, int, int, error) {
	data := p.buf[:0]
	for len(data) < caplen {
		n := min(caplen-len(data), 1<<20)
		data = slices.Grow(data, n)
		m, err := io.ReadFull(p.r, data[len(data):len(data)+n])
		data = data[:len(data)+m]
		if err != nil {
			if err == io.EOF && len(data) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, t, caplen, length, err
		}
	}
	if cap(data) <= 16<<20 {
		p.buf = data // kept for the next records; a larger one is not
	}
	return data, t, caplen, length, nil
}
