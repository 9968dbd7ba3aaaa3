package pcapng

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// DefaultMSS is the segment size Synth uses when MSS is zero: what fits an
// Ethernet MTU of 1500 under IPv4 and TCP headers without options.
const DefaultMSS = 1460

// Synth is a [capture.Handler] that writes each flow's bytes to a
// PacketWriter as
// the TCP packets that would have carried them: a three-way handshake
// before the first bytes, segments of at most MSS bytes with correct
// sequence and acknowledgement numbers and checksums, and a FIN from each
// side on Close. A Gap of known length advances the sequence numbers by it,
// so the capture shows the bytes as missing. Flows whose two ends have
// different address families are written as IPv6, IPv4 addresses mapped.
//
// Every packet of one call carries the call's time. Synth is not safe for
// concurrent use; after a write error it does nothing more, and Err
// returns the error.
type Synth struct {
	// MSS is the largest payload per segment (DefaultMSS when zero).
	MSS int

	w     PacketWriter
	flows map[int]*synthFlow
	buf   []byte
	pkt   capture.Packet
	err   error
}

// NewSynth returns a Synth writing to w, a *Writer or a *PcapWriter.
func NewSynth(w PacketWriter) *Synth {
	return &Synth{w: w, flows: make(map[int]*synthFlow)}
}

// Err returns the first write error.
func (s *Synth) Err() error { return s.err }

type synthFlow struct {
	addr [2]netip.AddrPort // [0]: A, [1]: B, in one family
	v6   bool
	next [2]uint32 // next sequence number from A, from B
	ipID [2]uint16
}

var synthMAC = [2][6]byte{
	{0x02, 0, 0, 0, 0, 0x0a}, // A: locally administered
	{0x02, 0, 0, 0, 0, 0x0b}, // B
}

func (s *Synth) flow(f *capture.Flow, t time.Time) *synthFlow {
	if sf := s.flows[f.ID]; sf != nil {
		return sf
	}
	a, b := f.A.Addr().Unmap(), f.B.Addr().Unmap()
	sf := &synthFlow{}
	switch {
	case !a.IsValid() && !b.IsValid():
		a, b = netip.AddrFrom4([4]byte{}), netip.AddrFrom4([4]byte{})
	case !a.IsValid():
		a = netip.IPv6Unspecified()
		if b.Is4() {
			a = netip.AddrFrom4([4]byte{})
		}
	case !b.IsValid():
		b = netip.IPv6Unspecified()
		if a.Is4() {
			b = netip.AddrFrom4([4]byte{})
		}
	}
	if a.Is4() != b.Is4() {
		a, b = netip.AddrFrom16(a.As16()), netip.AddrFrom16(b.As16())
	}
	sf.v6 = !a.Is4()
	sf.addr = [2]netip.AddrPort{netip.AddrPortFrom(a, f.A.Port()), netip.AddrPortFrom(b, f.B.Port())}
	// Deterministic initial sequence numbers, different per flow.
	isnA := uint32(f.ID) * 0x9e3779b1
	isnB := isnA ^ 0x5bd1e995
	s.flows[f.ID] = sf
	mssOpt := []byte{2, 4, 0, 0} // RFC 9293 section 3.2: maximum segment size option
	binary.BigEndian.PutUint16(mssOpt[2:], uint16(s.mss()))
	s.write(sf, 0, isnA, 0, tcpSYN, mssOpt, nil, t)
	s.write(sf, 1, isnB, isnA+1, tcpSYN|tcpACK, mssOpt, nil, t)
	sf.next = [2]uint32{isnA + 1, isnB + 1}
	s.write(sf, 0, sf.next[0], sf.next[1], tcpACK, nil, nil, t)
	return sf
}

func (s *Synth) mss() int {
	if s.MSS <= 0 {
		return DefaultMSS
	}
	return min(s.MSS, 65535-60-60)
}

// TCP header flags (RFC 9293 section 3.1).
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpPSH = 0x08
	tcpACK = 0x10
)

// Data writes data as segments from A (fromA) or from B.
func (s *Synth) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	if s.err != nil {
		return
	}
	sf := s.flow(f, t)
	d := dir(fromA)
	mss := s.mss()
	for len(data) > 0 && s.err == nil {
		n := min(len(data), mss)
		s.write(sf, d, sf.next[d], sf.next[1-d], tcpACK|tcpPSH, nil, data[:n], t)
		sf.next[d] += uint32(n)
		data = data[n:]
	}
}

// Gap advances the sequence numbers of that direction by n when n > 0.
func (s *Synth) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	if s.err != nil {
		return
	}
	sf := s.flow(f, t)
	if n > 0 {
		sf.next[dir(fromA)] += uint32(n)
	}
}

// Close writes a FIN from each side and the last ACK.
func (s *Synth) Close(f *capture.Flow, t time.Time) {
	if s.err != nil {
		return
	}
	sf := s.flow(f, t)
	s.write(sf, 0, sf.next[0], sf.next[1], tcpFIN|tcpACK, nil, nil, t)
	sf.next[0]++
	s.write(sf, 1, sf.next[1], sf.next[0], tcpFIN|tcpACK, nil, nil, t)
	sf.next[1]++
	s.write(sf, 0, sf.next[0], sf.next[1], tcpACK, nil, nil, t)
	delete(s.flows, f.ID)
}

func dir(fromA bool) int {
	if fromA {
		return 0
	}
	return 1
}

// write builds one Ethernet frame from end d of sf and writes it.
func (s *Synth) write(sf *synthFlow, d int, seq, ack uint32, flags uint8, opts, payload []byte, t time.Time) {
	if s.err != nil {
		return
	}
	src, dst := sf.addr[d], sf.addr[1-d]
	ipLen := 20
	if sf.v6 {
		ipLen = 40
	}
	tcpLen := 20 + len(opts)
	n := 14 + ipLen + tcpLen + len(payload)
	if cap(s.buf) < n {
		s.buf = make([]byte, n, max(n, 2048))
	}
	b := s.buf[:n]
	clear(b[:14+ipLen+tcpLen])

	// Ethernet II.
	copy(b[0:6], synthMAC[1-d][:])
	copy(b[6:12], synthMAC[d][:])
	ip := b[14 : 14+ipLen]
	tcp := b[14+ipLen : 14+ipLen+tcpLen]
	if sf.v6 {
		binary.BigEndian.PutUint16(b[12:14], 0x86dd)
		// RFC 8200 section 3.
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:6], uint16(tcpLen+len(payload)))
		ip[6] = 6 // TCP
		ip[7] = 64
		s16, d16 := src.Addr().As16(), dst.Addr().As16()
		copy(ip[8:24], s16[:])
		copy(ip[24:40], d16[:])
	} else {
		binary.BigEndian.PutUint16(b[12:14], 0x0800)
		// RFC 791 section 3.1.
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:4], uint16(ipLen+tcpLen+len(payload)))
		binary.BigEndian.PutUint16(ip[4:6], sf.ipID[d])
		sf.ipID[d]++
		ip[6] = 0x40 // don't fragment
		ip[8] = 64
		ip[9] = 6
		s4, d4 := src.Addr().As4(), dst.Addr().As4()
		copy(ip[12:16], s4[:])
		copy(ip[16:20], d4[:])
		binary.BigEndian.PutUint16(ip[10:12], ^fold(sum(ip, 0)))
	}

	// RFC 9293 section 3.1.
	binary.BigEndian.PutUint16(tcp[0:2], src.Port())
	binary.BigEndian.PutUint16(tcp[2:4], dst.Port())
	binary.BigEndian.PutUint32(tcp[4:8], seq)
	if flags&tcpACK != 0 {
		binary.BigEndian.PutUint32(tcp[8:12], ack)
	}
	tcp[12] = byte(tcpLen/4) << 4
	tcp[13] = flags
	binary.BigEndian.PutUint16(tcp[14:16], 65535) // window
	copy(tcp[20:], opts)
	copy(b[14+ipLen+tcpLen:], payload)

	// Checksum over the pseudo-header (RFC 9293 section 3.1, RFC 8200
	// section 8.1), the header and the payload.
	var ps uint32
	segLen := uint32(tcpLen + len(payload))
	if sf.v6 {
		ps = sum(ip[8:40], 0) + segLen>>16 + segLen&0xffff + 6
	} else {
		ps = sum(ip[12:20], 0) + segLen + 6
	}
	binary.BigEndian.PutUint16(tcp[16:18], ^fold(sum(b[14+ipLen:], ps)))

	s.pkt = capture.Packet{Link: capture.LinkTypeEthernet, Time: t, Data: b, Length: n}
	s.err = s.w.WritePacket(&s.pkt)
}

// sum adds b as big-endian 16-bit words to acc (RFC 1071).
func sum(b []byte, acc uint32) uint32 {
	for len(b) >= 2 {
		acc += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	return acc
}

func fold(acc uint32) uint16 {
	for acc > 0xffff {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}
