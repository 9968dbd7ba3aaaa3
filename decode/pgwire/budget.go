package pgwire

import (
	"encoding/binary"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// What the compression state charges to the memory budget (--max-memory).
const (
	// zstdRingExtra is what klauspost's streaming decoder allocates past
	// the window: room for two blocks ahead of the history ring.
	zstdRingExtra = 2 * (128<<10 + 64)
	// lz4Charge covers an LZ4 context: the 64 KiB dictionary and a
	// partial block and a decoded block of at most 4 MiB each.
	lz4Charge = 64<<10 + 8<<20
	// kidCharge is what one inner unit held for its container costs
	// besides its bytes (the Unit and its slab share).
	kidCharge = 256
	// maxHeldKids bounds the inner units held so that the container's
	// summary can count them: past it, the container is emitted and its
	// messages follow as they are inflated.
	maxHeldKids = 4096
)

// zstdWindow reads the window size a zstd frame header declares (RFC
// 8878 §3.1.1.1.2), and reports false when b does not hold one.
func zstdWindow(b []byte) (int64, bool) {
	if len(b) < 6 || [4]byte(b[:4]) != [4]byte(zstdMagic) {
		return 0, false
	}
	fhd := b[4]
	if fhd&0x20 == 0 { // not single segment: Window_Descriptor follows
		wd := b[5]
		base := int64(1) << (10 + wd>>3)
		return base + base/8*int64(wd&7), true
	}
	// Single segment: the window is the frame content size.
	p := 5 + [4]int{0, 1, 2, 4}[fhd&3]
	switch fhd >> 6 {
	case 0:
		if len(b) < p+1 {
			return 0, false
		}
		return int64(b[p]), true
	case 1:
		if len(b) < p+2 {
			return 0, false
		}
		return int64(binary.LittleEndian.Uint16(b[p:])) + 256, true
	case 2:
		if len(b) < p+4 {
			return 0, false
		}
		return int64(binary.LittleEndian.Uint32(b[p:])), true
	default:
		if len(b) < p+8 {
			return 0, false
		}
		v := binary.LittleEndian.Uint64(b[p:])
		if v > 1<<40 {
			v = 1 << 40
		}
		return int64(v), true
	}
}

// maxWindow is the largest zstd window a context may use: maxZstdWindow,
// or less when the budget's share per connection is smaller.
func (c *compression) maxWindow() int {
	w := int64(maxZstdWindow)
	if b := c.dec.opt.Budget; b != nil && b.Share() > 0 && b.Share()-zstdRingExtra < w {
		w = max(b.Share()-zstdRingExtra, 1<<10)
	}
	return int(w)
}

// chargeContext grows the context's hold to what a payload starting a new
// frame needs; it returns why it could not, or "".
func (c *compression) chargeContext(alg byte, data []byte) string {
	c.ctxHold.Kind = decode.HoldWindow // evicted after partial state unless its connection is idle
	var need int64
	switch alg {
	case CompressionZstd:
		w, ok := zstdWindow(data)
		if !ok {
			return ""
		}
		if w > maxZstdWindow {
			return "" // klauspost refuses the frame itself
		}
		need = w + zstdRingExtra
		if b := c.dec.opt.Budget; b != nil && b.Share() > 0 && need > b.Share() {
			c.ctxHold.Grow(c.dec.acct, c, need) // refused, and counted so
			return "pgsql: zstd window of " + decode.FormatSize(w) + " exceeds the share of the memory budget one connection may hold (" +
				decode.FormatSize(b.Share()) + " of --max-memory " + decode.FormatSize(b.Limit()) + ")"
		}
	case CompressionLZ4:
		need = lz4Charge
	default:
		return ""
	}
	if more := need - c.ctxHold.Size(); more > 0 && !c.ctxHold.Grow(c.dec.acct, c, more) {
		return "pgsql: " + AlgorithmName(alg) + " context of " + decode.FormatSize(need) + " refused: the memory budget (--max-memory) has no room for it"
	}
	return ""
}

// Evict implements [decode.Holder]: the budget took back the context, a
// partial inner message or the inner units held for a container.
func (c *compression) Evict(h *decode.Hold, why string) {
	switch h {
	case &c.ctxHold:
		what := "the " + AlgorithmName(c.alg) + " decompression context"
		c.lose("dropped by the memory budget")
		c.dec.warning(decode.DirB, "memory budget: "+AlgorithmName(c.alg)+" context dropped", "pgsql: "+what+" dropped: "+why+"; its later CompressedMessages are not decompressed until a new frame")
	case &c.partHold:
		a := &c.asm
		if a.part != nil {
			a.skip = int64(cap(a.part) - len(a.part))
			c.dec.warning(decode.DirB, "memory budget: compressed "+MessageName(a.part[0], false)+" dropped", "pgsql: a compressed "+MessageName(a.part[0], false)+" of "+strconv.Itoa(cap(a.part))+" bytes being reassembled dropped: "+why)
			a.part = nil
		}
	}
}

// warning emits a unit of type "warning" on the connection: what the
// budget dropped, said where it happened.
func (d *Decoder) warning(dir decode.Dir, summary, msg string) {
	u := &decode.Unit{Conn: d.conn, Dir: dir, Proto: decode.ProtoPgSQL, Type: "warning", Summary: summary, Offset: d.dir[dir].s.Pos}
	u.SetTime(d.last)
	u.Warn(msg)
	d.emit(u)
}

var _ decode.Holder = (*compression)(nil)
