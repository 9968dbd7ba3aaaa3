package pcapng

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// The legacy pcap format (draft-ietf-opsawg-pcap), version 2.4, little
// endian with nanosecond timestamps: byte for byte what gopacket's
// pcapgo.Writer (NewWriterNanos) wrote, which wiretap used before.
const (
	pcapMagicNanos   = 0xA1B23C4D
	pcapVersionMajor = 2
	pcapVersionMinor = 4
	pcapSnapLen      = 262144
)

// PacketWriter is what Synth writes to: a [Writer] (pcapng) or a
// [PcapWriter] (legacy pcap).
type PacketWriter interface {
	WritePacket(p *capture.Packet) error
}

// PcapWriter writes packets in the legacy pcap format with nanosecond
// timestamps, for tools that want it (`--write OUT.pcap`). A pcap file has
// one link-layer type: the first packet's (or Ethernet, for Close of an
// empty file); a packet of another type is an error. Writes go straight to
// the underlying writer, so give it a buffered one.
type PcapWriter struct {
	w      io.Writer
	link   capture.LinkType
	header bool
	buf    [24]byte // the file header, then each record's
	err    error
}

// NewPcapWriter returns a PcapWriter on w.
func NewPcapWriter(w io.Writer) *PcapWriter {
	return &PcapWriter{w: w}
}

func (w *PcapWriter) writeHeader(link capture.LinkType) error {
	w.header, w.link = true, link
	h := w.buf[:24]
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNanos)
	binary.LittleEndian.PutUint16(h[4:], pcapVersionMajor)
	binary.LittleEndian.PutUint16(h[6:], pcapVersionMinor)
	binary.LittleEndian.PutUint32(h[8:], 0)  // thiszone: UTC
	binary.LittleEndian.PutUint32(h[12:], 0) // sigfigs
	binary.LittleEndian.PutUint32(h[16:], pcapSnapLen)
	binary.LittleEndian.PutUint32(h[20:], uint32(link))
	if _, err := w.w.Write(h); err != nil {
		w.err = fmt.Errorf("pcap: writing the file header: %w", err)
	}
	return w.err
}

// WritePacket writes one packet. Its Length is raised to len(Data) when
// smaller (and lowered to 4 GiB - 1 when larger). A packet without a time
// (the zero time.Time, which a record's 32-bit seconds cannot hold) is
// written with the current time.
func (w *PcapWriter) WritePacket(p *capture.Packet) error {
	if w.err != nil {
		return w.err
	}
	if uint64(len(p.Data)) > math.MaxUint32 {
		return fmt.Errorf("pcap: a packet of %d bytes is too large for a record", len(p.Data))
	}
	if !w.header {
		if err := w.writeHeader(p.Link); err != nil {
			return err
		}
	}
	if p.Link != w.link {
		return fmt.Errorf("pcap: a packet of link type %d in a file of link type %d (write pcapng to mix them)", p.Link, w.link)
	}
	t := p.Time
	if t.IsZero() {
		t = time.Now()
	}
	h := w.buf[:16]
	binary.LittleEndian.PutUint32(h[0:], uint32(t.Unix()))
	binary.LittleEndian.PutUint32(h[4:], uint32(t.Nanosecond()))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(p.Data)))
	binary.LittleEndian.PutUint32(h[12:], origLen(p))
	_, err := w.w.Write(h)
	if err == nil && len(p.Data) > 0 {
		_, err = w.w.Write(p.Data)
	}
	if err != nil {
		w.err = fmt.Errorf("pcap: writing a packet: %w", err)
	}
	return w.err
}

// Close writes the file header if no packet was written. It does not
// close the underlying writer.
func (w *PcapWriter) Close() error {
	if w.err == nil && !w.header {
		w.writeHeader(capture.LinkTypeEthernet)
	}
	return w.err
}
