package pcapng

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"

	"github.com/wiretap-dev/wiretap/capture"
)

// The pcapng blocks and options Writer writes (draft-ietf-opsawg-pcapng,
// sections 3.5 and 4), little endian. Files are byte for byte what
// gopacket's pcapgo.NgWriter wrote for the same packets, which wiretap
// used before: wiretap no longer links gopacket's layers package, whose
// tables every garbage collection scans.
const (
	blockSectionHeader  = 0x0A0D0D0A
	blockInterface      = 1
	blockEnhancedPacket = 6

	byteOrderMagic = 0x1A2B3C4D
	versionMajor   = 1
	versionMinor   = 0

	optEndOfOpt   = 0  // opt_endofopt
	optSHBOS      = 3  // shb_os
	optSHBUserApp = 4  // shb_userappl
	optIfName     = 2  // if_name
	optIfTSResol  = 9  // if_tsresol
	optIfOS       = 12 // if_os

	// tsResolNanos is the if_tsresol of every interface, one byte:
	// 10^-9 s, what time.Time holds.
	tsResolNanos = "\x09"

	// epbFixed is an enhanced packet block's size less its data and
	// padding: type, length, interface, timestamp (2), captured and
	// original length, and the trailing length.
	epbFixed = 32
)

// Writer writes packets to a pcapng stream. The section header and the
// first interface are written with the first packet (or by Close), and an
// interface is added for each new link-layer type. It is not safe for
// concurrent use.
type Writer struct {
	w      io.Writer
	bw     *bufio.Writer // nil until the section header is written
	ifaces map[capture.LinkType]int
	hdr    [28]byte // an enhanced packet block's header
	tail   [8]byte  // its padding and trailing length
	err    error
}

// NewWriter returns a Writer on w. Call Close (or Flush) before closing w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, ifaces: make(map[capture.LinkType]int)}
}

// openBlock appends a block's type and a placeholder for its length to b.
func openBlock(b []byte, typ uint32) []byte {
	b = binary.LittleEndian.AppendUint32(b, typ)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// closeBlock ends the block that starts at b[start:], options included
// (their end-of-options marker is added here), with its length, which it
// also writes at the block's start.
func closeBlock(b []byte, start int) []byte {
	b = binary.LittleEndian.AppendUint16(b, optEndOfOpt)
	b = binary.LittleEndian.AppendUint16(b, 0)
	n := uint32(len(b) - start + 4)
	binary.LittleEndian.PutUint32(b[start+4:], n)
	return binary.LittleEndian.AppendUint32(b, n)
}

// appendOption appends an option with value v, padded to 32 bits. v is
// one of wiretap's own short strings, well under an option's 64 KiB.
func appendOption(b []byte, code uint16, v string) []byte {
	b = binary.LittleEndian.AppendUint16(b, code)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	for range -len(v) & 3 {
		b = append(b, 0)
	}
	return b
}

// iface returns the interface id of the link type, writing the section
// header before the first interface and an interface description block
// for a new link type.
func (w *Writer) iface(link capture.LinkType) (int, error) {
	if id, ok := w.ifaces[link]; ok {
		return id, nil
	}
	var b []byte
	first := w.bw == nil
	if first {
		// The section header: application and OS, and an unspecified
		// section length (the file is written as a stream).
		b = openBlock(b, blockSectionHeader)
		b = binary.LittleEndian.AppendUint32(b, byteOrderMagic)
		b = binary.LittleEndian.AppendUint16(b, versionMajor)
		b = binary.LittleEndian.AppendUint16(b, versionMinor)
		b = binary.LittleEndian.AppendUint64(b, math.MaxUint64)
		b = appendOption(b, optSHBUserApp, "wiretap")
		b = appendOption(b, optSHBOS, runtime.GOOS)
		b = closeBlock(b, 0)
	}
	// The interface: name, OS and nanosecond timestamps; no snap length.
	id := len(w.ifaces)
	start := len(b)
	b = openBlock(b, blockInterface)
	b = binary.LittleEndian.AppendUint16(b, uint16(link))
	b = binary.LittleEndian.AppendUint16(b, 0) // reserved
	b = binary.LittleEndian.AppendUint32(b, 0) // snap length: none
	b = appendOption(b, optIfName, "wiretap"+strconv.Itoa(id))
	b = appendOption(b, optIfOS, runtime.GOOS)
	b = appendOption(b, optIfTSResol, tsResolNanos)
	b = closeBlock(b, start)

	bw := w.bw
	if first {
		bw = bufio.NewWriter(w.w)
	}
	if _, err := bw.Write(b); err != nil {
		return 0, err
	}
	w.bw = bw
	w.ifaces[link] = id
	return id, nil
}

// WritePacket writes one packet. Its Length is raised to len(Data) when
// smaller (and lowered to 4 GiB - 1, the largest a block records, when
// larger).
func (w *Writer) WritePacket(p *capture.Packet) error {
	if w.err != nil {
		return w.err
	}
	if uint64(len(p.Data)) > math.MaxUint32-epbFixed-3 {
		return fmt.Errorf("pcapng: a packet of %d bytes is too large for a block", len(p.Data))
	}
	id, err := w.iface(p.Link)
	if err != nil {
		w.err = fmt.Errorf("pcapng: writing interface: %w", err)
		return w.err
	}
	pad := -len(p.Data) & 3
	n := epbFixed + len(p.Data) + pad
	ts := uint64(p.Time.UnixNano())
	h := w.hdr[:]
	binary.LittleEndian.PutUint32(h[0:], blockEnhancedPacket)
	binary.LittleEndian.PutUint32(h[4:], uint32(n))
	binary.LittleEndian.PutUint32(h[8:], uint32(id))
	binary.LittleEndian.PutUint32(h[12:], uint32(ts>>32))
	binary.LittleEndian.PutUint32(h[16:], uint32(ts))
	binary.LittleEndian.PutUint32(h[20:], uint32(len(p.Data)))
	binary.LittleEndian.PutUint32(h[24:], origLen(p))
	t := w.tail[:pad+4]
	clear(t[:pad])
	binary.LittleEndian.PutUint32(t[pad:], uint32(n))
	_, err = w.bw.Write(h)
	if err == nil {
		_, err = w.bw.Write(p.Data)
	}
	if err == nil {
		_, err = w.bw.Write(t)
	}
	if err != nil {
		w.err = fmt.Errorf("pcapng: writing packet: %w", err)
	}
	return w.err
}

// origLen is p's length on the wire for a record: at least len(p.Data),
// at most what 32 bits hold.
func origLen(p *capture.Packet) uint32 {
	return uint32(min(uint64(max(p.Length, len(p.Data))), math.MaxUint32))
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.bw == nil {
		return nil
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("pcapng: flushing: %w", err)
	}
	return w.err
}

// Begin writes the section header and an interface of the given link type
// now, rather than with the first packet: a file written as traffic
// arrives is then a valid (empty) capture from the start.
func (w *Writer) Begin(link capture.LinkType) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.iface(link); err != nil {
		w.err = fmt.Errorf("pcapng: writing section header: %w", err)
	}
	return w.err
}

// Close writes the header of an empty capture if no packet was written,
// then flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.bw == nil && w.err == nil {
		if _, err := w.iface(capture.LinkTypeEthernet); err != nil {
			w.err = fmt.Errorf("pcapng: writing section header: %w", err)
		}
	}
	return w.Flush()
}
