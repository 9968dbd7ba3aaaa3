package amqp10

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// immMessages decodes one transfer per body on conn as dir and returns the
// units completing them.
func immMessages(conn int, dir decode.Dir, bodies ...[]byte) []*decode.Unit {
	var units []*decode.Unit
	d := New(&decode.Conn{ID: conn, Proto: decode.ProtoAMQP10}, nil, func(u *decode.Unit) {
		if MessageOf(u) != nil {
			u.N = len(units) + 1
			units = append(units, u)
		}
	})
	for i, b := range bodies {
		msg := AppendDescribed(nil, DescriptorData, AppendBinary(nil, b))
		d.Feed(dir, transferFrame(0, 0, uint32(i), false, msg), time.Unix(0, 0))
	}
	return units
}

// TestImmutabilityBoundedStore: with a small MaxBytes the tracker keeps
// the newest messages and forgets the oldest, and the chunks it copies
// bare messages into are given back as their messages are forgotten; a
// message larger than a chunk, and one entering twice, still pair
// byte for byte.
func TestImmutabilityBoundedStore(t *testing.T) {
	im := NewImmutability()
	im.MaxBytes = 512 << 10
	bodies := make([][]byte, 30000) // 3 MB of bare messages
	for i := range bodies {
		bodies[i] = make([]byte, 100)
		bodies[i][0], bodies[i][1], bodies[i][2] = byte(i>>16), byte(i>>8), byte(i)
	}
	big := make([]byte, immChunk+1000)
	big[0] = 1
	in := immMessages(1, decode.DirF, append(bodies, big, bodies[len(bodies)-1])...)
	for _, u := range in {
		im.Observe(u)
	}
	if im.bytes > im.MaxBytes {
		t.Errorf("%d bytes kept, MaxBytes %d", im.bytes, im.MaxBytes)
	}
	kept := 0
	for _, c := range im.chunks {
		if c != nil {
			kept += cap(c)
		}
	}
	if kept > im.MaxBytes+2*immChunk+len(big) {
		t.Errorf("%d bytes of chunks kept for %d bytes of messages", kept, im.bytes)
	}
	out := immMessages(2, decode.DirB, bodies[0], bodies[len(bodies)-2], bodies[len(bodies)-1], big)
	for i, u := range out {
		v, paired := im.Observe(u)
		if i == 0 {
			if paired {
				t.Errorf("the oldest message, forgotten, paired: %+v", v)
			}
			continue
		}
		if !paired || !v.Identical || v.Out != v.In {
			t.Errorf("message %d: verdict %+v, want identical", i, v)
		}
	}
	if r := im.Report(); r.Entered != len(bodies)+2 || r.Left != 4 || r.Paired != 3 || r.Identical != 3 {
		t.Errorf("report %+v", r)
	}
}

// BenchmarkImmutabilityObserve pairs a message leaving a broker with the
// one that entered it (1 KiB bodies, identical), as the pipeline does for
// every server-to-client transfer of the AMQP 1.0 shapes: the lookup, the
// comparison and the verdict's field.
func BenchmarkImmutabilityObserve(b *testing.B) {
	body := make([]byte, 1024)
	im := NewImmutability()
	for _, u := range immMessages(1, decode.DirF, body) {
		im.Observe(u)
	}
	out := immMessages(2, decode.DirB, body)[0]
	cm := MessageOf(out)
	b.SetBytes(int64(len(cm.Bare())))
	b.ReportAllocs()
	for b.Loop() {
		cm.Annotations = cm.Annotations[:0]
		if v, paired := im.Observe(out); !paired || !v.Identical {
			b.Fatalf("verdict %+v", v)
		}
	}
}

// TestImmutabilityDisplay: the identical verdict's text, built in one
// piece, reads as it did.
func TestImmutabilityDisplay(t *testing.T) {
	for _, c := range []struct {
		conn, n  int
		by, want string
	}{
		{3, 17, "message-id", "identical: bare message byte-for-byte as sent on conn 3 unit 17 (matched by message-id)"},
		{12, 0, "bare-message hash", "identical: bare message byte-for-byte as sent on conn 12 (matched by bare-message hash)"},
	} {
		if got := identicalDisplay(sentAt{conn: int32(c.conn), unit: c.n, byID: c.by == "message-id", paired: true}); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	if firstDiff([]byte("abc"), []byte("abc")) != -1 || firstDiff([]byte("abc"), []byte("abd")) != 2 ||
		firstDiff([]byte("ab"), []byte("abc")) != 2 || firstDiff(nil, nil) != -1 {
		t.Error("firstDiff")
	}
}

// TestImmutabilityCollisions: with every hash the same, so that every
// message shares one chain of the index, the tracker pairs and judges
// exactly as with real hashes: messages with and without message-ids,
// some entering twice, some modified on the way out, some leaving twice
// or out of order, and the oldest forgotten.
func TestImmutabilityCollisions(t *testing.T) {
	type msg struct {
		id   string
		body []byte
	}
	var in, out []msg
	for i := 0; i < 600; i++ {
		m := msg{body: []byte{byte(i >> 8), byte(i), byte(i % 7)}}
		if i%3 == 0 {
			m.id = "id-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		}
		in = append(in, m)
		if i%50 == 7 {
			in = append(in, m) // enters again
		}
	}
	for i := 0; i < 600; i += 1 + i%2 {
		m := in[(i*7)%len(in)]
		if i%11 == 0 {
			m.body = append([]byte{0xff}, m.body...) // modified on the way
		}
		out = append(out, m)
		if i%13 == 0 {
			out = append(out, m) // delivered twice
		}
	}
	units := func(conn int, dir decode.Dir, ms []msg) []*decode.Unit {
		var units []*decode.Unit
		d := New(&decode.Conn{ID: conn, Proto: decode.ProtoAMQP10}, nil, func(u *decode.Unit) {
			if MessageOf(u) != nil {
				u.N = len(units) + 1
				units = append(units, u)
			}
		})
		for i, m := range ms {
			var b []byte
			if m.id != "" {
				b = AppendDescribed(b, DescriptorProperties, AppendList(nil, AppendString(nil, m.id)))
			}
			b = AppendDescribed(b, DescriptorData, AppendBinary(nil, m.body))
			d.Feed(dir, transferFrame(0, 0, uint32(i), false, b), time.Unix(0, 0))
		}
		return units
	}
	run := func(mask uint64) (verdicts []string, r ImmutabilityReport) {
		im := NewImmutability()
		im.mask = mask
		im.MaxBytes = 4000 // the oldest few hundred are forgotten
		for _, u := range units(1, decode.DirF, in) {
			im.Observe(u)
		}
		for _, u := range units(2, decode.DirB, out) {
			v, paired := im.Observe(u)
			if !paired {
				verdicts = append(verdicts, "unpaired")
				continue
			}
			verdicts = append(verdicts, fmt.Sprintf("%+v", v))
		}
		return verdicts, im.Report()
	}
	want, wr := run(^uint64(0))
	got, gr := run(0)
	if wr != gr {
		t.Errorf("report with collisions %+v, without %+v", gr, wr)
	}
	if wr.Identical == 0 || wr.Modified == 0 || wr.Paired == wr.Left {
		t.Errorf("the workload misses a case: %+v", wr)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("message %d out: with collisions %s, without %s", i, got[i], want[i])
		}
	}
}

// BenchmarkImmutabilityStream is the tracker under a broker's steady
// load: per iteration one 12-byte message without a message-id enters
// and the one that entered 10,000 before it leaves, so the tracker holds
// every message so far (up to MaxBytes), as it does for a load generator.
func BenchmarkImmutabilityStream(b *testing.B) {
	const lag = 10000
	im := NewImmutability()
	in := immMessages(1, decode.DirF, make([]byte, 12))[0]
	out := immMessages(2, decode.DirB, make([]byte, 12))[0]
	inBare, outm := MessageOf(in).Bare(), MessageOf(out)
	outBare := outm.Bare()
	set := func(bare []byte, i uint64) { binary.BigEndian.PutUint64(bare[len(bare)-8:], i) }
	var i uint64
	for ; i < lag; i++ {
		set(inBare, i)
		im.Observe(in)
	}
	b.ReportAllocs()
	for b.Loop() {
		set(inBare, i)
		im.Observe(in)
		set(outBare, i-lag)
		outm.Annotations = outm.Annotations[:0]
		if v, paired := im.Observe(out); !paired || !v.Identical {
			b.Fatalf("message %d: verdict %+v", i-lag, v)
		}
		i++
	}
}

// TestImmutabilityKeepsOwnBytes: a bare message in bytes of the message's
// own (a large frame's unit, or a reassembled message) is kept as those
// bytes, not copied; forgotten ones give their slots to newer ones; and
// pairing compares them as it compares copies.
func TestImmutabilityKeepsOwnBytes(t *testing.T) {
	im := NewImmutability()
	im.MaxBytes = 100 << 10
	var bodies [][]byte
	for i := range 40 {
		b := make([]byte, 10<<10)
		b[0], b[1] = byte(i), byte(i>>8)
		bodies = append(bodies, b)
	}
	in := immMessages(1, decode.DirF, bodies...)
	// A reassembled one: three transfers.
	var multi *decode.Unit
	d := New(&decode.Conn{ID: 1, Proto: decode.ProtoAMQP10}, nil, func(u *decode.Unit) {
		if MessageOf(u) != nil {
			multi = u
		}
	})
	big := make([]byte, 30<<10)
	big[0] = 0xee
	msg := AppendDescribed(nil, DescriptorData, AppendBinary(nil, big))
	for off := 0; off < len(msg); off += 12000 {
		end := min(off+12000, len(msg))
		d.Feed(decode.DirF, transferFrame(0, 0, 99, end < len(msg), msg[off:end]), time.Unix(0, 0))
	}
	if multi == nil || MessageOf(multi).Frames != 3 {
		t.Fatal("no reassembled message")
	}
	multi.N = 100
	in = append(in, multi)
	for _, u := range in {
		im.Observe(u)
	}
	live := 0
	for _, b := range im.shared {
		if b.b != nil || b.pieces != nil {
			live++
		}
	}
	if live == 0 || len(im.shared) > live+len(im.freeShared) || len(im.shared) > 12 {
		t.Errorf("%d slots for %d bare messages kept (%d free)", len(im.shared), live, len(im.freeShared))
	}
	last := MessageOf(in[len(in)-1]).Bare()
	if e := im.entry(im.tail - 1); e.shared == 0 || &im.bareOf(e).b[0] != &last[0] {
		t.Error("the reassembled message's bare message was copied")
	}
	for _, c := range im.chunks {
		if cap(c) > 0 {
			t.Errorf("a chunk of %d bytes for bare messages kept as they are", cap(c))
		}
	}
	changed := append([]byte(nil), bodies[39]...)
	changed[5000] = 1
	out := immMessages(2, decode.DirB, bodies[38], changed)
	// Without a message-id a message is known by its bare message: the
	// same bytes pair, identical; changed ones do not pair.
	if v, paired := im.Observe(out[0]); !paired || !v.Identical || v.FromUnit != in[38].N {
		t.Errorf("unchanged message: verdict %+v", v)
	}
	if v, paired := im.Observe(out[1]); paired {
		t.Errorf("changed message paired: %+v", v)
	}
}
