package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// A pcapng reader of its own (draft-ietf-opsawg-pcapng): gopacket's
// NgReader keeps every interface description block it meets, so a small
// file of a million of them took half a gigabyte, and it reports a block
// whose length field is bogus as a file cut short.

// pcapng block types (draft-ietf-opsawg-pcapng sections 4 and 5).
const (
	ngBlockIDB       = 0x00000001 // interface description
	ngBlockOPB       = 0x00000002 // packet (obsolete, appendix A)
	ngBlockSPB       = 0x00000003 // simple packet
	ngBlockEPB       = 0x00000006 // enhanced packet
	ngBlockISB       = 0x00000005 // interface statistics
	ngBlockSHB       = 0x0a0d0d0a // section header
	ngByteOrderMagic = 0x1a2b3c4d
)

// Interface options read (section 4.2).
const (
	ngOptEnd      = 0
	ngOptTsresol  = 9
	ngOptTsoffset = 14
)

// Interface statistics options read (section 4.6): packets dropped by
// the interface, and by the operating system, since the capture began.
const (
	ngOptISBIfdrop = 5
	ngOptISBOsdrop = 7
)

// MaxInterfaces bounds the interfaces one pcapng section may describe;
// packets of interfaces past it are skipped, with one warning.
const MaxInterfaces = 1 << 16

// maxNgBlock bounds a block's length: Wireshark's limit is 16 MiB of packet
// data; a larger length is taken as bogus rather than read.
const maxNgBlock = 32 << 20

// ngInterface is what a packet needs of its interface.
type ngInterface struct {
	link    LinkType
	snaplen uint32
	// Timestamps count units of 10^-exp seconds, or 2^-exp when binary.
	exp      uint8
	binary   bool
	tsoffset int64 // seconds added to every timestamp
	// dropped is what the interface's last statistics block says was
	// lost before the capture read it (isb_ifdrop plus isb_osdrop): the
	// counters are totals since the capture began, so the last one holds.
	dropped uint64
}

// ngReader reads packet records from a pcapng stream.
type ngReader struct {
	r *bufio.Reader
	// mem, when not nil, is the whole file mapped in memory, read
	// instead of r: blocks are then slices of it, valid as long as it is.
	mem   []byte
	order binary.ByteOrder
	// off is the offset in the stream of the next block.
	off    int64
	ifaces []ngInterface
	// described counts the section's interface blocks, kept or not.
	described int
	// skipSection is set in a section of an unknown major version.
	skipSection bool
	buf         []byte
	warn        func(string)
	warned      bool // about MaxInterfaces
	warnedID    bool // about a packet of an undescribed interface
	// acct and hold charge the interface table to the memory budget
	// (never evicted: every packet needs it); refused says the budget
	// had no room for the next interface, so none after it is kept.
	acct    *decode.Account
	hold    decode.Hold
	refused bool
	// droppedBefore is the dropped counts of the interfaces of the
	// sections before this one.
	droppedBefore uint64
}

// dropped returns the packets the statistics blocks read so far say the
// capturing system lost (see ngInterface.dropped), in all sections.
func (r *ngReader) dropped() uint64 {
	n := r.droppedBefore
	for i := range r.ifaces {
		n = addSaturating(n, r.ifaces[i].dropped)
	}
	return n
}

// addSaturating is a+b, or the largest uint64 where that wraps: a
// file's counters are whatever it says, and a hostile one must not turn
// a huge loss into a small one.
func addSaturating(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// statisticsBlock records an interface statistics block's drop counters.
// A block too short, or of an interface not kept, is passed over: the
// statistics are a report, not a reason to stop reading packets.
func (r *ngReader) statisticsBlock(body []byte) {
	if len(body) < 12 {
		return
	}
	id := int(r.order.Uint32(body[0:4]))
	if id >= len(r.ifaces) {
		return
	}
	var dropped uint64
	for opts := body[12:]; len(opts) >= 4; {
		code, n := r.order.Uint16(opts[0:2]), int(r.order.Uint16(opts[2:4]))
		padded := (n + 3) &^ 3
		if code == ngOptEnd || 4+padded > len(opts) {
			break
		}
		if (code == ngOptISBIfdrop || code == ngOptISBOsdrop) && n == 8 {
			dropped = addSaturating(dropped, r.order.Uint64(opts[4:12]))
		}
		opts = opts[4+padded:]
	}
	r.ifaces[id].dropped = dropped
}

func (r *ngReader) warnf(msg string) {
	if r.warn != nil {
		r.warn(msg)
	}
}

// ngFormatError is a block that cannot be read as pcapng says, which is
// not the same as a file that ends inside a block.
type ngFormatError struct {
	off int64
	msg string
}

func (e *ngFormatError) Error() string {
	return "pcapng: block at offset " + strconv.FormatInt(e.off, 10) + ": " + e.msg
}

func hex32(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return "0x" + s
}

// newNgReader reads the first section header block.
func newNgReader(br *bufio.Reader) (*ngReader, error) {
	return (&ngReader{r: br, buf: make([]byte, 0, 64<<10)}).start()
}

// newNgReaderMem is newNgReader over a file mapped in memory.
func newNgReaderMem(mem []byte) (*ngReader, error) {
	return (&ngReader{mem: mem}).start()
}

func (r *ngReader) start() (*ngReader, error) {
	typ, body, err := r.block()
	if err != nil {
		return nil, err
	}
	if typ != ngBlockSHB {
		return nil, errors.New("first block is not a section header")
	}
	r.section(body)
	return r, nil
}

// block reads the next block and returns its type and body (valid until
// the next call).
func (r *ngReader) block() (uint32, []byte, error) {
	var head [12]byte
	var mem []byte // in memory: the rest of the file
	if r.mem != nil {
		mem = r.mem[r.off:]
		if len(mem) == 0 {
			return 0, nil, io.EOF
		}
		if len(mem) < 8 {
			return 0, nil, io.ErrUnexpectedEOF
		}
		copy(head[:8], mem)
	} else if n, err := io.ReadFull(r.r, head[:8]); err != nil {
		if n == 0 && err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, io.ErrUnexpectedEOF
	}
	off := r.off
	if binary.LittleEndian.Uint32(head[:4]) == ngBlockSHB { // a palindrome
		// A section header sets the byte order of what follows it,
		// itself included: read its byte-order magic first.
		if mem != nil {
			if len(mem) < 12 {
				return 0, nil, io.ErrUnexpectedEOF
			}
			copy(head[8:12], mem[8:])
		} else if _, err := io.ReadFull(r.r, head[8:12]); err != nil {
			return 0, nil, io.ErrUnexpectedEOF
		}
		switch {
		case binary.LittleEndian.Uint32(head[8:12]) == ngByteOrderMagic:
			r.order = binary.LittleEndian
		case binary.BigEndian.Uint32(head[8:12]) == ngByteOrderMagic:
			r.order = binary.BigEndian
		default:
			return 0, nil, &ngFormatError{off, "section header with byte-order magic " + hex32(binary.BigEndian.Uint32(head[8:12]))}
		}
	} else if r.order == nil {
		return 0, nil, &ngFormatError{off, "block type " + hex32(binary.LittleEndian.Uint32(head[:4])) + " where a section header must be"}
	}
	typ := r.order.Uint32(head[:4])
	length := r.order.Uint32(head[4:8])
	read := 8
	if typ == ngBlockSHB {
		read = 12
	}
	switch {
	case length < 12 || length < uint32(read)+4 || length%4 != 0:
		return 0, nil, &ngFormatError{off, "block type " + hex32(typ) + " has a bogus length " + strconv.FormatUint(uint64(length), 10) + " (a block is a multiple of 4 bytes, at least 12)"}
	case length > maxNgBlock:
		return 0, nil, &ngFormatError{off, "block type " + hex32(typ) + " has a bogus length " + strconv.FormatUint(uint64(length), 10) + " (over the " + strconv.Itoa(maxNgBlock) + " bytes a block may have)"}
	}
	rest := int(length) - read // body and trailing length
	if mem != nil {
		if len(mem)-read < rest {
			return 0, nil, io.ErrUnexpectedEOF
		}
		return r.finish(off, typ, length, [4]byte(head[8:12]), mem[read:read+rest:read+rest])
	}
	// Read in doubling steps, so that a length claiming 32 MiB at the end
	// of a short file costs what the file holds, not 32 MiB.
	b := r.buf[:0]
	for len(b) < rest {
		n := min(rest-len(b), max(64<<10, len(b)))
		if cap(b)-len(b) < n {
			b = append(make([]byte, 0, len(b)+n), b...)
		}
		m, err := io.ReadFull(r.r, b[len(b):len(b)+n])
		b = b[:len(b)+m]
		if err != nil {
			r.buf = b[:0]
			return 0, nil, io.ErrUnexpectedEOF
		}
	}
	r.buf = b[:0]
	return r.finish(off, typ, length, [4]byte(head[8:12]), b)
}

// finish checks the trailing length of the block at off, whose bytes
// after its header are b, and returns its body (a section header's
// with its byte-order magic in front).
func (r *ngReader) finish(off int64, typ, length uint32, magic [4]byte, b []byte) (uint32, []byte, error) {
	rest := len(b)
	r.off += int64(length)
	if trail := r.order.Uint32(b[rest-4:]); trail != length {
		return 0, nil, &ngFormatError{off, "block type " + hex32(typ) + ": length " + strconv.FormatUint(uint64(length), 10) + " at its start but " + strconv.FormatUint(uint64(trail), 10) + " at its end"}
	}
	body := b[:rest-4]
	if typ == ngBlockSHB {
		// Rare: keep the magic in the body, in bytes of its own.
		body = append(append(make([]byte, 0, 4+len(body)), magic[:]...), body...)
	}
	return typ, body, nil
}

// section starts a section from its header block's body (byte-order
// magic first).
func (r *ngReader) section(body []byte) {
	r.droppedBefore = r.dropped()
	r.ifaces, r.described, r.warned, r.warnedID, r.refused = r.ifaces[:0], 0, false, false, false
	r.skipSection = len(body) < 8 || r.order.Uint16(body[4:6]) != 1
	if r.skipSection {
		r.warnf("capture: pcapng section at offset " + strconv.FormatInt(r.off, 10) + " has an unknown version; its packets are skipped")
	}
}

// interfaceBlock records an interface description block.
func (r *ngReader) interfaceBlock(off int64, body []byte) error {
	r.described++
	if len(r.ifaces) >= MaxInterfaces {
		if !r.warned {
			r.warned = true
			r.warnf("capture: pcapng section describes more than " + strconv.Itoa(MaxInterfaces) +
				" interfaces (block at offset " + strconv.FormatInt(off, 10) + "); the packets of the others are skipped")
		}
		return nil
	}
	if r.refused || !r.chargeInterface() {
		if !r.refused {
			r.refused = true
			r.warnf("capture: pcapng interface table reached the memory budget (--max-memory " + decode.FormatSize(r.acct.Budget().Limit()) +
				") at the block at offset " + strconv.FormatInt(off, 10) + " (interface " + strconv.Itoa(r.described-1) +
				"); the packets of that interface and later ones in the section are skipped")
		}
		return nil
	}
	if len(body) < 8 {
		return &ngFormatError{off, "interface description of " + strconv.Itoa(len(body)) + " bytes, want at least 8"}
	}
	in := ngInterface{link: LinkType(r.order.Uint16(body[0:2])), snaplen: r.order.Uint32(body[4:8]), exp: 6}
	opts := body[8:]
	for len(opts) >= 4 {
		code, n := r.order.Uint16(opts[0:2]), int(r.order.Uint16(opts[2:4]))
		if code == ngOptEnd {
			break
		}
		padded := (n + 3) &^ 3
		if 4+padded > len(opts) {
			return &ngFormatError{off, "interface option " + strconv.Itoa(int(code)) + " of " + strconv.Itoa(n) + " bytes overruns its block"}
		}
		v := opts[4 : 4+n]
		switch {
		case code == ngOptTsresol && n == 1:
			in.binary, in.exp = v[0]&0x80 != 0, v[0]&0x7f
			if (in.binary && in.exp > 63) || (!in.binary && in.exp > 19) {
				return &ngFormatError{off, "interface timestamp resolution " + hex32(uint32(v[0])) + " is not supported"}
			}
		case code == ngOptTsoffset && n == 8:
			in.tsoffset = int64(r.order.Uint64(v))
		}
		opts = opts[4+padded:]
	}
	r.ifaces = append(r.ifaces, in)
	return nil
}

var pow10 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

func (in *ngInterface) time(ts uint64) time.Time {
	var sec, ns uint64
	switch {
	case in.binary:
		sec, ns = ts>>in.exp, 0
		if in.exp > 0 {
			hi, lo := bits.Mul64(ts&(1<<in.exp-1), 1e9)
			ns, _ = bits.Div64(hi, lo, 1<<in.exp)
		}
	case in.exp <= 9:
		sec, ns = ts/pow10[in.exp], ts%pow10[in.exp]*pow10[9-in.exp]
	default:
		sec, ns = ts/pow10[in.exp], ts%pow10[in.exp]/pow10[in.exp-9]
	}
	return time.Unix(int64(sec)+in.tsoffset, int64(ns)).UTC()
}

// next returns the next packet record: its data (valid until the next
// call), time, original length and link type.
func (r *ngReader) next() (data []byte, t time.Time, length int, link LinkType, err error) {
	for {
		off := r.off
		typ, body, err := r.block()
		if err != nil {
			return nil, time.Time{}, 0, 0, err
		}
		if typ == ngBlockSHB {
			r.section(body)
			continue
		}
		if r.skipSection {
			continue
		}
		var id int
		var ts uint64
		var caplen int
		switch typ {
		case ngBlockIDB:
			if err := r.interfaceBlock(off, body); err != nil {
				return nil, time.Time{}, 0, 0, err
			}
			continue
		case ngBlockEPB, ngBlockOPB:
			if len(body) < 20 {
				return nil, time.Time{}, 0, 0, &ngFormatError{off, "packet block of " + strconv.Itoa(len(body)) + " bytes, want at least 20"}
			}
			if typ == ngBlockEPB {
				id = int(r.order.Uint32(body[0:4]))
			} else {
				id = int(r.order.Uint16(body[0:2]))
			}
			ts = uint64(r.order.Uint32(body[4:8]))<<32 | uint64(r.order.Uint32(body[8:12]))
			caplen, length = int(r.order.Uint32(body[12:16])), int(r.order.Uint32(body[16:20]))
			body = body[20:]
		case ngBlockSPB:
			if len(body) < 4 {
				return nil, time.Time{}, 0, 0, &ngFormatError{off, "simple packet block of " + strconv.Itoa(len(body)) + " bytes, want at least 4"}
			}
			length = int(r.order.Uint32(body[0:4]))
			caplen, body = length, body[4:]
			if len(r.ifaces) > 0 && r.ifaces[0].snaplen != 0 {
				caplen = min(caplen, int(r.ifaces[0].snaplen))
			}
			caplen = min(caplen, len(body))
		case ngBlockISB:
			r.statisticsBlock(body)
			continue
		default:
			continue // name resolution, custom, ...
		}
		if id >= len(r.ifaces) {
			if id < r.described {
				continue // an interface past MaxInterfaces: warned about
			}
			if !r.warnedID {
				r.warnedID = true
				r.warnf("capture: pcapng packet block at offset " + strconv.FormatInt(off, 10) + " names interface " +
					strconv.Itoa(id) + " of " + strconv.Itoa(r.described) + " described; such packets are skipped")
			}
			continue
		}
		if caplen < 0 || caplen > len(body) {
			return nil, time.Time{}, 0, 0, &ngFormatError{off, "captured length " + strconv.Itoa(caplen) + " overruns the block's " + strconv.Itoa(len(body)) + " bytes of packet data"}
		}
		in := &r.ifaces[id]
		if typ != ngBlockSPB {
			t = in.time(ts)
		}
		// The capacity is cut: a caller that appends to a packet must
		// not write into the next block (nor into a read-only mapping).
		return body[:caplen:caplen], t, length, in.link, nil
	}
}

// release gives back what the interface table was charged.
func (r *ngReader) release() {
	r.hold.Release()
	r.ifaces = nil
}
