package capture_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// recorder is a Handler that writes every call as one line of text and
// collects each direction's bytes.
type recorder struct {
	log    strings.Builder
	stream map[int]*[2]bytes.Buffer
	flows  map[int]capture.Flow
	closed map[int]int
}

func newRecorder() *recorder {
	return &recorder{stream: map[int]*[2]bytes.Buffer{}, flows: map[int]capture.Flow{}, closed: map[int]int{}}
}

func (r *recorder) seen(f *capture.Flow) *[2]bytes.Buffer {
	if old, ok := r.flows[f.ID]; ok && old != *f {
		panic(fmt.Sprintf("flow %d changed: %+v then %+v", f.ID, old, *f))
	}
	r.flows[f.ID] = *f
	s := r.stream[f.ID]
	if s == nil {
		s = new([2]bytes.Buffer)
		r.stream[f.ID] = s
	}
	return s
}

func side(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

func (r *recorder) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	if len(data) == 0 {
		panic("empty Data")
	}
	if r.closed[f.ID] > 0 {
		panic("Data after Close")
	}
	r.seen(f)[side(fromA)].Write(data)
	fmt.Fprintf(&r.log, "data %d %v %q\n", f.ID, fromA, data)
}

func (r *recorder) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	if r.closed[f.ID] > 0 {
		panic("Gap after Close")
	}
	r.seen(f)
	fmt.Fprintf(&r.log, "gap %d %v %d\n", f.ID, fromA, n)
}

func (r *recorder) Close(f *capture.Flow, t time.Time) {
	r.seen(f)
	r.closed[f.ID]++
	fmt.Fprintf(&r.log, "close %d\n", f.ID)
}

// tcp describes one hand-made TCP segment.
type tcp struct {
	src, dst string // "1.2.3.4:5" or "[::1]:5"
	seq, ack uint32
	flags    uint8
	payload  string
	// cut drops this many bytes from the end of the captured packet (snap
	// length), keeping the headers' lengths.
	cut int
}

const (
	fin = 0x01
	syn = 0x02
	rst = 0x04
	psh = 0x08
	ack = 0x10
)

// ip returns the IPv4 or IPv6 packet carrying s, with ext extension
// headers (IPv6 only; each 8 bytes of destination options).
func (s tcp) ip(ext int) []byte {
	src, dst := netip.MustParseAddrPort(s.src), netip.MustParseAddrPort(s.dst)
	th := make([]byte, 20, 20+len(s.payload))
	binary.BigEndian.PutUint16(th[0:], src.Port())
	binary.BigEndian.PutUint16(th[2:], dst.Port())
	binary.BigEndian.PutUint32(th[4:], s.seq)
	binary.BigEndian.PutUint32(th[8:], s.ack)
	th[12] = 5 << 4
	th[13] = s.flags
	binary.BigEndian.PutUint16(th[14:], 65535)
	th = append(th, s.payload...)
	var p []byte
	if src.Addr().Is4() {
		p = make([]byte, 20)
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(20+len(th)))
		p[8], p[9] = 64, 6
		a, b := src.Addr().As4(), dst.Addr().As4()
		copy(p[12:], a[:])
		copy(p[16:], b[:])
	} else {
		p = make([]byte, 40)
		p[0] = 0x60
		binary.BigEndian.PutUint16(p[4:], uint16(len(th)+8*ext))
		p[6], p[7] = 6, 64
		if ext > 0 {
			p[6] = 60
		}
		a, b := src.Addr().As16(), dst.Addr().As16()
		copy(p[8:], a[:])
		copy(p[24:], b[:])
		for i := range ext {
			next := byte(60)
			if i == ext-1 {
				next = 6
			}
			p = append(p, next, 0, 1, 4, 0, 0, 0, 0) // PadN option
		}
	}
	p = append(p, th...)
	return p[:len(p)-s.cut]
}

// record is one packet record for a hand-made file.
type record struct {
	link   uint16
	t      time.Time
	data   []byte
	length int
	iface  int
}

// frame wraps an IP packet in the link-layer header of link; vlans adds
// 802.1Q tags (Ethernet only).
func frame(link uint16, ip []byte, vlans int) []byte {
	v4 := ip[0]>>4 == 4
	et := []byte{0x08, 0x00}
	if !v4 {
		et = []byte{0x86, 0xdd}
	}
	var h []byte
	switch link {
	case 1: // Ethernet
		h = []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1}
		for i := range vlans {
			tpid := []byte{0x81, 0x00}
			if i == 0 && vlans > 1 {
				tpid = []byte{0x88, 0xa8}
			}
			h = append(h, tpid...)
			h = append(h, 0, byte(10+i))
		}
		h = append(h, et...)
	case 113: // Linux SLL
		h = []byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0}
		h = append(h, et...)
	case 276: // Linux SLL2
		h = append(et, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0)
	case 0: // NULL, little-endian family
		h = []byte{2, 0, 0, 0}
		if !v4 {
			h = []byte{30, 0, 0, 0}
		}
	case 0x8000: // NULL written big endian (test-only code, written as 0)
		h = []byte{0, 0, 0, 2}
		if !v4 {
			h = []byte{0, 0, 0, 24}
		}
	case 108: // LOOP
		h = []byte{0, 0, 0, 2}
		if !v4 {
			h = []byte{0, 0, 0, 28}
		}
	}
	return append(h, ip...)
}

// pcapFile builds a pcap file: byte order, nanosecond or microsecond
// timestamps, one link type.
func pcapFile(order byteOrder, nano bool, link uint32, recs []record) []byte {
	var b []byte
	magic := uint32(0xa1b2c3d4)
	if nano {
		magic = 0xa1b23c4d
	}
	b = order.AppendUint32(b, magic)
	b = order.AppendUint16(b, 2)
	b = order.AppendUint16(b, 4)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 0)
	b = order.AppendUint32(b, 262144)
	b = order.AppendUint32(b, link)
	for _, r := range recs {
		b = order.AppendUint32(b, uint32(r.t.Unix()))
		frac := uint32(r.t.Nanosecond())
		if !nano {
			frac /= 1000
		}
		b = order.AppendUint32(b, frac)
		b = order.AppendUint32(b, uint32(len(r.data)))
		b = order.AppendUint32(b, uint32(max(r.length, len(r.data))))
		b = append(b, r.data...)
	}
	return b
}

// ngIface is an interface of a hand-made pcapng section.
type ngIface struct {
	link    uint16
	tsresol byte // if_tsresol; 0: default (microseconds)
}

// ngSection builds one pcapng section (SHB, IDBs, EPBs) in the given byte
// order.
func ngSection(order byteOrder, ifaces []ngIface, recs []record) []byte {
	block := func(b []byte, typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		b = order.AppendUint32(b, typ)
		b = order.AppendUint32(b, n)
		b = append(b, body...)
		return order.AppendUint32(b, n)
	}
	var shb []byte
	shb = order.AppendUint32(shb, 0x1a2b3c4d)
	shb = order.AppendUint16(shb, 1)
	shb = order.AppendUint16(shb, 0)
	shb = order.AppendUint64(shb, ^uint64(0))
	b := block(nil, 0x0a0d0d0a, shb)
	for _, f := range ifaces {
		var idb []byte
		idb = order.AppendUint16(idb, f.link)
		idb = order.AppendUint16(idb, 0)
		idb = order.AppendUint32(idb, 0)
		if f.tsresol != 0 {
			idb = order.AppendUint16(idb, 9)
			idb = order.AppendUint16(idb, 1)
			idb = append(idb, f.tsresol, 0, 0, 0)
			idb = order.AppendUint32(idb, 0) // opt_endofopt
		}
		b = block(b, 1, idb)
	}
	for _, r := range recs {
		res := ifaces[r.iface].tsresol
		var ts uint64
		switch {
		case res == 0:
			ts = uint64(r.t.UnixMicro())
		case res&0x80 == 0:
			ts = uint64(r.t.UnixNano())
			for range 9 - int(res) {
				ts /= 10
			}
		default: // power of two: 2^-20 here
			ts = uint64(r.t.Unix())<<20 | uint64(r.t.Nanosecond())*(1<<20)/1e9
		}
		var epb []byte
		epb = order.AppendUint32(epb, uint32(r.iface))
		epb = order.AppendUint32(epb, uint32(ts>>32))
		epb = order.AppendUint32(epb, uint32(ts))
		epb = order.AppendUint32(epb, uint32(len(r.data)))
		epb = order.AppendUint32(epb, uint32(max(r.length, len(r.data))))
		epb = append(epb, r.data...)
		b = block(b, 6, epb)
	}
	return b
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
