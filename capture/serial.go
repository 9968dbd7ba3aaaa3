package capture

import (
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Serial lets sources that have connections instead of packets (the proxy,
// the embedded broker) feed one Handler from many goroutines: it numbers
// their flows from 1 in order of NewFlow and passes the calls on one at a
// time, so the Handler sees them in the order they were made.
//
// A Serial may also have a recorder (the -w file, see [Serial.SetRecorder]),
// which sees every call as h does.
type Serial struct {
	mu     sync.Mutex
	h      Handler
	rec    Handler
	nextID atomic.Int64 // apart from mu: numbering never waits for a handler
}

// NewSerial returns a Serial feeding h; h itself when h is a Serial, so
// that sources wrapping what they are given share its numbering.
func NewSerial(h Handler) *Serial {
	if s, ok := h.(*Serial); ok {
		return s
	}
	return &Serial{h: h}
}

// SetRecorder gives s a recorder: a Handler safe for concurrent use that
// sees every call after h's. A [Decoupled] feeding s gives the recorder a
// buffer and goroutine of its own instead, so that a slow decoder does not
// hold the recording back. Call it before any source starts.
func (s *Serial) SetRecorder(rec Handler) { s.rec = rec }

func (s *Serial) recorder() Handler { return s.rec }

func (s *Serial) decodeData(f *Flow, fromA bool, data []byte, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Data(f, fromA, data, t)
}

func (s *Serial) decodeGap(f *Flow, fromA bool, n int, reason string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ExplainGap(s.h, f, fromA, n, reason, t)
}

func (s *Serial) decodeNote(f *Flow, fromA bool, b []byte, t time.Time) {
	kind, msg, _ := strings.Cut(string(b), "\x00")
	s.mu.Lock()
	defer s.mu.Unlock()
	NoteOn(s.h, f, fromA, kind, msg, t)
}

// flushIdle tells a handler that holds what it is given ([Flusher]) that
// nothing more is coming for now.
func (s *Serial) flushIdle() {
	if fl, ok := s.h.(Flusher); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		fl.Flush()
	}
}

func (s *Serial) decodeClose(f *Flow, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h.Close(f, t)
}

// NewFlow numbers a new connection from client a to server b, first seen
// at t. The Flow has SYN set: a source that accepted the connection knows
// its client.
func (s *Serial) NewFlow(a, b netip.AddrPort, t time.Time) *Flow {
	return &Flow{ID: int(s.nextID.Add(1)), A: a, B: b, SYN: true, First: t}
}

// Data implements [Handler].
func (s *Serial) Data(f *Flow, fromA bool, data []byte, t time.Time) {
	s.mu.Lock()
	s.h.Data(f, fromA, data, t)
	s.mu.Unlock()
	if s.rec != nil {
		s.rec.Data(f, fromA, data, t)
	}
}

// Gap implements [Handler].
func (s *Serial) Gap(f *Flow, fromA bool, n int, t time.Time) {
	s.mu.Lock()
	s.h.Gap(f, fromA, n, t)
	s.mu.Unlock()
	if s.rec != nil {
		s.rec.Gap(f, fromA, n, t)
	}
}

// GapBecause implements [GapExplainer], passing the reason on to a
// handler that shows it.
func (s *Serial) GapBecause(f *Flow, fromA bool, n int, reason string, t time.Time) {
	s.mu.Lock()
	ExplainGap(s.h, f, fromA, n, reason, t)
	s.mu.Unlock()
	if s.rec != nil {
		ExplainGap(s.rec, f, fromA, n, reason, t)
	}
}

// Note implements [Noter], passing the note on to a handler that shows
// notes (the recorder is not told).
func (s *Serial) Note(f *Flow, fromA bool, kind, msg string, t time.Time) {
	s.mu.Lock()
	NoteOn(s.h, f, fromA, kind, msg, t)
	s.mu.Unlock()
}

// Close implements [Handler].
func (s *Serial) Close(f *Flow, t time.Time) {
	s.mu.Lock()
	s.h.Close(f, t)
	s.mu.Unlock()
	if s.rec != nil {
		s.rec.Close(f, t)
	}
}

// MultiHandler returns a Handler that passes every call to each of hs in
// turn, like io.MultiWriter: to decode a live capture and write it with
// pcapng.Synth at once, say.
func MultiHandler(hs ...Handler) Handler {
	return multiHandler(append([]Handler(nil), hs...))
}

type multiHandler []Handler

func (m multiHandler) Data(f *Flow, fromA bool, data []byte, t time.Time) {
	for _, h := range m {
		h.Data(f, fromA, data, t)
	}
}

func (m multiHandler) Gap(f *Flow, fromA bool, n int, t time.Time) {
	for _, h := range m {
		h.Gap(f, fromA, n, t)
	}
}

func (m multiHandler) GapBecause(f *Flow, fromA bool, n int, reason string, t time.Time) {
	for _, h := range m {
		ExplainGap(h, f, fromA, n, reason, t)
	}
}

func (m multiHandler) Close(f *Flow, t time.Time) {
	for _, h := range m {
		h.Close(f, t)
	}
}
