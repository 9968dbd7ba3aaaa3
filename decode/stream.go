package decode

// Stream accumulates the bytes of one direction until a whole unit is
// available. Decoders use it like this:
//
//	buf := s.Push(data)      // buffered bytes followed by data
//	n := parse(buf)          // consume whole units from the front
//	s.Keep(buf[n:])          // remember the unconsumed tail
//
// When nothing is buffered, Push returns data itself, so a stream whose
// segments hold whole frames is decoded without copying.
//
// A decoder that knows the size of the unit its buffered bytes begin
// says so with Want. Push then grows the buffer to that size at once,
// and, for stable input (Options.StableInput), Split cuts from the next
// data what completes that unit: fed alone, it makes the buffer exactly
// the unit, whose bytes the decoder may Take; the rest is then fed with
// nothing buffered, so its units keep the input's bytes.
type Stream struct {
	buf []byte
	// Pos is the stream offset of the first byte Push will return.
	Pos int64
	// hold charges what is buffered to the memory budget (see Reserve).
	hold Hold
	// want is the size of the unit the buffered bytes begin, when the
	// decoder said it since the last Push (0: not known).
	want int
	// Arena, when set, gives the buffers a unit is gathered in (see
	// Arena.Bytes): those of units released, when their decoder said
	// they owned them (Arena.Own), instead of fresh memory.
	Arena *Arena
}

// Reserve charges n bytes, what the stream is about to keep (or the size
// of the unit it waits for), to account a, replacing the last
// reservation. It reports false when the memory budget has no room: the
// caller must then not keep them. A stream's reservation is never
// evicted (the bytes are in use); it is given back when the stream is
// emptied (Keep with nothing left, Reset).
func (s *Stream) Reserve(a *Account, n int) bool {
	s.hold.Busy = true
	return s.hold.Resize(a, nil, int64(n))
}

// Push returns the buffered bytes followed by data. The result is valid
// until the next call to Keep or Reset.
func (s *Stream) Push(data []byte) []byte {
	want := s.want
	s.want = 0
	if len(s.buf) == 0 {
		return data
	}
	// Grown to the unit's size at once rather than by append's steps
	// (each a copy of all buffered), when that is at most twice what is
	// then held: a unit's claimed size allocates nothing before its
	// bytes come.
	if n := len(s.buf) + len(data); n > cap(s.buf) && want >= n && want <= 2*n {
		s.buf = append(s.Arena.Bytes(want), s.buf...)
	}
	s.buf = append(s.buf, data...)
	return s.buf
}

// Want says that the bytes about to be kept (see Keep) begin a unit of n
// bytes in all. It holds until the next Push.
func (s *Stream) Want(n int) { s.want = n }

// Split cuts data, the next bytes of the stream, in two: head completes
// the unit the buffered bytes begin (see Want), rest follows it. head is
// empty when nothing is buffered, the unit's size is not known, or data
// does not hold more than the rest of the unit.
func (s *Stream) Split(data []byte) (head, rest []byte) {
	n := s.want - len(s.buf)
	if len(s.buf) == 0 || s.want <= 0 || n <= 0 || n >= len(data) {
		return nil, data
	}
	return data[:n:n], data[n:]
}

// Peek returns the buffered bytes (not to be modified, valid until the
// next Push, Keep or Reset).
func (s *Stream) Peek() []byte { return s.buf }

// Take hands over the bytes the last Push returned, all of them one
// unit's: the caller owns them from now on, and the stream starts a
// buffer of its own for what it keeps next.
func (s *Stream) Take() []byte {
	b := s.buf[:len(s.buf):len(s.buf)]
	s.buf = nil
	return b
}

// Keep records that the bytes of the last Push were consumed up to tail,
// which must be a suffix of what Push returned; tail is copied.
// consumed is the number of bytes consumed from the front.
func (s *Stream) Keep(consumed int, tail []byte) {
	s.Pos += int64(consumed)
	if len(tail) == 0 {
		s.hold.Release()
		s.buf = s.buf[:0]
		if cap(s.buf) > 1<<20 {
			s.buf = nil // don't pin a large buffer after a large frame
		}
		return
	}
	if len(s.buf) > 0 && &tail[0] == &s.buf[len(s.buf)-len(tail)] {
		if len(tail) == len(s.buf) {
			return // nothing consumed: waiting for the rest of a large unit
		}
		n := copy(s.buf, tail)
		s.buf = s.buf[:n]
		return
	}
	if s.Arena != nil && len(tail) > cap(s.buf) {
		// After a Take, or grown past the buffer: a pooled buffer, when
		// there is one, likely has room for the unit tail begins.
		s.buf = s.Arena.Bytes(len(tail))
	}
	s.buf = append(s.buf[:0], tail...)
}

// Buffered reports how many bytes are waiting.
func (s *Stream) Buffered() int { return len(s.buf) }

// Reset drops buffered bytes and advances Pos past skipped bytes (after a
// gap, skip is the gap length plus what was buffered).
func (s *Stream) Reset(skip int64) {
	s.Pos += int64(len(s.buf)) + skip
	s.buf = s.buf[:0]
	s.hold.Release()
}
