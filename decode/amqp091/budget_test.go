package amqp091

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
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
