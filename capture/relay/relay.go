// Package relay carries a [capture.Handler]'s calls from one process to
// another over a byte stream, so that a source that forwards traffic (the
// proxy) can hand what passes to a decoder running in a process of its
// own: the forwarding then shares nothing with the decoder and its user
// interface (no heap, no collector, no scheduler), and the decoding
// process can run at a lower priority than the traffic.
//
// A [Writer] is a Handler (and a [capture.GapExplainer], a
// [capture.Noter] and a [capture.Flusher]) that encodes each call as a
// record; [Read] decodes the records and makes the same calls, in the
// same order, on a Handler in the other process. Log lines of the source
// travel in the same stream ([Writer.Log]).
//
// The stream is a header, "wiretap relay 1\n", and then records: a kind
// octet, the flow's number (uint32), a direction octet (1: from A), the
// time in nanoseconds since the Unix epoch (int64), the length of the
// body (uint32) and the body, all big-endian. The first record of a flow
// is a flow record naming its ends; data records carry the bytes, gap
// records the count and reason, note records the kind and text, and a
// close record ends the flow. Nothing in it is meant to last: both ends
// are the same build of wiretap.
package relay

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// header starts every stream: a reader given something else (a build of
// another version, a stray file descriptor) says so instead of decoding
// noise.
const header = "wiretap relay 1\n"

// Record kinds.
const (
	kindFlow  byte = 'f' // body: SYN octet, A and B as text, NUL-separated
	kindData  byte = 'd' // body: the bytes
	kindGap   byte = 'g' // body: the count (int64), then the reason
	kindNote  byte = 'n' // body: the note's kind, NUL, its text
	kindClose byte = 'c' // no body
	kindLog   byte = 'l' // flow 0; body: one log line
	kindFail  byte = 'e' // flow 0; body: why the source stopped
)

// recordHead is the size of a record before its body.
const recordHead = 1 + 4 + 1 + 8 + 4

// MaxRecord bounds a record's body: a reader refuses larger ones as a
// corrupt stream rather than allocate what a length claims. Writers split
// data into records of at most this.
const MaxRecord = 1 << 20

// Writer encodes Handler calls onto w. It is safe for concurrent use; it
// buffers what it is given and writes it out when its buffer fills, on
// [Writer.Flush] (which a [capture.Decoupled] feeding it calls whenever
// it has handed on all it had) and on [Writer.End]. A write that blocks
// (the reading process is behind) blocks the caller: feed a Writer
// through a [capture.Decoupled], whose bounded buffer turns a reader that
// is too slow into gaps rather than into waiting traffic.
//
// After a write fails (the reader went away) the Writer drops everything
// and [Writer.Err] says why.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	c     io.Closer
	known map[*capture.Flow]bool
	head  [recordHead]byte
	err   error
}

// NewWriter returns a Writer on w, which it closes on [Writer.End] when
// w is an io.Closer.
func NewWriter(w io.Writer) *Writer {
	c, _ := w.(io.Closer)
	rw := &Writer{w: bufio.NewWriterSize(w, 256<<10), c: c, known: make(map[*capture.Flow]bool)}
	_, rw.err = rw.w.WriteString(header)
	return rw
}

// record writes one record; the caller holds mu.
func (w *Writer) record(kind byte, f *capture.Flow, fromA bool, t time.Time, body ...[]byte) {
	if w.err != nil {
		return
	}
	if f != nil && !w.known[f] && kind != kindFlow {
		w.flow(f)
	}
	n := 0
	for _, b := range body {
		n += len(b)
	}
	h := &w.head
	h[0] = kind
	id := uint32(0)
	if f != nil {
		id = uint32(f.ID)
	}
	binary.BigEndian.PutUint32(h[1:], id)
	h[5] = 0
	if fromA {
		h[5] = 1
	}
	ns := int64(0)
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	binary.BigEndian.PutUint64(h[6:], uint64(ns))
	binary.BigEndian.PutUint32(h[14:], uint32(n))
	if _, err := w.w.Write(h[:]); err != nil {
		w.err = err
		return
	}
	for _, b := range body {
		if _, err := w.w.Write(b); err != nil {
			w.err = err
			return
		}
	}
}

// flow announces f; the caller holds mu.
func (w *Writer) flow(f *capture.Flow) {
	w.known[f] = true
	var b []byte
	if f.SYN {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = f.A.AppendTo(b)
	b = append(b, 0)
	b = f.B.AppendTo(b)
	w.record(kindFlow, f, false, f.First, b)
}

// Data implements [capture.Handler].
func (w *Writer) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(data) > 0 {
		n := min(len(data), MaxRecord)
		w.record(kindData, f, fromA, t, data[:n])
		data = data[n:]
	}
}

// Gap implements [capture.Handler].
func (w *Writer) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	w.GapBecause(f, fromA, n, "", t)
}

// GapBecause implements [capture.GapExplainer].
func (w *Writer) GapBecause(f *capture.Flow, fromA bool, n int, reason string, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var c [8]byte
	binary.BigEndian.PutUint64(c[:], uint64(int64(n)))
	w.record(kindGap, f, fromA, t, c[:], []byte(reason))
}

// Note implements [capture.Noter].
func (w *Writer) Note(f *capture.Flow, fromA bool, kind, msg string, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(kindNote, f, fromA, t, []byte(kind), []byte{0}, []byte(msg))
}

// Close implements [capture.Handler].
func (w *Writer) Close(f *capture.Flow, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(kindClose, f, false, t)
	delete(w.known, f)
}

// Log sends one line of the source's log (a proxy's "client connected",
// say), in order with the calls around it.
func (w *Writer) Log(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(kindLog, nil, false, time.Now(), []byte(msg))
}

// Fail says that the source stopped on an error (msg): [Read] returns it,
// after the calls before it, as a [SourceError].
func (w *Writer) Fail(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.record(kindFail, nil, false, time.Now(), []byte(msg))
}

// Flush implements [capture.Flusher]: it writes out what the Writer holds.
func (w *Writer) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.w.Flush()
	}
}

// Err returns the error that stopped the Writer, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// End flushes the Writer and closes its stream, which the reader sees as
// the end of the traffic.
func (w *Writer) End() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.w.Flush()
	}
	err := w.err
	if w.c != nil {
		if cerr := w.c.Close(); err == nil {
			err = cerr
		}
	}
	if w.err == nil {
		w.err = errors.New("relay: writer closed")
	}
	return err
}

var (
	_ capture.Handler      = (*Writer)(nil)
	_ capture.GapExplainer = (*Writer)(nil)
	_ capture.Noter        = (*Writer)(nil)
	_ capture.Flusher      = (*Writer)(nil)
)

// FormatError is a stream that is not a relay stream or is corrupt, at a
// byte offset of it.
type FormatError struct {
	Offset int64
	Msg    string
}

func (e *FormatError) Error() string {
	return "relay: " + e.Msg + " at offset " + strconv.FormatInt(e.Offset, 10)
}

// SourceError is the error a writer's source stopped on ([Writer.Fail]).
type SourceError struct{ Msg string }

func (e *SourceError) Error() string { return e.Msg }

// Read decodes the stream r and makes its calls on h (log lines go to
// log, when set) until the stream ends, which it reports as nil, or ctx
// is done, which it reports as ctx's error: to stop a Read waiting for
// the writer, close r. Flows still open at the end are closed at the
// time of the last record. A corrupt stream is an error naming its
// offset, after the calls of every record before it were made; a
// [SourceError] is the writer's source failing ([Writer.Fail]).
func Read(ctx context.Context, r io.Reader, h capture.Handler, log func(string)) error {
	rd := &reader{br: bufio.NewReaderSize(r, 256<<10), h: h, log: log, flows: make(map[uint32]*capture.Flow)}
	err := rd.run(ctx)
	rd.closeAll()
	return err
}

type reader struct {
	br    *bufio.Reader
	h     capture.Handler
	log   func(string)
	flows map[uint32]*capture.Flow
	off   int64
	last  time.Time
	body  []byte
}

func (rd *reader) fail(msg string) error { return &FormatError{Offset: rd.off, Msg: msg} }

func (rd *reader) run(ctx context.Context) error {
	var hb [len(header)]byte
	n, err := io.ReadFull(rd.br, hb[:])
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil // a writer that never wrote: no traffic
		}
		return rd.fail("stream ends in its header")
	}
	if string(hb[:]) != header {
		return rd.fail("not a wiretap relay stream (header " + strconv.Quote(string(hb[:])) + ")")
	}
	rd.off = int64(len(header))
	var head [recordHead]byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := io.ReadFull(rd.br, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return rd.fail("stream ends inside a record head")
			}
			return err
		}
		kind, id, fromA := head[0], binary.BigEndian.Uint32(head[1:]), head[5] == 1
		ns := int64(binary.BigEndian.Uint64(head[6:]))
		size := binary.BigEndian.Uint32(head[14:])
		if head[5] > 1 {
			return rd.fail("direction octet " + strconv.Itoa(int(head[5])))
		}
		if size > MaxRecord {
			return rd.fail("record of " + strconv.FormatUint(uint64(size), 10) + " bytes exceeds the limit of " + strconv.Itoa(MaxRecord))
		}
		if cap(rd.body) < int(size) {
			rd.body = make([]byte, size)
		}
		body := rd.body[:size]
		if _, err := io.ReadFull(rd.br, body); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return rd.fail("stream ends inside a record of " + strconv.FormatUint(uint64(size), 10) + " bytes")
			}
			return err
		}
		var t time.Time
		if ns != 0 {
			t = time.Unix(0, ns)
			if t.After(rd.last) {
				rd.last = t
			}
		}
		if err := rd.record(kind, id, fromA, t, body); err != nil {
			return err
		}
		rd.off += recordHead + int64(size)
	}
}

func (rd *reader) record(kind byte, id uint32, fromA bool, t time.Time, body []byte) error {
	switch kind {
	case kindLog:
		if rd.log != nil {
			rd.log(string(body))
		}
		return nil
	case kindFail:
		return &SourceError{Msg: string(body)}
	}
	if kind == kindFlow {
		if _, ok := rd.flows[id]; ok {
			return rd.fail("flow " + strconv.FormatUint(uint64(id), 10) + " announced twice")
		}
		if len(body) < 1 || body[0] > 1 {
			return rd.fail("flow record without its SYN octet")
		}
		a, b, ok := cut(body[1:])
		if !ok {
			return rd.fail("flow record without two addresses")
		}
		ap, err1 := netip.ParseAddrPort(string(a))
		bp, err2 := netip.ParseAddrPort(string(b))
		if err1 != nil || err2 != nil {
			return rd.fail("flow record with a bad address")
		}
		rd.flows[id] = &capture.Flow{ID: int(id), A: ap, B: bp, SYN: body[0] == 1, First: t}
		return nil
	}
	f := rd.flows[id]
	if f == nil {
		return rd.fail("record for flow " + strconv.FormatUint(uint64(id), 10) + ", never announced")
	}
	switch kind {
	case kindData:
		rd.h.Data(f, fromA, body, t)
	case kindGap:
		if len(body) < 8 {
			return rd.fail("gap record of " + strconv.Itoa(len(body)) + " bytes")
		}
		n := int64(binary.BigEndian.Uint64(body))
		if n < -1 || n > 1<<48 {
			return rd.fail("gap of " + strconv.FormatInt(n, 10) + " bytes")
		}
		if len(body) == 8 {
			rd.h.Gap(f, fromA, int(n), t)
		} else {
			capture.ExplainGap(rd.h, f, fromA, int(n), string(body[8:]), t)
		}
	case kindNote:
		k, msg, ok := cut(body)
		if !ok {
			return rd.fail("note record without its kind")
		}
		capture.NoteOn(rd.h, f, fromA, string(k), string(msg), t)
	case kindClose:
		rd.h.Close(f, t)
		delete(rd.flows, id)
	default:
		return rd.fail("unknown record kind 0x" + strconv.FormatUint(uint64(kind), 16))
	}
	return nil
}

// closeAll closes the flows the stream left open (a writer that died).
func (rd *reader) closeAll() {
	ids := make([]uint32, 0, len(rd.flows))
	for id := range rd.flows {
		ids = append(ids, id)
	}
	slices.Sort(ids) // in flow order, as a source that ends closes them
	for _, id := range ids {
		rd.h.Close(rd.flows[id], rd.last)
	}
	clear(rd.flows)
}

// cut splits b at its first NUL.
func cut(b []byte) (before, after []byte, ok bool) {
	for i, c := range b {
		if c == 0 {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}
