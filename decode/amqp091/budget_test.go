package amqp091

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// TestDecoderMemoryBudget: bodies copied while their message is in
// progress are charged to the memory budget. Past the connection's share
// the oldest message in progress gives its body back (a warning unit
// says so), its message completes counted but without the body, and
// nothing stays charged at the end.
func TestDecoderMemoryBudget(t *testing.T) {
	frames := func(ch uint16, body []byte) [][]byte {
		var fs [][]byte
		b := AppendMessage(nil, ch, &BasicPublish{RoutingKey: []byte{byte('0' + ch)}}, nil, body, 1024)
		for len(b) > 0 {
			_, n, err := ParseFrame(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, b[:n])
			b = b[n:]
		}
		return fs
	}
	// Three messages of 8 KiB interleaved frame by frame, under a budget
	// whose share is 16 KiB (half of 32): the first is dropped when the third grows.
	var f [3][][]byte
	for ch := range f {
		f[ch] = frames(uint16(ch+1), bytes.Repeat([]byte{byte('a' + ch)}, 8<<10))
	}
	var stream []byte
	for i := range f[0] {
		for ch := range f {
			stream = append(stream, f[ch][i]...)
		}
	}
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(32 << 10)
	d, r := newTestDecoder(opt)
	d.Feed(decode.DirF, stream, t0)
	d.End(decode.DirF, t0)
	b := opt.Budget
	if b.High() > b.Limit() || b.Used() != 0 || b.Evictions() == 0 {
		t.Fatalf("budget: high-water %d of %d, %d left, %d evictions", b.High(), b.Limit(), b.Used(), b.Evictions())
	}
	warnings, kept, notKept := 0, 0, 0
	for _, u := range r.units {
		if u.Type == "warning" && strings.Contains(strings.Join(u.Warnings(), ""), "dropped: this connection reached its share of the memory budget") {
			warnings++
		}
		if f := decode.Find(u.Fields(), "amqp.message.body"); f != nil && len(f.Value.(string)) == 8<<10 {
			kept++
		}
		for _, w := range u.Warnings() {
			if strings.Contains(w, "message body not kept for display: the memory budget") {
				notKept++
			}
		}
	}
	if warnings == 0 || notKept != warnings || kept+notKept != 3 {
		t.Errorf("%d budget warnings, %d bodies kept, %d not kept", warnings, kept, notKept)
	}
	if n := d.(*Decoder).inflight; n != 0 {
		t.Errorf("%d bytes still counted in flight", n)
	}
}

// TestDecoderBudgetHostileBodySize: a content header may claim any body
// size; what the budget is charged for a message in progress follows what
// was received, never the claim. Small frames' payloads are copied into
// chunks that at most double what was copied (their capacity is charged);
// large frames' payloads are kept as their units' bytes, charged their
// length. The message body is the bytes received, in order.
func TestDecoderBudgetHostileBodySize(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame int // body frame payload size
	}{{"small frames", 1}, {"small frames", 700}, {"large frames", 5000}} {
		opt := decode.DefaultOptions()
		opt.Budget = decode.NewBudget(1 << 30)
		d, _ := newTestDecoder(opt)
		stream := AppendMethodFrame(nil, 1, &BasicPublish{RoutingKey: []byte("k")})
		stream = AppendHeaderFrame(stream, 1, &ContentHeader{ClassID: ClassBasic, BodySize: 1 << 40})
		d.Feed(decode.DirF, stream, t0)
		var sent []byte
		for i := range 40 {
			p := bytes.Repeat([]byte{byte('a' + i%26)}, tc.frame)
			sent = append(sent, p...)
			d.Feed(decode.DirF, AppendFrame(nil, FrameBody, 1, p), t0)
			used := opt.Budget.Used()
			if tc.frame > rawCarved && used != int64(len(sent)) || used > int64(2*len(sent)) || used < int64(len(sent)) {
				t.Fatalf("%s of %d bytes: %d bytes received, %d charged", tc.name, tc.frame, len(sent), used)
			}
		}
		// The body never completes: the end of the stream gives back
		// what it held.
		d.End(decode.DirF, t0)
		if n := opt.Budget.Used(); n != 0 {
			t.Errorf("%s of %d bytes: %d bytes still charged at the end", tc.name, tc.frame, n)
		}
	}
}

// TestDecoderBodyPieces: a body over frames of every size, fed in odd
// chunks, is shown (tree, JSON, frozen and thawed) as the bytes sent.
func TestDecoderBodyPieces(t *testing.T) {
	var body []byte
	for i := range 9000 {
		body = append(body, byte(i*7+i/251))
	}
	// 3000 (large), 100, 100 (small: one chunk, made twice as large as
	// the first), 2500 (large), 3 (small), the rest (large).
	build := func(body []byte) []byte {
		s := AppendMethodFrame(nil, 1, &BasicPublish{RoutingKey: []byte("k")})
		s = AppendHeaderFrame(s, 1, &ContentHeader{ClassID: ClassBasic, BodySize: uint64(len(body))})
		off := 0
		for _, n := range []int{3000, 100, 100, 2500, 3} {
			s = AppendFrame(s, FrameBody, 1, body[off:off+n])
			off += n
		}
		return AppendFrame(s, FrameBody, 1, body[off:])
	}
	for _, text := range []bool{false, true} {
		b := body
		if text {
			// "é" across the seams of pieces, U+2028 escaped in JSON.
			b = bytes.Repeat([]byte("text \u00e9\u2028 "), len(body)/11+1)[:len(body)]
			b = append(b[:len(b)-8:len(b)-8], "zzzzzzzz"...)
		}
		s := build(b)
		d, r := newTestDecoder(decode.DefaultOptions())
		feedChunks(d, decode.DirF, s, 1777)
		last := r.units[len(r.units)-1]
		f := decode.Find(last.Fields(), "amqp.message.body")
		if f == nil {
			t.Fatal("no body field")
		}
		var got []byte
		switch v := f.Value.(type) {
		case string:
			got = []byte(v)
		case []byte:
			got = v
		}
		if !bytes.Equal(got, b) || text != (func() bool { _, ok := f.Value.(string); return ok }()) {
			t.Fatalf("text %v: body of %d bytes (%T), want %d", text, len(got), f.Value, len(b))
		}
		if n := len(messageOf(last.Dissect).body.Slices()); n != 5 {
			t.Errorf("text %v: body in %d pieces, want 5 (3 shared, 2 chunks)", text, n)
		}
		fast := output.AppendJSON(nil, last, output.JSONOptions{})
		tree := output.AppendJSON(nil, last, output.JSONOptions{TreeOnly: true})
		if !bytes.Equal(fast, tree) || !bytes.Contains(fast, []byte(`\u2028`)) == text {
			t.Errorf("text %v: direct JSON differs from the tree's:\n%.300s\n%.300s", text, fast, tree)
		}
		frozen, ok := last.AppendFrozen(nil)
		if !ok {
			t.Fatal("not frozen")
		}
		thawed := &decode.Unit{Raw: last.Raw}
		if err := thawed.Thaw(frozen); err != nil {
			t.Fatal(err)
		}
		if g := decode.Find(thawed.Fields(), "amqp.message.body"); g == nil || !reflect.DeepEqual(g.Value, f.Value) {
			t.Fatalf("text %v: thawed body differs", text)
		}
	}
}
