package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

// calls records what a Handler was told, one line a call.
type calls struct{ lines []string }

func (c *calls) add(format string, args ...any) {
	c.lines = append(c.lines, fmt.Sprintf(format, args...))
}

func dirOf(fromA bool) string {
	if fromA {
		return "A"
	}
	return "B"
}

func (c *calls) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	c.add("data %d %s %q %d", f.ID, dirOf(fromA), data, t.UnixNano())
}
func (c *calls) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	c.add("gap %d %s %d %d", f.ID, dirOf(fromA), n, t.UnixNano())
}
func (c *calls) GapBecause(f *capture.Flow, fromA bool, n int, reason string, t time.Time) {
	c.add("gap %d %s %d %q %d", f.ID, dirOf(fromA), n, reason, t.UnixNano())
}
func (c *calls) Note(f *capture.Flow, fromA bool, kind, msg string, t time.Time) {
	c.add("note %d %s %s %q", f.ID, dirOf(fromA), kind, msg)
}
func (c *calls) Close(f *capture.Flow, t time.Time) {
	c.add("close %d %s %s %v %d", f.ID, f.A, f.B, f.SYN, t.UnixNano())
}

func TestRoundTrip(t *testing.T) {
	t0 := time.Unix(1700000000, 123456789)
	f1 := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("127.0.0.1:40000"), B: netip.MustParseAddrPort("127.0.0.1:5672"), SYN: true, First: t0}
	f2 := &capture.Flow{ID: 2, A: netip.MustParseAddrPort("[::1]:40001"), B: netip.MustParseAddrPort("[::1]:5432"), SYN: true, First: t0}
	big := bytes.Repeat([]byte{0xce}, MaxRecord+10)

	var direct calls
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var logs []string
	play := func(h interface {
		capture.Handler
		capture.GapExplainer
		capture.Noter
	}, log func(string)) {
		h.Data(f1, true, []byte("AMQP\x00\x00\x09\x01"), t0)
		h.Note(f2, false, capture.NoteEvent, "connection to the upstream failed: refused", t0)
		h.Data(f1, false, []byte{1, 0, 0}, t0.Add(time.Millisecond))
		h.GapBecause(f1, false, 512, capture.GapDecoderBehind, t0.Add(2*time.Millisecond))
		h.Gap(f1, true, -1, t0.Add(3*time.Millisecond))
		log("proxy: client 127.0.0.1:40000 connected")
		h.Data(f1, true, big, t0.Add(4*time.Millisecond))
		h.Close(f2, t0.Add(5*time.Millisecond))
		h.Close(f1, t0.Add(6*time.Millisecond))
	}
	play(&direct, func(s string) { direct.add("log %s", s) })
	play(w, w.Log)
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	var got calls
	err := Read(context.Background(), &buf, &got, func(s string) {
		logs = append(logs, s)
		got.add("log %s", s)
	})
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	// The big write arrives as records of at most MaxRecord bytes.
	want := append([]string(nil), direct.lines[:6]...)
	want = append(want,
		fmt.Sprintf("data 1 A %q %d", big[:MaxRecord], t0.Add(4*time.Millisecond).UnixNano()),
		fmt.Sprintf("data 1 A %q %d", big[MaxRecord:], t0.Add(4*time.Millisecond).UnixNano()))
	want = append(want, direct.lines[7:]...)
	if strings.Join(got.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("replayed calls differ:\n got: %.300q\nwant: %.300q", got.lines, want)
	}
	if len(logs) != 1 {
		t.Errorf("logs %q", logs)
	}
}

func TestReadClosesFlowsLeftOpen(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for id := 3; id >= 1; id-- {
		f := &capture.Flow{ID: id, A: netip.MustParseAddrPort("10.0.0.1:1"), B: netip.MustParseAddrPort("10.0.0.2:2"), SYN: true, First: t0}
		w.Data(f, true, []byte("x"), t0.Add(time.Duration(id)*time.Second))
	}
	w.End()
	var got calls
	if err := Read(context.Background(), &buf, &got, nil); err != nil {
		t.Fatal(err)
	}
	last := t0.Add(3 * time.Second).UnixNano()
	tail := got.lines[3:]
	for i, want := range []string{"close 1", "close 2", "close 3"} {
		if !strings.HasPrefix(tail[i], want) || !strings.HasSuffix(tail[i], fmt.Sprint(last)) {
			t.Errorf("close %d: %q, want %q at the last record's time", i, tail[i], want)
		}
	}
}

func TestReadRejectsBadStreams(t *testing.T) {
	var good bytes.Buffer
	w := NewWriter(&good)
	f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.0.0.1:1"), B: netip.MustParseAddrPort("10.0.0.2:2"), SYN: true}
	w.Data(f, true, []byte("hello"), time.Unix(1, 0))
	w.End()
	g := good.Bytes()
	huge := append([]byte(nil), g...)
	// The first record is the flow's; make the data record's length absurd.
	dataAt := len(header) + recordHead + int(be32(g[len(header)+14:]))
	huge[dataAt+14], huge[dataAt+15] = 0x7f, 0xff
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"not a relay", []byte("GET / HTTP/1.1\r\n\r\n"), "not a wiretap relay stream"},
		{"cut in header", []byte("wiretap"), "ends in its header"},
		{"cut in a record head", g[:len(header)+5], "inside a record head"},
		{"cut in a body", g[:len(g)-2], "inside a record of 5 bytes"},
		{"absurd length", huge, "exceeds the limit"},
		{"flow never announced", append([]byte(header), 'd', 0, 0, 0, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "never announced"},
		{"bad kind", append(append([]byte(nil), g[:dataAt]...), append([]byte{'?'}, g[dataAt+1:]...)...), "unknown record kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got calls
			err := Read(context.Background(), bytes.NewReader(tc.in), &got, nil)
			var fe *FormatError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a FormatError saying %q", err, tc.want)
			}
		})
	}
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func TestFailIsTheSourcesError(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.0.0.1:1"), B: netip.MustParseAddrPort("10.0.0.2:2"), SYN: true}
	w.Data(f, true, []byte("before"), time.Unix(1, 0))
	w.Fail("proxy: loading the TLS certificate: no such file")
	w.End()
	var got calls
	err := Read(context.Background(), &buf, &got, nil)
	var se *SourceError
	if !errors.As(err, &se) || se.Msg != "proxy: loading the TLS certificate: no such file" {
		t.Fatalf("err = %v, want the source's error", err)
	}
	if len(got.lines) != 2 || !strings.HasPrefix(got.lines[0], "data 1 A") || !strings.HasPrefix(got.lines[1], "close 1") {
		t.Fatalf("calls %q: want the data before the failure, then the flow closed", got.lines)
	}
}

func TestReadStopsWithItsContext(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Read(ctx, pr, &calls{}, nil) }()
	pw.Write([]byte(header))
	cancel()
	pr.Close() // what a caller does to stop a Read waiting for the writer
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return")
	}
}

func TestWriterStopsOnAFailedWrite(t *testing.T) {
	pr, pw := io.Pipe()
	pr.Close()
	w := NewWriter(pw)
	f := &capture.Flow{ID: 1, A: netip.MustParseAddrPort("10.0.0.1:1"), B: netip.MustParseAddrPort("10.0.0.2:2")}
	w.Data(f, true, make([]byte, 300<<10), time.Now()) // more than the buffer: written at once
	if w.Err() == nil {
		t.Fatal("no error after writing to a closed pipe")
	}
	w.Data(f, true, []byte("more"), time.Now()) // dropped, no panic
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	fl := &capture.Flow{ID: 7, A: netip.MustParseAddrPort("127.0.0.1:1"), B: netip.MustParseAddrPort("127.0.0.1:2"), SYN: true}
	w.Data(fl, true, []byte("AMQP\x00\x00\x09\x01"), time.Unix(5, 0))
	w.GapBecause(fl, false, 10, "decoder behind", time.Unix(6, 0))
	w.Note(fl, true, capture.NoteFault, "delay 5ms", time.Unix(7, 0))
	w.Log("hello")
	w.Close(fl, time.Unix(8, 0))
	w.End()
	f.Add(buf.Bytes())
	f.Add([]byte(header))
	f.Add([]byte(header + "f\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var got calls
		err := Read(context.Background(), bytes.NewReader(in), &got, func(string) {})
		var fe *FormatError
		var se *SourceError
		if err != nil && !errors.As(err, &fe) && !errors.As(err, &se) {
			t.Fatalf("error of another kind: %v", err)
		}
	})
}
