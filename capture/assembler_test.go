package capture_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/capture"
)

const (
	cli = "10.0.0.1:40000"
	srv = "10.0.0.2:5672"
)

// assemble feeds segs as raw IP packets, flushes and returns the log.
func assemble(t *testing.T, opt *capture.Options, segs ...tcp) (*recorder, *capture.Stats) {
	t.Helper()
	r := newRecorder()
	stats := new(capture.Stats)
	a := capture.NewAssembler(r, opt, stats)
	t0 := time.Unix(1700000000, 0)
	for i, s := range segs {
		ip := s.ip(0)
		a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Time: t0.Add(time.Duration(i) * time.Millisecond), Data: ip, Length: len(ip) + s.cut})
	}
	a.Flush()
	return r, stats
}

func handshake(isnC, isnS uint32) []tcp {
	return []tcp{
		{src: cli, dst: srv, seq: isnC, flags: syn},
		{src: srv, dst: cli, seq: isnS, ack: isnC + 1, flags: syn | ack},
		{src: cli, dst: srv, seq: isnC + 1, ack: isnS + 1, flags: ack},
	}
}

func TestReassembly(t *testing.T) {
	tests := []struct {
		name string
		segs []tcp
		want string
	}{
		{
			name: "in order with FIN both ways",
			segs: append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 101, ack: 501, flags: ack | psh, payload: "hello"},
				tcp{src: srv, dst: cli, seq: 501, ack: 106, flags: ack | psh, payload: "world"},
				tcp{src: cli, dst: srv, seq: 106, ack: 506, flags: fin | ack},
				tcp{src: srv, dst: cli, seq: 506, ack: 107, flags: fin | ack},
				tcp{src: cli, dst: srv, seq: 107, ack: 507, flags: ack}, // trailing ACK: no new flow
			),
			want: `data 1 true "hello"
data 1 false "world"
close 1
`,
		},
		{
			name: "out of order and overlapping retransmissions",
			segs: append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 106, flags: ack, payload: "world"},
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "hel"},
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "hello"}, // overlaps what was delivered
				tcp{src: cli, dst: srv, seq: 108, flags: ack, payload: "rld!!"}, // overlaps the tail
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "hello"}, // whole retransmission
			),
			want: `data 1 true "hel"
data 1 true "lo"
data 1 true "world"
data 1 true "!!"
close 1
`,
		},
		{
			name: "lost segment flushed as a gap",
			segs: append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "ab"},
				tcp{src: cli, dst: srv, seq: 113, flags: ack, payload: "cd"},
				tcp{src: cli, dst: srv, seq: 120, flags: ack, payload: "ef"},
			),
			want: `data 1 true "ab"
gap 1 true 10
data 1 true "cd"
gap 1 true 5
data 1 true "ef"
close 1
`,
		},
		{
			name: "mid-stream: no SYN",
			segs: []tcp{
				{src: srv, dst: cli, seq: 9000, ack: 7000, flags: ack, payload: "late"},
				{src: cli, dst: srv, seq: 7000, ack: 9004, flags: ack, payload: "x"},
			},
			want: `gap 1 true -1
data 1 true "late"
gap 1 false -1
data 1 false "x"
close 1
`,
		},
		{
			name: "SYN-ACK first names the client",
			segs: []tcp{
				{src: srv, dst: cli, seq: 500, ack: 101, flags: syn | ack},
				{src: cli, dst: srv, seq: 101, ack: 501, flags: ack, payload: "q"},
				{src: srv, dst: cli, seq: 501, ack: 102, flags: ack, payload: "r"},
			},
			want: `gap 1 true -1
data 1 true "q"
data 1 false "r"
close 1
`,
		},
		{
			name: "snap length cut",
			segs: append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "0123456789", cut: 4},
				tcp{src: cli, dst: srv, seq: 111, flags: ack, payload: "ab"},
			),
			want: `data 1 true "012345"
gap 1 true 4
data 1 true "ab"
close 1
`,
		},
		{
			name: "RST closes; reuse of the 4-tuple is a new flow",
			segs: append(append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "one"},
				tcp{src: srv, dst: cli, seq: 501, flags: rst},
				tcp{src: cli, dst: srv, seq: 104, flags: ack, payload: "ignored"}),
				append(handshake(9000, 3000),
					tcp{src: cli, dst: srv, seq: 9001, flags: ack, payload: "two"})...,
			),
			want: `data 1 true "one"
close 1
data 2 true "two"
close 2
`,
		},
		{
			name: "reuse after FIN",
			segs: append(append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 101, flags: ack | fin, payload: "one"},
				tcp{src: srv, dst: cli, seq: 501, flags: ack | fin}),
				append(handshake(200, 600),
					tcp{src: cli, dst: srv, seq: 201, flags: ack, payload: "two"})...,
			),
			want: `data 1 true "one"
close 1
data 2 true "two"
close 2
`,
		},
		{
			name: "sequence numbers wrap",
			segs: append(handshake(0xfffffffd, 500),
				tcp{src: cli, dst: srv, seq: 0x00000002, flags: ack, payload: "cd"},
				tcp{src: cli, dst: srv, seq: 0xfffffffe, flags: ack, payload: "ab"},
				tcp{src: cli, dst: srv, seq: 0x00000000, flags: ack, payload: "XY"},
			),
			want: `data 1 true "ab"
data 1 true "XY"
data 1 true "cd"
close 1
`,
		},
		{
			name: "FIN before the data it ends",
			segs: append(handshake(100, 500),
				tcp{src: cli, dst: srv, seq: 103, flags: ack | fin, payload: "cd"},
				tcp{src: srv, dst: cli, seq: 501, flags: ack | fin},
				tcp{src: cli, dst: srv, seq: 101, flags: ack, payload: "ab"},
			),
			want: `data 1 true "ab"
data 1 true "cd"
close 1
`,
		},
		{
			name: "SYN retransmission is not a new flow",
			segs: []tcp{
				{src: cli, dst: srv, seq: 100, flags: syn},
				{src: cli, dst: srv, seq: 100, flags: syn},
				{src: srv, dst: cli, seq: 500, ack: 101, flags: syn | ack},
				{src: cli, dst: srv, seq: 101, flags: ack, payload: "a"},
			},
			want: `data 1 true "a"
close 1
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := assemble(t, nil, tt.segs...)
			if got := r.log.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			for id, n := range r.closed {
				if n != 1 {
					t.Errorf("flow %d closed %d times", id, n)
				}
			}
		})
	}
}

func TestReassemblyFlowIdentity(t *testing.T) {
	r, stats := assemble(t, nil,
		tcp{src: "10.0.0.9:1", dst: srv, seq: 1, flags: ack, payload: "m"},
		tcp{src: cli, dst: srv, seq: 100, flags: syn},
		tcp{src: "[2001:db8::1]:5000", dst: "[2001:db8::2]:5432", seq: 7, flags: syn},
		tcp{src: "[2001:db8::1]:5000", dst: "[2001:db8::2]:5432", seq: 8, flags: ack, payload: "v6"},
	)
	if stats.Flows != 3 {
		t.Fatalf("Flows = %d, want 3", stats.Flows)
	}
	f1, f2, f3 := r.flows[1], r.flows[2], r.flows[3]
	if f1.SYN || f1.A.String() != "10.0.0.9:1" {
		t.Errorf("flow 1 = %+v, want A the first sender, SYN false", f1)
	}
	if !f2.SYN || f2.A.String() != cli || f2.B.String() != srv {
		t.Errorf("flow 2 = %+v, want A the SYN sender", f2)
	}
	if !f3.SYN || f3.B.String() != "[2001:db8::2]:5432" || r.stream[3][0].String() != "v6" {
		t.Errorf("flow 3 = %+v, stream %q", f3, r.stream[3][0].String())
	}
	if !f1.First.Before(f2.First) {
		t.Errorf("flow times out of order: %v, %v", f1.First, f2.First)
	}
}

func TestReassemblyBufferLimit(t *testing.T) {
	segs := handshake(100, 500)
	// A hole at 101, then 8 segments of 10 bytes: the budget holds 3.
	for i := range 8 {
		segs = append(segs, tcp{src: cli, dst: srv, seq: uint32(111 + 10*i), flags: ack, payload: strings.Repeat(string(rune('a'+i)), 10)})
	}
	r, stats := assemble(t, &capture.Options{MaxBufferedPerFlow: 30}, segs...)
	want := "gap 1 true 10\n"
	if got := r.log.String(); !strings.HasPrefix(got, want) {
		t.Errorf("log starts %q, want %q", got, want)
	}
	if got, want := r.stream[1][0].String(), "aaaaaaaaaabbbbbbbbbbccccccccccddddddddddeeeeeeeeeeffffffffffgggggggggghhhhhhhhhh"; got != want {
		t.Errorf("stream %q, want %q", got, want)
	}
	if len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "connection 1: out-of-order data beyond the reassembly budget") {
		t.Errorf("warnings %q", stats.Warnings)
	}
}

func TestReassemblyMaxFlows(t *testing.T) {
	var segs []tcp
	for i := range 40 {
		c := "10.0.1.1:" + strconv.Itoa(1000+i)
		segs = append(segs, tcp{src: c, dst: srv, seq: 1, flags: ack, payload: "x"})
	}
	// The first connection again, after it was evicted.
	segs = append(segs, tcp{src: "10.0.1.1:1000", dst: srv, seq: 2, flags: ack, payload: "y"})
	r, stats := assemble(t, &capture.Options{MaxFlows: 16}, segs...)
	if stats.Evicted == 0 || len(stats.Warnings) != 1 || !strings.Contains(stats.Warnings[0], "more than 16 connections") {
		t.Fatalf("Evicted %d, warnings %q", stats.Evicted, stats.Warnings)
	}
	if stats.Flows != 41 || r.flows[41].A.String() != "10.0.1.1:1000" {
		t.Errorf("Flows = %d, flow 41 = %+v", stats.Flows, r.flows[41])
	}
	if r.closed[1] != 1 {
		t.Errorf("flow 1 closed %d times", r.closed[1])
	}
	if !strings.HasPrefix(r.log.String(), "gap 1 true -1\ndata 1 true \"x\"\n") {
		t.Errorf("log starts %q", r.log.String()[:40])
	}
}

func TestReassemblyIdleTimeout(t *testing.T) {
	// assemble spaces packets 1ms apart: the first connection is idle for
	// 5ms when the last packet arrives.
	segs := []tcp{{src: cli, dst: srv, seq: 1, flags: ack, payload: "a"}}
	for i := range 5 {
		segs = append(segs, tcp{src: "10.0.0.3:1", dst: srv, seq: uint32(1 + i), flags: ack, payload: "b"})
	}
	r, _ := assemble(t, &capture.Options{IdleTimeout: 4 * time.Millisecond}, segs...)
	want := "gap 1 true -1\ndata 1 true \"a\"\ngap 2 true -1\ndata 2 true \"b\"\ndata 2 true \"b\"\ndata 2 true \"b\"\ndata 2 true \"b\"\nclose 1\ndata 2 true \"b\"\nclose 2\n"
	if got := r.log.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestReassemblyIPv4LengthUnset(t *testing.T) {
	// Segmentation offload on the capturing host records IPv4 total length
	// 0; the captured bytes are the packet. Ethernet padding is trimmed when
	// the length is set.
	seg := tcp{src: cli, dst: srv, seq: 1, flags: ack, payload: "tso"}.ip(0)
	seg[2], seg[3] = 0, 0
	padded := append(tcp{src: cli, dst: srv, seq: 4, flags: ack, payload: "!"}.ip(0), 0, 0, 0, 0)
	r := newRecorder()
	a := capture.NewAssembler(r, nil, nil)
	a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Data: seg, Length: len(seg)})
	a.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Data: padded, Length: len(padded)})
	a.Flush()
	if got := r.stream[1][0].String(); got != "tso!" {
		t.Errorf("stream %q, want %q", got, "tso!")
	}
}
