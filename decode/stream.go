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
type Stream struct {
	buf []byte
	// Pos is the stream offset of the first byte Push will return.
	Pos int64
	// hold charges what is buffered to the memory budget (see Reserve).
	hold Hold
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
	if len(s.buf) == 0 {
		return data
	}
	s.buf = append(s.buf, data...)
	return s.buf
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
