package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// File magic numbers: pcap (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcap-04.html
// section 4) in either byte order, with microsecond or nanosecond
// timestamps, and the pcapng Section Header Block type
// (draft-ietf-opsawg-pcapng section 4.1), a palindrome.
const (
	magicPcapMicro = 0xa1b2c3d4
	magicPcapNano  = 0xa1b23c4d
	magicPcapng    = 0x0a0d0d0a
)

// ReadFile reads the capture file at path, reassembles its TCP connections
// and feeds them to h. It returns an error only when the file cannot be used
// at all (it does not open, or is not a capture: errors.Is(err,
// ErrNotCapture)); a file cut short or damaged part way is decoded up to
// that point, and Stats.Truncated and Stats.Warnings say so.
func ReadFile(path string, h Handler, opt *Options) (*Stats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	defer f.Close()
	return Read(f, path, h, opt)
}

// Probe opens path and checks that it is a capture wiretap can read (pcap,
// pcapng, either gzip-compressed) without reading its packets: the TUI uses
// it to refuse a file before taking over the screen. Its errors are those
// of [ReadFile].
func Probe(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	defer f.Close()
	_, err = openSource(f, path)
	return err
}

// Read is [ReadFile] over a reader; name names it in errors and warnings.
// When r is an *os.File of a regular file, its size is the progress total.
func Read(r io.Reader, name string, h Handler, opt *Options) (*Stats, error) {
	stats := new(Stats)
	o := opt.withDefaults()
	total := int64(-1)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			total = fi.Size()
		}
	}
	cr := &countingReader{r: r}
	src, err := openSource(cr, name)
	if err != nil {
		return nil, err
	}
	if o.Budget == nil {
		o.Budget = budgetOf(h, nil)
	}
	if src.ng != nil {
		src.ng.warn = stats.warn
		src.ng.acct = o.Budget.NewAccount()
		defer src.ng.release()
	}
	asm := NewAssembler(h, &o, stats)
	var p Packet
	for n := 0; ; n++ {
		data, ci, link, err := src.next()
		if err != nil {
			if err != io.EOF {
				stats.Truncated = true
				stats.warn(truncationWarning(name, stats.Packets, err))
			}
			break
		}
		p = Packet{Link: link, Time: ci.Timestamp, Data: data, Length: ci.Length}
		if o.Tap != nil {
			o.Tap(&p)
		}
		asm.Packet(&p)
		if o.Progress != nil && n&0x3ff == 0 {
			o.Progress(cr.n, total)
		}
	}
	asm.Flush()
	if o.Progress != nil {
		o.Progress(cr.n, total)
	}
	return stats, nil
}

func truncationWarning(name string, packets int64, err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "capture: " + name + ": cut short after " + strconv.FormatInt(packets, 10) +
			" packets (the last record is incomplete); decoded up to the cut"
	}
	return "capture: " + name + ": unreadable after " + strconv.FormatInt(packets, 10) +
		" packets (" + err.Error() + "); decoded up to there"
}

// source yields packet records; data is valid until the next call.
type source struct {
	next func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error)
	ng   *ngReader // for pcapng: its warnings go to Stats
}

// openSource recognises the input by its first bytes and opens a pcap or
// pcapng reader over it (gzip-compressed, as Wireshark writes, is taken too).
func openSource(r io.Reader, name string) (*source, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(4)
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad gzip stream: %v)", name, ErrNotCapture, err)
		}
		br = bufio.NewReaderSize(zr, 1<<16)
		head, _ = br.Peek(4)
	}
	if len(head) < 4 {
		return nil, fmt.Errorf("capture: %s: %w (%d bytes)", name, ErrNotCapture, len(head))
	}
	le, be := binary.LittleEndian.Uint32(head), binary.BigEndian.Uint32(head)
	switch {
	case le == magicPcapng:
		ng, err := newNgReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad pcapng section header: %v)", name, ErrNotCapture, err)
		}
		return &source{ng: ng, next: func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
			data, t, length, link, err := ng.next()
			return data, gopacket.CaptureInfo{Timestamp: t, CaptureLength: len(data), Length: length}, link, err
		}}, nil
	case le == magicPcapMicro, le == magicPcapNano, be == magicPcapMicro, be == magicPcapNano:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad pcap file header: %v)", name, ErrNotCapture, err)
		}
		link := pr.LinkType()
		return &source{next: func() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
			data, ci, err := pr.ZeroCopyReadPacketData()
			return data, ci, link, err
		}}, nil
	}
	return nil, fmt.Errorf("capture: %s: %w", name, ErrNotCapture)
}

// countingReader counts the bytes read through it, for progress and for
// saying where a file was cut.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
