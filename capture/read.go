package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
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
//
// The file is read through a buffer, and the bytes h is given are valid
// only during each call; [Open] maps a file instead, for a handler that
// keeps them.
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
// The bytes h is given are valid only during each call.
func Read(r io.Reader, name string, h Handler, opt *Options) (*Stats, error) {
	in, err := NewInput(r, name)
	if err != nil {
		return nil, err
	}
	return in.Read(h, opt)
}

// Input is a capture opened for reading: by [Open] from a file, by
// [NewInput] from a reader.
type Input struct {
	name  string
	src   *source
	total int64 // the input's size, -1 when unknown
	cr    *countingReader
	// m is the file mapped in memory, when it is (see [Input.Stable]).
	m *mapping
	f *os.File
	// reads counts the calls to Read.
	reads int
}

// Open opens the capture file at path and reads its header; its errors
// are those of [ReadFile]. A regular file that is not gzip-compressed is
// mapped in memory (on Linux) and read in place: the packets' bytes, and
// the bytes the reassembly hands its [Handler], are then slices of the
// mapping, valid and unchanged until Close (see [Input.Stable]), so that
// a handler may keep them instead of copying them. Other files (gzip,
// pipes, devices) are read through a buffer, as [ReadFile] reads them.
//
// Reading a mapping is not cheaper in itself: on a VM with shadow paging
// (see mmap_linux.go), touching a file's pages for the first time costs
// more than the kernel's copy into a buffer does. What it saves is the
// handler's copies.
//
// The mapping's pages behind the read position are given back to the
// system as reading goes on (MADV_DONTNEED), so that reading a capture
// of any size keeps a bounded part of it resident; a page given back and
// read again is read again from the file. The file must not be cut
// shorter while it is mapped: reading a page past its new end kills the
// process (SIGBUS).
func Open(path string) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if m := mapFile(f); m != nil {
		src, err := openMem(m.mem, path)
		if err != nil {
			m.close()
			f.Close()
			return nil, err
		}
		if src != nil {
			return &Input{name: path, src: src, total: int64(len(m.mem)), m: m, f: f}, nil
		}
		m.close() // gzip: read through a buffer
	}
	in, err := NewInput(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	in.f = f
	return in, nil
}

// NewInput reads the header of the capture r holds; name names it in
// errors and warnings. Its errors are those of [Read]. When r is an
// *os.File of a regular file, its size is the progress total.
func NewInput(r io.Reader, name string) (*Input, error) {
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
	return &Input{name: name, src: src, total: total, cr: cr}, nil
}

// Stable reports whether the bytes of every packet read, and so every
// byte the reassembly hands a [Handler] (see [Handler.Data]), stay valid
// and unchanged until Close: the input is a file mapped in memory. A
// handler may then keep them instead of copying them.
func (in *Input) Stable() bool { return in.m != nil }

// Size returns the size of the input's file in bytes (compressed, for a
// gzip file), or -1 when it is not a regular file (a pipe).
func (in *Input) Size() int64 { return in.total }

// Close releases the input: its mapping (no byte of it may be used
// after) and the file [Open] opened.
func (in *Input) Close() error {
	if in.m != nil {
		in.m.close()
		in.m = nil
	}
	if in.f != nil {
		err := in.f.Close()
		in.f = nil
		return err
	}
	return nil
}

// Read reads the input's packets, reassembles their TCP connections and
// feeds them to h, as [ReadFile] does. An input [Open] opened may be read
// again, from its start; one [NewInput] made, once.
func (in *Input) Read(h Handler, opt *Options) (*Stats, error) {
	if in.reads++; in.reads > 1 {
		if err := in.rewind(); err != nil {
			return nil, err
		}
	}
	stats := new(Stats)
	o := opt.withDefaults()
	src := in.src
	if o.Budget == nil {
		o.Budget = budgetOf(h, nil)
	}
	if src.ng != nil {
		src.ng.warn = stats.warn
		src.ng.acct = o.Budget.NewAccount()
		defer src.ng.release()
	}
	asm := NewAssembler(h, &o, stats)
	asm.stable = in.m != nil
	var p Packet
	for n := 0; ; n++ {
		if err := src.next(&p); err != nil {
			if err != io.EOF {
				stats.Truncated = true
				stats.warn(truncationWarning(in.name, stats.Packets, err))
			}
			break
		}
		if o.Tap != nil {
			o.Tap(&p)
		}
		asm.Packet(&p)
		if in.m != nil {
			in.m.advance(src.off())
		}
		if o.Progress != nil && n&0x3ff == 0 {
			o.Progress(in.read(), in.total)
		}
	}
	asm.Flush()
	if src.ng != nil {
		stats.Dropped = int64(min(src.ng.dropped(), math.MaxInt64))
		if stats.Dropped > 0 {
			stats.warn("capture: " + in.name + ": its interface statistics report " + strconv.FormatInt(stats.Dropped, 10) +
				" packets dropped while capturing; the connections they belonged to have gaps")
		}
	}
	if o.Progress != nil {
		done := in.total // a mapping is read to its end
		if in.m == nil {
			done = in.cr.n
		}
		o.Progress(done, in.total)
	}
	return stats, nil
}

// rewind makes the input ready to be read again from its start.
func (in *Input) rewind() error {
	if in.m != nil {
		in.m.rewind()
		src, err := openMem(in.m.mem, in.name)
		in.src = src
		return err
	}
	if in.f == nil {
		return errors.New("capture: " + in.name + ": cannot be read twice")
	}
	if _, err := in.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("capture: %s: %w", in.name, err)
	}
	again, err := NewInput(in.f, in.name)
	if err != nil {
		return err
	}
	in.src, in.cr = again.src, again.cr
	return nil
}

// read is how far reading went, for progress.
func (in *Input) read() int64 {
	if in.m != nil {
		return in.src.off()
	}
	return in.cr.n
}

func truncationWarning(name string, packets int64, err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "capture: " + name + ": cut short after " + strconv.FormatInt(packets, 10) +
			" packets (the last record is incomplete); decoded up to the cut"
	}
	return "capture: " + name + ": unreadable after " + strconv.FormatInt(packets, 10) +
		" packets (" + err.Error() + "); decoded up to there"
}

// source yields packet records into p; p.Data is valid until the next
// call, or as long as the mapping for a source over one (see openMem).
type source struct {
	next func(p *Packet) error
	ng   *ngReader // for pcapng: its warnings go to Stats
	// off, for a source over a mapping, is the offset of the next
	// record in it.
	off func() int64
}

// ngSource is the source of a pcapng reader.
func ngSource(ng *ngReader) *source {
	return &source{ng: ng, next: func(p *Packet) (err error) {
		p.Data, p.Time, p.Length, p.Link, err = ng.next()
		return err
	}, off: func() int64 { return ng.off }}
}

// openMem is openSource over a file mapped in memory: its packets are
// slices of mem. It returns nil and no error for a gzip-compressed file,
// which is read through a buffer instead.
func openMem(mem []byte, name string) (*source, error) {
	if len(mem) >= 2 && mem[0] == 0x1f && mem[1] == 0x8b {
		return nil, nil
	}
	if len(mem) < 4 {
		return nil, fmt.Errorf("capture: %s: %w (%d bytes)", name, ErrNotCapture, len(mem))
	}
	le, be := binary.LittleEndian.Uint32(mem), binary.BigEndian.Uint32(mem)
	switch {
	case le == magicPcapng:
		ng, err := newNgReaderMem(mem)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad pcapng section header: %v)", name, ErrNotCapture, err)
		}
		return ngSource(ng), nil
	case le == magicPcapMicro, le == magicPcapNano, be == magicPcapMicro, be == magicPcapNano:
		pr, err := newPcapMem(mem)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad pcap file header: %v)", name, ErrNotCapture, err)
		}
		return &source{next: func(p *Packet) (err error) {
			p.Data, p.Time, _, p.Length, err = pr.next()
			p.Link = pr.link
			return err
		}, off: func() int64 { return int64(pr.off) }}, nil
	}
	return nil, fmt.Errorf("capture: %s: %w", name, ErrNotCapture)
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
		return ngSource(ng), nil
	case le == magicPcapMicro, le == magicPcapNano, be == magicPcapMicro, be == magicPcapNano:
		pr, err := newPcapStream(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %s: %w (bad pcap file header: %v)", name, ErrNotCapture, err)
		}
		return &source{next: func(p *Packet) (err error) {
			p.Data, p.Time, _, p.Length, err = pr.next()
			p.Link = pr.link
			return err
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
