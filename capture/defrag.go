package capture

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"
)

// IPv4 reassembly (RFC 791 section 3.2), with the rules a Linux receiver
// applies to fragments that contradict each other (net/ipv4/ip_fragment.c
// since 2018: an overlap drops the whole datagram), so that what wiretap
// reassembles is what the host it captured on took.
const (
	// fragmentUnit is the granularity of the fragment offset field.
	fragmentUnit = 8
	// maxDatagram is the largest IPv4 datagram, header included.
	maxDatagram = 65535
	// maxFragmentOffset is the largest offset field a datagram that
	// fits in maxDatagram with a 20-byte header may carry.
	maxFragmentOffset = (maxDatagram - 20) / fragmentUnit
	// maxFragments bounds the fragments one datagram may be made of.
	maxFragments = 8192
)

// ipv4Datagram holds the fragments of one incomplete datagram, sorted by
// offset and never overlapping.
type ipv4Datagram struct {
	// first is the capture time of its first fragment; bytes is what its
	// fragments were charged to the memory budget.
	first time.Time
	bytes int64
	frags []ipv4Fragment
	// end is the payload length the fragments seen so far reach; final
	// says the last fragment (more-fragments clear) fixed it. have counts
	// the payload bytes held.
	end   int
	final bool
	have  int
}

// ipv4Fragment is a fragment's payload, copied, and the range
// [start, start+len(data)) of the datagram's payload it covers.
type ipv4Fragment struct {
	start int
	data  []byte
}

// ipv4Frag is a fragment's header, read by parseFragment.
type ipv4Frag struct {
	key     datagramKey
	start   int
	more    bool
	payload []byte // the bytes the header announces, without link padding
}

var (
	errFragShort    = errors.New("fragment shorter than its header says")
	errFragTiny     = errors.New("non-final fragment of fewer than 8 bytes")
	errFragOffset   = errors.New("fragment offset past the largest datagram")
	errFragOverrun  = errors.New("fragment ends past the largest datagram")
	errFragEmpty    = errors.New("fragment without a whole 8-byte unit")
	errFragOverlap  = errors.New("fragment overlaps another one")
	errFragEnd      = errors.New("final fragment does not end the datagram")
	errFragBeyond   = errors.New("fragment beyond the final one")
	errFragTooMany  = errors.New("datagram of more than 8192 fragments")
	errFragNotIPv4  = errors.New("not an IPv4 fragment")
	errFragNotWhole = errors.New("reassembled datagram has a hole")
)

// parseFragment reads the header of ip, an IPv4 packet that
// decodeSegment found to be a fragment (more-fragments set or an
// offset), and checks what a receiver checks before keeping it.
func parseFragment(ip []byte) (f ipv4Frag, err error) {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return f, errFragNotIPv4
	}
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if ihl < 20 || len(ip) < ihl || total < ihl {
		return f, errFragNotIPv4
	}
	copy(f.key.src[:], ip[12:16])
	copy(f.key.dst[:], ip[16:20])
	f.key.id, f.key.proto = binary.BigEndian.Uint16(ip[4:6]), ip[9]
	flagsOff := binary.BigEndian.Uint16(ip[6:8])
	f.more = flagsOff&0x2000 != 0
	off := int(flagsOff & 0x1fff)
	size := total - ihl
	switch {
	case len(ip) < total:
		// A capture cut short, or a forged length: a receiver never
		// sees the bytes, and kept they would shadow the real fragment.
		return f, errFragShort
	case f.more && size < fragmentUnit:
		return f, errFragTiny
	case off > maxFragmentOffset:
		return f, errFragOffset
	case off*fragmentUnit+total > maxDatagram:
		return f, errFragOverrun
	}
	f.start, f.payload = off*fragmentUnit, ip[ihl:total]
	return f, nil
}

// add keeps fragment f (its payload copied) and reports whether the
// datagram is now complete. An error means the fragments contradict each
// other and the datagram is to be dropped, as a receiver drops it. A
// repeat of bytes already held is ignored.
func (d *ipv4Datagram) add(f *ipv4Frag) (complete bool, err error) {
	size := len(f.payload)
	if f.more {
		// Only whole 8-byte units of a non-final fragment count.
		size &^= fragmentUnit - 1
	}
	if size <= 0 {
		return false, errFragEmpty
	}
	start, end := f.start, f.start+size
	// The held fragments [i, j) share bytes with this one.
	i, _ := slices.BinarySearchFunc(d.frags, start, func(h ipv4Fragment, s int) int {
		if h.start+len(h.data) <= s {
			return -1
		}
		return 1
	})
	j := i
	for j < len(d.frags) && d.frags[j].start < end {
		j++
	}
	if i < j {
		if d.covers(i, j, start, end) {
			return false, nil
		}
		return false, errFragOverlap
	}
	switch {
	case !f.more:
		if end < d.end || d.final && end != d.end {
			return false, errFragEnd
		}
		d.final, d.end = true, end
	case end > d.end:
		if d.final {
			return false, errFragBeyond
		}
		d.end = end
	}
	if len(d.frags) >= maxFragments {
		return false, errFragTooMany
	}
	d.frags = slices.Insert(d.frags, i, ipv4Fragment{start: start, data: slices.Clone(f.payload[:size])})
	d.have += size
	return d.final && d.have == d.end, nil
}

// covers reports whether the held fragments [i, j) hold every byte of
// [start, end) without a gap.
func (d *ipv4Datagram) covers(i, j, start, end int) bool {
	at := start
	for _, h := range d.frags[i:j] {
		if h.start > at {
			return false
		}
		at = max(at, h.start+len(h.data))
	}
	return at >= end
}

// payload joins the fragments of a complete datagram.
func (d *ipv4Datagram) payload() ([]byte, error) {
	b := make([]byte, 0, d.end)
	for _, h := range d.frags {
		if h.start != len(b) {
			return nil, errFragNotWhole
		}
		b = append(b, h.data...)
	}
	if len(b) != d.end {
		return nil, errFragNotWhole
	}
	return b, nil
}
