package redact

import (
	"bytes"
	"encoding/binary"
	"net/netip"

	"github.com/wiretap-dev/wiretap/capture"
)

// MaxTracked bounds the connections a [Packets] follows at once; past it,
// connections whose exchange is over are forgotten first, then the oldest.
const MaxTracked = 1 << 14

// Packets redacts the TCP segments of a live capture, connection by
// connection, for writing them out. A connection is followed from its SYN;
// its bytes are placed by sequence number, so a retransmission of bytes
// already overwritten is overwritten alike, and a hole in the client's
// bytes before the exchange is over makes every later client byte be
// overwritten. A connection whose SYN was not seen cannot be followed:
// of its segments, those that start with a whole start-ok, secure-ok,
// sasl-init, sasl-response or PostgreSQL 'p' message are redacted, and the
// rest are written as they were. TCP checksums are not recomputed.
type Packets struct {
	conns map[connKey]*tracked
	order []connKey // in order of SYN, for forgetting
	buf   []byte
}

type connKey struct{ client, server netip.AddrPort }

type tracked struct {
	c    *Conn
	isn  [2]uint32 // sequence number of the first payload byte: client, server
	next [2]uint32 // offset of the next byte expected
	has  [2]bool   // isn known
	// masked are the client byte ranges overwritten so far, offsets from
	// isn, for retransmissions.
	masked [][2]uint32
}

// NewPackets returns an empty Packets.
func NewPackets() *Packets {
	return &Packets{conns: make(map[connKey]*tracked)}
}

// Redact returns p with the secrets in its TCP payload overwritten: p
// itself when there were none, else a copy whose Data is valid until the
// next call.
func (r *Packets) Redact(p *capture.Packet) *capture.Packet {
	seg, ok := capture.DecodeTCP(p)
	if !ok {
		return p
	}
	key, side := connKey{seg.Src, seg.Dst}, 0
	t := r.conns[key]
	if t == nil {
		key, side = connKey{seg.Dst, seg.Src}, 1
		t = r.conns[key]
	}
	if seg.SYN {
		if t == nil {
			if seg.ACK { // a SYN-ACK whose SYN was not seen: its receiver is the client
				key, side = connKey{seg.Dst, seg.Src}, 1
			} else {
				key, side = connKey{seg.Src, seg.Dst}, 0
			}
			t = r.track(key)
		}
		t.isn[side], t.has[side], t.next[side] = seg.Seq+1, true, 0
		return p
	}
	if len(seg.Payload) == 0 {
		return p
	}
	if t == nil {
		// First seen mid-stream: no stream to follow, but a segment that
		// starts with a whole credential-carrying message is redacted.
		r.buf = append(r.buf[:0], p.Data...)
		if !midstream(r.buf[len(p.Data)-len(seg.Payload):]) {
			return p
		}
		q := *p
		q.Data = r.buf
		return &q
	}
	if seg.RST || t.c.Done() {
		if seg.RST || seg.FIN {
			r.forget(key)
		}
		return p
	}
	if !t.has[side] {
		// The other side's SYN-ACK was not seen: start at these bytes.
		t.isn[side], t.has[side] = seg.Seq, true
	}
	// Work on a copy: the caller's packet may be shared.
	r.buf = append(r.buf[:0], p.Data...)
	payload := r.buf[len(p.Data)-len(seg.Payload):]
	changed := r.place(t, side, seg.Seq-t.isn[side], payload)
	if seg.FIN {
		defer r.forget(key)
	}
	if !changed {
		return p
	}
	q := *p
	q.Data = r.buf
	return &q
}

// place puts payload at offset off of its direction.
func (r *Packets) place(t *tracked, side int, off uint32, payload []byte) (changed bool) {
	fromClient := side == 0
	n := uint32(len(payload))
	next := t.next[side]
	switch {
	case off == next:
	case int32(off-next) < 0:
		// Retransmitted bytes, wholly or partly: overwrite them as before,
		// then feed what is new.
		old := min(next-off, n)
		switch {
		case fromClient && t.c.client.all:
			for i := range payload[:old] {
				payload[i] = Mask
			}
			changed = true
		case fromClient:
			for _, m := range t.masked {
				for i := max(m[0], off); i < min(m[1], off+old); i++ {
					payload[i-off] = Mask
					changed = true
				}
			}
		}
		if old == n {
			return changed
		}
		payload, off = payload[old:], next
		n -= old
	default:
		t.c.Lost(fromClient)
		t.next[side] = off
	}
	if fromClient && !t.c.client.done {
		before := append([]byte(nil), payload...)
		if t.c.RedactInPlace(true, payload) {
			changed = true
			r.note(t, off, before, payload)
		}
	} else if !fromClient {
		changed = t.c.RedactInPlace(false, payload) || changed
	}
	t.next[side] = off + n
	return changed
}

// note records which bytes of the client's were overwritten.
func (r *Packets) note(t *tracked, off uint32, before, after []byte) {
	for i := 0; i < len(after); {
		if before[i] == after[i] {
			i++
			continue
		}
		j := i
		for j < len(after) && before[j] != after[j] {
			j++
		}
		lo, hi := off+uint32(i), off+uint32(j)
		if k := len(t.masked); k > 0 && t.masked[k-1][1] == lo {
			t.masked[k-1][1] = hi
		} else if len(t.masked) < 64 {
			t.masked = append(t.masked, [2]uint32{lo, hi})
		}
		i = j
	}
}

func (r *Packets) track(key connKey) *tracked {
	if len(r.conns) >= MaxTracked || len(r.order) >= 2*MaxTracked {
		r.evict()
	}
	t := &tracked{c: NewConn()}
	r.conns[key] = t
	r.order = append(r.order, key)
	return t
}

// evict forgets the connections whose exchange is over, or, when none is,
// the oldest half.
func (r *Packets) evict() {
	kept := r.order[:0]
	seen := make(map[connKey]bool, len(r.conns))
	for _, k := range r.order {
		if t := r.conns[k]; t != nil && !t.c.Done() && !seen[k] {
			kept = append(kept, k)
			seen[k] = true
		} else if !seen[k] {
			delete(r.conns, k)
		}
	}
	if len(kept) >= MaxTracked {
		for _, k := range kept[:len(kept)/2] {
			delete(r.conns, k)
		}
		kept = append(kept[:0], kept[len(kept)/2:]...)
	}
	r.order = kept
}

func (r *Packets) forget(key connKey) {
	delete(r.conns, key)
	// r.order is cleaned up by the next evict.
}

// midstream redacts a segment of a connection that is not followed when it
// starts with a whole message that carries credentials, checked strictly
// (lengths that fit, frame-end octets, descriptors), and reports whether
// it did.
func midstream(b []byte) bool {
	c := NewConn()
	s := &c.client
	switch {
	case len(b) >= 12 && b[0] == 1 && b[1] == 0 && b[2] == 0:
		// AMQP 0-9-1 connection.start-ok or secure-ok on channel 0.
		size := int(binary.BigEndian.Uint32(b[3:]))
		if size > len(b)-8 || b[7+size] != 0xce || binary.BigEndian.Uint16(b[7:]) != 10 {
			return false
		}
		if m := binary.BigEndian.Uint16(b[9:]); m != 11 && m != 21 {
			return false
		}
		s.next = c.amqp091Frame
		return s.feed(b[:8+size])
	case len(b) >= 11 && b[4] >= 2 && b[5] == 1:
		// AMQP 1.0 sasl-init or sasl-response.
		size, doff := int(binary.BigEndian.Uint32(b)), int(b[4])*4
		if size > len(b) || doff+3 > size || b[doff] != 0 || b[doff+1] != 0x53 || (b[doff+2] != 0x41 && b[doff+2] != 0x43) {
			return false
		}
		s.next = c.amqp10Frame
		return s.feed(b[:size])
	case len(b) >= 5 && b[0] == 'p':
		n := int(binary.BigEndian.Uint32(b[1:]))
		if n < 4 || n > len(b)-1 {
			return false
		}
		if bytes.HasPrefix(b[5:1+n], []byte("SCRAM-SHA-256")) {
			c.pgAuth = 10
		}
		s.next = c.pgClientMessage
		return s.feed(b[:1+n])
	}
	return false
}
