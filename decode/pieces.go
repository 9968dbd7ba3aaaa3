package decode

import "bytes"

// Pieces is a message gathered from the frames that carried it without
// copying it into one slice: its pieces, in order, are slices of large
// frames' unit bytes (which nobody modifies after emission) or chunks of
// small frames' bytes copied. A message of many large frames is then
// copied once (by [Pieces.AppendTo], to the size it has at last) or not at
// all, where appending each frame to one slice copied every byte several
// times as the slice grew. The zero Pieces is empty.
type Pieces struct {
	list [][]byte
	n    int // bytes in all
	// owned is the bytes copied into chunks of the pieces' own, chunks
	// their capacity in all; ownedLast says the last piece is such a
	// chunk, with room to grow in place.
	owned, chunks int
	ownedLast     bool
}

// Add appends q and charges hold h (for owner, on account a, as
// [Hold.Grow] does) what keeping it costs; false, keeping nothing, when the
// budget refuses.
//
// When shared, q is part of bytes that are never modified and hold nothing
// else worth freeing (a unit's Raw allocated for it alone): it is kept as
// a slice of them, and charged its length, what keeping it keeps alive.
// Otherwise (a small frame's bytes, sharing a slab with other units) q is
// copied into a chunk of p's own, which grows in place while the pieces
// end with it; a new chunk is made as large as keeps the chunks' capacity
// within twice what was copied (about as large as all copied before, at
// least len(q), at most limit). The chunks' capacity is what is charged:
// however large the message claims to be, it stays within twice what
// was received. The list of pieces is not charged: a shared piece is over 2 KiB
// (rawCarved in the decoders) and costs its slice header in the list,
// under 2.5% of it with the list's spare capacity, which is less than
// append's spare capacity of the one slice the bytes were copied into
// before; charging exactly what is kept also leaves the budget's verdicts
// (which delivery is evicted when) as they were.
func (p *Pieces) Add(q []byte, shared bool, limit int, h *Hold, a *Account, owner Holder) bool {
	if len(q) == 0 {
		return true
	}
	k := len(p.list)
	if p.ownedLast && !shared {
		if last := p.list[k-1]; cap(last)-len(last) >= len(q) {
			p.list[k-1] = append(last, q...)
			p.n += len(q)
			p.owned += len(q)
			return true
		}
	}
	c := len(q)
	if !shared {
		c = max(len(q), min(2*(p.owned+len(q))-p.chunks, limit))
	}
	if !h.Grow(a, owner, int64(c)) {
		return false
	}
	if shared {
		p.list = append(p.list, q)
	} else {
		p.list = append(p.list, append(make([]byte, 0, c), q...))
		p.owned += len(q)
		p.chunks += c
	}
	p.ownedLast = !shared
	p.n += len(q)
	return true
}

// AddRef appends q, which is stable input (see Options.StableInput):
// kept as it is, it costs no memory of the decoder's, and is charged
// nothing.
func (p *Pieces) AddRef(q []byte) {
	if len(q) == 0 {
		return
	}
	p.list = append(p.list, q[:len(q):len(q)])
	p.ownedLast = false
	p.n += len(q)
}

// Copied reports whether some of the bytes were copied into chunks of
// the pieces' own (see Add), rather than kept where they were.
func (p *Pieces) Copied() bool { return p.chunks > 0 }

// Len is the number of bytes kept. Len, Slices, AppendTo and Join take
// nil Pieces as empty ones.
func (p *Pieces) Len() int {
	if p == nil {
		return 0
	}
	return p.n
}

// Slices returns the pieces in order; they are not to be modified.
func (p *Pieces) Slices() [][]byte {
	if p == nil {
		return nil
	}
	return p.list
}

// AppendTo appends the bytes kept to b.
func (p *Pieces) AppendTo(b []byte) []byte {
	for _, q := range p.Slices() {
		b = append(b, q...)
	}
	return b
}

// Join returns the bytes kept in one slice: the piece itself when there is
// one (not to be modified), else a copy that the caller owns (fresh).
func (p *Pieces) Join() (b []byte, fresh bool) {
	if p == nil {
		return nil, false
	}
	switch len(p.list) {
	case 0:
		return nil, false
	case 1:
		return p.list[0], false
	}
	return bytes.Join(p.list, nil), true
}

// Concat returns a new slice of the bytes kept followed by tail (not
// zeroed before it is filled, as bytes.Join makes it).
func (p *Pieces) Concat(tail []byte) []byte {
	return bytes.Join(append(p.list[:len(p.list):len(p.list)], tail), nil)
}

// PiecesOf returns Pieces holding b alone (nothing when b is empty), as a
// message thawed from a store is kept.
func PiecesOf(b []byte) Pieces {
	if len(b) == 0 {
		return Pieces{}
	}
	return Pieces{list: [][]byte{b}, n: len(b)}
}
