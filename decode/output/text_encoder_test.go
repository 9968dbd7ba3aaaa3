package output

import (
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestTextEncoderColumnsCached: the encoder's remembered columns (the
// number incremented in place, the channel, a summary known to need no
// escaping) give the lines AppendText gives, across carries (9 to 10, the
// column's width overflowing), gaps, unnumbered and negative units, and a
// summary that needs escaping handed over again and again.
func TestTextEncoderColumnsCached(t *testing.T) {
	first := time.Unix(1700000000, 0)
	c1, c2 := &decode.Conn{ID: 1}, &decode.Conn{ID: 12}
	clean := "Basic.Publish x=ex rk=k"
	dirty := "Basic.Publish x=e\x01x rk=\nk"
	long := strings.Repeat("Content-Body ", 9)
	var ns []int
	for _, r := range [][2]int{{-3, 3}, {7, 12}, {97, 102}, {998, 1002}, {9998, 10003}, {999998, 1000002}, {9999997, 10000003}, {99999998, 100000001}, {5, 6}, {42, 42}} {
		for n := r[0]; n <= r[1]; n++ {
			ns = append(ns, n)
		}
	}
	ns = append(ns, 0, 1, 1, 2, 2)
	e := TextEncoder{First: first}
	var got, want []byte
	for i, n := range ns {
		u := &decode.Unit{N: n, Dir: decode.Dir(i & 1), Conn: c1}
		u.SetTime(first.Add(time.Duration(i/3) * time.Millisecond))
		switch i % 5 {
		case 0:
			u.Summary, u.Channel, u.HasChannel = clean, 1, true
		case 1:
			u.Summary, u.Channel, u.HasChannel = dirty, 1, true
		case 2:
			u.Summary, u.Channel, u.HasChannel, u.Conn = long, 65535, true, c2
		case 3:
			u.Summary = dirty
		case 4:
			u.Summary, u.Channel, u.HasChannel = clean+"x", 10, true
		}
		got = e.Append(got[:0], u)
		want = AppendText(want[:0], u, first)
		if string(got) != string(want) {
			t.Fatalf("unit %d (N %d): encoder wrote\n%q\nAppendText\n%q", i, n, got, want)
		}
	}
}

// TestTextEncoderWideColumns: the columns between the number and the
// summary, kept as one while each is at its narrowest, give AppendText's
// lines as they widen and narrow again (a time past 9,999 s, a
// connection past 9,999, no connection), as the time runs backwards or
// from another first time, and with units nested, without a channel or
// on the largest one.
func TestTextEncoderWideColumns(t *testing.T) {
	first := time.Unix(1700000000, 0)
	conns := []*decode.Conn{{ID: 1}, {ID: 9999}, {ID: 10000}, nil, {ID: 123456}, {ID: 7}}
	offsets := []time.Duration{0, time.Microsecond, 9999 * time.Second, 10000 * time.Second, 5 * time.Second, -time.Second, 123456 * time.Second, 3 * time.Millisecond}
	parent := &decode.Unit{N: 1}
	e := TextEncoder{First: first}
	var got, want []byte
	n := 0
	for i := 0; i < 400; i++ {
		n++
		if i%37 == 0 {
			n += 5 // a gap
		}
		u := &decode.Unit{N: n, Dir: decode.Dir(i % 3 & 1), Conn: conns[i/3%len(conns)], Summary: "Basic.Ack tag=" + strings.Repeat("9", i%5)}
		u.SetTime(first.Add(offsets[i/5%len(offsets)]))
		if i%4 != 3 {
			u.HasChannel, u.Channel = true, uint16(i*997%65536)
		}
		if i%7 == 0 {
			u.Parent = parent
		}
		first := first
		if i >= 300 {
			first = first.Add(-time.Hour) // another first time
		}
		e.First = first
		got = e.Append(got[:0], u)
		want = AppendText(want[:0], u, first)
		if string(got) != string(want) {
			t.Fatalf("unit %d: encoder wrote\n%q\nAppendText\n%q", i, got, want)
		}
	}
}

// BenchmarkTextEncoder renders a run of consecutive fanout-like units, as
// a render worker of `wiretap read` does: ns/op is per line.
func BenchmarkTextEncoder(b *testing.B) {
	first := time.Unix(1700000000, 0)
	c := &decode.Conn{ID: 1}
	sums := []string{"Basic.Publish x=wt.fanout rk=", "Content-Header size=16", "Content-Body len=16 (16/16 complete)", "Basic.Deliver ctag=amq.ctag-x tag=1 x=wt.fanout rk="}
	units := make([]*decode.Unit, 4096)
	size := 0
	for i := range units {
		u := &decode.Unit{N: i + 1, Conn: c, Dir: decode.Dir(i & 1), Channel: 1, HasChannel: true, Summary: sums[i%len(sums)], Len: 24}
		u.SetTime(first.Add(time.Duration(i/35) * time.Microsecond))
		units[i] = u
		size += len(AppendText(nil, u, first))
	}
	b.SetBytes(int64(size / len(units)))
	b.ReportAllocs()
	var buf []byte
	i, n := 0, 0
	e := TextEncoder{First: first}
	for b.Loop() {
		u := units[i]
		// Numbered as a capture of under ten million units is: a run
		// of b.N lines past that would measure the wide number's path
		// alone (TestTextEncoderColumnsCached covers it).
		if n++; n > 9999999 {
			n = 1
		}
		u.N = n
		buf = e.Append(buf[:0], u)
		if i++; i == len(units) {
			i = 0
		}
	}
}
