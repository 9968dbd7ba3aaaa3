package pcapng

import (
	"errors"
	"io"
	"runtime"
	"strconv"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/wiretap-dev/wiretap/capture"
)

// Writer writes packets to a pcapng stream. The section header and the
// first interface are written with the first packet (or by Close), and an
// interface is added for each new link-layer type. It is not safe for
// concurrent use.
type Writer struct {
	w      io.Writer
	ng     *pcapgo.NgWriter
	ifaces map[layers.LinkType]int
	err    error
}

// NewWriter returns a Writer on w. Call Close (or Flush) before closing w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, ifaces: make(map[layers.LinkType]int)}
}

func (w *Writer) iface(link layers.LinkType) (int, error) {
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

// WritePacket writes one packet. Its Length is raised to len(Data) when
// smaller.
func (w *Writer) WritePacket(p *capture.Packet) error {
	if w.err != nil {
		return w.err
	}
	id, err := w.iface(p.Link)
	if err != nil {
		w.err = errors.Join(errors.New("pcapng: writing interface"), err)
		return w.err
	}
	ci := gopacket.CaptureInfo{
		Timestamp:      p.Time,
		CaptureLength:  len(p.Data),
		Length:         max(p.Length, len(p.Data)),
		InterfaceIndex: id,
	}
	if err := w.ng.WritePacket(ci, p.Data); err != nil {
		w.err = errors.Join(errors.New("pcapng: writing packet"), err)
	}
	return w.err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.ng == nil {
		return nil
	}
	return w.ng.Flush()
}

// Begin writes the section header and an interface of the given link type
// now, rather than with the first packet: a file written as traffic
// arrives is then a valid (empty) capture from the start.
func (w *Writer) Begin(link layers.LinkType) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.iface(link); err != nil {
		w.err = errors.Join(errors.New("pcapng: writing section header"), err)
	}
	return w.err
}

// Close writes the header of an empty capture if no packet was written,
// then flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.ng == nil && w.err == nil {
		if _, err := w.iface(layers.LinkTypeEthernet); err != nil {
			w.err = errors.Join(errors.New("pcapng: writing section header"), err)
		}
	}
	return w.Flush()
}
