package pcapng

import (
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/wiretap-dev/wiretap/capture"
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
	w      *pcapgo.Writer
	link   layers.LinkType
	header bool
	err    error
}

// NewPcapWriter returns a PcapWriter on w.
func NewPcapWriter(w io.Writer) *PcapWriter {
	return &PcapWriter{w: pcapgo.NewWriterNanos(w)}
}

func (w *PcapWriter) writeHeader(link layers.LinkType) error {
	w.header, w.link = true, link
	if err := w.w.WriteFileHeader(262144, link); err != nil {
		w.err = errors.Join(errors.New("pcap: writing the file header"), err)
	}
	return w.err
}

// WritePacket writes one packet.
func (w *PcapWriter) WritePacket(p *capture.Packet) error {
	if w.err != nil {
		return w.err
	}
	if !w.header {
		if err := w.writeHeader(p.Link); err != nil {
			return err
		}
	}
	if p.Link != w.link {
		return fmt.Errorf("pcap: a packet of link type %d in a file of link type %d (write pcapng to mix them)", p.Link, w.link)
	}
	ci := gopacket.CaptureInfo{Timestamp: p.Time, CaptureLength: len(p.Data), Length: max(p.Length, len(p.Data))}
	if err := w.w.WritePacket(ci, p.Data); err != nil {
		w.err = errors.Join(errors.New("pcap: writing a packet"), err)
	}
	return w.err
}

// Close writes the file header if no packet was written. It does not
// close the underlying writer.
func (w *PcapWriter) Close() error {
	if w.err == nil && !w.header {
		w.writeHeader(layers.LinkTypeEthernet)
	}
	return w.err
}
