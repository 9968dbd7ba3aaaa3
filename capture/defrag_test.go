package capture

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/ip4defrag"
	"github.com/gopacket/gopacket/layers"
)

// ipv4Fragment4 builds an IPv4 fragment of datagram id carrying payload
// at byte offset off (a multiple of 8 is not enforced: the tests make
// bad ones too).
func ipv4Fragment4(id uint16, off int, more bool, payload []byte) []byte {
	b := make([]byte, 20+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], id)
	ff := uint16(off / 8)
	if more {
		ff |= 0x2000
	}
	binary.BigEndian.PutUint16(b[6:], ff)
	b[8], b[9] = 64, 6
	copy(b[12:], []byte{10, 0, 0, 1})
	copy(b[16:], []byte{10, 0, 0, 2})
	copy(b[20:], payload)
	return b
}

// ownDefrag applies the assembler's use of defrag.go to one fragment:
// the datagram it completes, or nil; dropped says the datagram's
// fragments were dropped.
func ownDefrag(table map[datagramKey]*ipv4Datagram, ip []byte) (whole []byte, dropped bool) {
	f, err := parseFragment(ip)
	if err == errFragNotIPv4 {
		return nil, false
	}
	if err != nil {
		delete(table, f.key)
		return nil, true
	}
	dg := table[f.key]
	if dg == nil {
		dg = &ipv4Datagram{}
		table[f.key] = dg
	}
	complete, err := dg.add(&f)
	if err != nil || complete {
		delete(table, f.key)
	}
	if err != nil {
		return nil, true
	}
	if complete {
		p, err := dg.payload()
		if err != nil {
			return nil, true
		}
		return p, false
	}
	return nil, false
}

// TestDefragAgreesWithIP4Defrag feeds random fragment sequences (in and
// out of order, repeated, overlapping, cut short, misaligned, beyond the
// final fragment, two final fragments) to defrag.go and to gopacket's
// ip4defrag, which wiretap used before: after every fragment both must
// agree on whether a datagram completed, with the same bytes, or was
// dropped.
func TestDefragAgreesWithIP4Defrag(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	completed, dropped := 0, 0
	for trial := range 20000 {
		theirs := ip4defrag.NewIPv4Defragmenter()
		ours := make(map[datagramKey]*ipv4Datagram)
		payload := make([]byte, 8+rng.IntN(600))
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		// Cut points, mostly multiples of 8.
		var cuts []int
		for at := 0; at < len(payload); {
			n := 8 * (1 + rng.IntN(12))
			if rng.IntN(15) == 0 {
				n = 1 + rng.IntN(20)
			}
			cuts = append(cuts, at)
			at += n
		}
		var frags [][]byte
		for i, at := range cuts {
			end := len(payload)
			if i+1 < len(cuts) {
				end = cuts[i+1]
			}
			frags = append(frags, ipv4Fragment4(uint16(trial), at, end < len(payload), payload[at:end]))
		}
		// Mischief.
		for range rng.IntN(4) {
			switch rng.IntN(7) {
			case 0: // a repeat
				frags = append(frags, slices.Clone(frags[rng.IntN(len(frags))]))
			case 1: // an overlap with other bytes
				at := 8 * rng.IntN(len(payload)/8+1)
				n := 8 * (1 + rng.IntN(4))
				junk := make([]byte, n)
				for i := range junk {
					junk[i] = byte(rng.Uint32())
				}
				frags = append(frags, ipv4Fragment4(uint16(trial), at, rng.IntN(2) == 0, junk))
			case 2: // cut short by the capture
				i := rng.IntN(len(frags))
				if len(frags[i]) > 21 {
					frags[i] = frags[i][:20+rng.IntN(len(frags[i])-20)]
				}
			case 3: // lost
				if len(frags) > 1 {
					i := rng.IntN(len(frags))
					frags = slices.Delete(frags, i, i+1)
				}
			case 4: // beyond the end
				frags = append(frags, ipv4Fragment4(uint16(trial), len(payload)+8*rng.IntN(3), rng.IntN(2) == 0, []byte("12345678")))
			case 5: // tiny non-final
				frags = append(frags, ipv4Fragment4(uint16(trial), 8*rng.IntN(len(payload)/8+1), true, []byte("abc")))
			case 6: // link-layer padding after a fragment
				i := rng.IntN(len(frags))
				frags[i] = append(slices.Clone(frags[i]), 0, 0, 0, 0, 0, 0)
			}
		}
		rng.Shuffle(len(frags), func(i, j int) {
			if rng.IntN(3) == 0 {
				frags[i], frags[j] = frags[j], frags[i]
			}
		})
		for k, ip := range frags {
			if binary.BigEndian.Uint16(ip[6:8])&0x3fff == 0 {
				continue // not a fragment: decodeSegment decodes it as it is
			}
			in := new(layers.IPv4)
			if err := in.DecodeFromBytes(slices.Clone(ip), gopacket.NilDecodeFeedback); err != nil {
				continue // not a packet ip4defrag is given (the assembler did the same)
			}
			out, terr := theirs.DefragIPv4WithTimestamp(in, time.Unix(0, 0))
			got, gdrop := ownDefrag(ours, ip)
			switch {
			case terr != nil && !gdrop:
				t.Fatalf("trial %d fragment %d: ip4defrag dropped the datagram (%v), defrag.go did not", trial, k, terr)
			case terr == nil && gdrop:
				t.Fatalf("trial %d fragment %d: defrag.go dropped the datagram, ip4defrag did not", trial, k)
			case (out != nil) != (got != nil):
				t.Fatalf("trial %d fragment %d: completed: ip4defrag %v, defrag.go %v", trial, k, out != nil, got != nil)
			case out != nil && !bytes.Equal(out.Payload, got):
				t.Fatalf("trial %d fragment %d: payloads differ (%d and %d bytes)", trial, k, len(out.Payload), len(got))
			}
			if got != nil {
				completed++
			}
			if gdrop {
				dropped++
			}
		}
	}
	if completed < 1000 || dropped < 1000 {
		t.Fatalf("not varied enough: %d completed, %d dropped", completed, dropped)
	}
	t.Logf("%d datagrams completed, %d drops, the same in both", completed, dropped)
}

// FuzzDefrag reads its input as a sequence of fragments of one datagram
// (three bytes each: offset in 8-byte units, flags, payload length; flag
// 1 is more-fragments, flag 2 cuts the fragment short as a snap length
// would, flag 4 changes its bytes) and checks defrag.go against
// ip4defrag after every one, as TestDefragAgreesWithIP4Defrag does.
func FuzzDefrag(f *testing.F) {
	f.Add([]byte{0, 1, 16, 2, 0, 8})
	f.Add([]byte{1, 0, 8, 0, 1, 8})
	f.Add([]byte{0, 1, 16, 1, 1, 16, 0, 5, 8, 3, 0, 3})
	f.Add([]byte{0, 1, 3, 0, 0, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		theirs := ip4defrag.NewIPv4Defragmenter()
		ours := make(map[datagramKey]*ipv4Datagram)
		for k := 0; k+3 <= len(data) && k < 3*64; k += 3 {
			off, flags, n := int(data[k])*8, data[k+1], int(data[k+2])
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(off + i)
				if flags&4 != 0 {
					payload[i] ^= 0x5a
				}
			}
			ip := ipv4Fragment4(7, off, flags&1 != 0, payload)
			if flags&2 != 0 && len(ip) > 20 {
				ip = ip[:20+n/2]
			}
			if binary.BigEndian.Uint16(ip[6:8])&0x3fff == 0 {
				continue
			}
			in := new(layers.IPv4)
			if err := in.DecodeFromBytes(slices.Clone(ip), gopacket.NilDecodeFeedback); err != nil {
				continue
			}
			out, terr := theirs.DefragIPv4WithTimestamp(in, time.Unix(0, 0))
			got, gdrop := ownDefrag(ours, ip)
			if (terr != nil) != gdrop || (out != nil) != (got != nil) || out != nil && !bytes.Equal(out.Payload, got) {
				t.Fatalf("fragment %d (offset %d, flags %d, %d bytes): ip4defrag: dropped %v, completed %v; defrag.go: dropped %v, completed %v",
					k/3, off, flags, n, terr != nil, out != nil, gdrop, got != nil)
			}
		}
	})
}
