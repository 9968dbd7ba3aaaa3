package amqp091

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestRepeatedHeaderAfterBadOne checks that a content header with the
// same bytes as the last good one is taken as that one was decoded only
// while nothing has been decoded over it since: a header that fails to
// decode after setting its body size must not lend that size to the next
// header repeating the good one's bytes.
func TestRepeatedHeaderAfterBadOne(t *testing.T) {
	pub := &BasicPublish{Exchange: []byte("ex"), RoutingKey: []byte("rk")}
	props := Properties{Flags: FlagContentType, ContentType: []byte("text/plain")}
	good := AppendHeaderFrame(nil, 1, &ContentHeader{ClassID: ClassBasic, BodySize: 3, Properties: props})
	// The same header announcing 9 bytes, its properties cut: decoding
	// reads the body size, then fails.
	bad := AppendHeaderFrame(nil, 1, &ContentHeader{ClassID: ClassBasic, BodySize: 9, Properties: props})
	payload := bad[FrameHeaderSize : len(bad)-1]
	bad = AppendFrame(nil, FrameHeader, 1, payload[:len(payload)-4])
	body := AppendFrame(nil, FrameBody, 1, []byte("abc"))

	var b []byte
	b = AppendMethodFrame(b, 1, pub)
	b = append(b, good...)
	b = append(b, body...)
	b = AppendMethodFrame(b, 1, pub)
	b = append(b, bad...)
	b = AppendMethodFrame(b, 1, pub)
	b = append(b, good...)
	b = append(b, body...)
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b, t0)
	want := []string{
		"Basic.Publish x=ex rk=rk",
		"Content-Header type=text/plain size=3",
		"Content-Body len=3 (3/3 complete)",
		"Basic.Publish x=ex rk=rk",
		"Content-Header",
		"Basic.Publish x=ex rk=rk",
		"Content-Header type=text/plain size=3",
		"Content-Body len=3 (3/3 complete)",
	}
	checkSummaries(t, r, want)
	for i, u := range r.units {
		if hasErr := u.Err() != ""; hasErr != (i == 4) {
			t.Errorf("unit %d: error %q", i+1, u.Err())
		}
	}
	if fs := r.units[7].Fields(); len(fs) == 0 {
		t.Error("the second message's body has no fields")
	}
}

// TestRepeatedMethodKeepsItsError checks that a method is taken as
// checked without being decoded again only when the same bytes decoded
// without error: a malformed method repeated is reported each time.
func TestRepeatedMethodKeepsItsError(t *testing.T) {
	good := AppendMethodFrame(nil, 1, &BasicPublish{Exchange: []byte("ex"), RoutingKey: []byte("rk")})
	payload := good[FrameHeaderSize : len(good)-1]
	cut := AppendFrame(nil, FrameMethod, 1, payload[:len(payload)-2])
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, cat(good, good, cut, cut, good), t0)
	if len(r.units) != 5 {
		t.Fatalf("%d units: %v", len(r.units), r.types())
	}
	for i, u := range r.units {
		if hasErr := u.Err() != ""; hasErr != (i == 2 || i == 3) {
			t.Errorf("unit %d %s: error %q", i+1, u.Summary, u.Err())
		}
	}
}

// TestBodySummaries checks the body frames' summaries across messages
// of one size and another, in one frame and in several: a body takes the
// last one's summary only when its three numbers are the same.
func TestBodySummaries(t *testing.T) {
	var b []byte
	for _, body := range []string{"0123456789abcdef", "0123456789abcdef", "0123456789abcdefg", "0123456789", "0123456789abcdef"} {
		b = AppendMessage(b, 1, &BasicPublish{Exchange: []byte("ex")}, &Properties{}, []byte(body), 4+FrameOverhead)
	}
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b, t0)
	var got []string
	for _, u := range r.units {
		if u.Type == UnitContentBody {
			got = append(got, u.Summary)
		}
	}
	var want []string
	for _, n := range []int{16, 16, 17, 10, 16} {
		for done := 0; done < n; {
			k := min(4, n-done)
			done += k
			s := "Content-Body len=" + itoa(k) + " (" + itoa(done) + "/" + itoa(n)
			if done == n {
				s += " complete"
			}
			want = append(want, s+")")
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d body frames, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("body frame %d: %q, want %q", i+1, got[i], want[i])
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// decodeNowAndLater decodes b (frames of the server's) twice: with the
// summaries made at once, and with those outside the connection class
// left to a Summarizer (Options.LateSummaries).
func decodeNowAndLater(b []byte) (now, later *recorder) {
	d, now := newTestDecoder(nil)
	d.Feed(decode.DirB, b, t0)
	opt := decode.DefaultOptions()
	opt.LateSummaries = true
	dl, later := newTestDecoder(opt)
	dl.Feed(decode.DirB, b, t0)
	return now, later
}

// TestLateDeliverySummaries checks the Summarizer on a consumer's
// deliveries, whose bytes differ in the delivery-tag alone: it makes the
// summaries the decoder makes, as the tag gains digits, and when more
// than the tag changes (the consumer tag, the redelivered flag).
func TestLateDeliverySummaries(t *testing.T) {
	var b []byte
	deliver := func(ctag string, tag uint64, redelivered bool) {
		b = AppendMethodFrame(b, 1, &BasicDeliver{ConsumerTag: []byte(ctag), DeliveryTag: tag, Redelivered: redelivered, Exchange: []byte("ex"), RoutingKey: []byte("rk")})
	}
	for tag := uint64(7); tag <= 12; tag++ {
		deliver("c1", tag, false)
	}
	deliver("c2", 13, false)
	deliver("c2", 14, true)
	deliver("c2", 99, true)
	deliver("c2", 100, true)
	deliver("c2", 1<<63, true)
	deliver("c2", 1<<64-1, true)
	// Enough deliveries that the summaries fill several of the
	// Summarizer's slabs, each retagged from one in the slab before.
	const many = 5000
	for tag := uint64(1); tag <= many; tag++ {
		deliver("c3", tag*999, false)
	}
	now, later := decodeNowAndLater(b)
	if len(later.units) != 12+many || len(now.units) != 12+many {
		t.Fatalf("%d and %d units, want %d", len(later.units), len(now.units), 12+many)
	}
	var z Summarizer
	for i, u := range later.units {
		if u.Summary != SummaryLater {
			t.Fatalf("unit %d: summary %q, not left to the Summarizer", i+1, u.Summary)
		}
		z.Summarize(u)
		if want := now.units[i].Summary; u.Summary != want {
			t.Errorf("unit %d: summarised %q, want %q", i+1, u.Summary, want)
		}
	}
	// Nothing made later wrote over a summary made before.
	for i, u := range later.units {
		if want := now.units[i].Summary; u.Summary != want {
			t.Fatalf("unit %d: summary %q at the end, want %q", i+1, u.Summary, want)
		}
	}
	if s := later.units[6].Summary; s != "Basic.Deliver ctag=c2 tag=13 x=ex rk=rk" {
		t.Errorf("unit 7: %q", s)
	}
}

// TestDecimalDigits checks the digits counted for a retagged summary's
// room against strconv, at every power of ten.
func TestDecimalDigits(t *testing.T) {
	for v := uint64(1); ; v *= 10 {
		for _, x := range []uint64{v - 1, v, v + 1} {
			if got, want := decimalDigits(x), len(strconv.FormatUint(x, 10)); got != want {
				t.Errorf("decimalDigits(%d) = %d, want %d", x, got, want)
			}
		}
		if v > 1<<64/10 {
			break
		}
	}
	if got := decimalDigits(1<<64 - 1); got != 20 {
		t.Errorf("decimalDigits(max) = %d, want 20", got)
	}
}

// TestLendSummaries checks Summarizer.Lend: retagged delivery summaries
// are written in the buffer lent, the Summarizer hands out none of them
// again once the buffer is taken back (read reuses it then), what does
// not fit goes to its own memory, and every summary is the decoder's.
func TestLendSummaries(t *testing.T) {
	var b []byte
	for tag := uint64(1); tag <= 600; tag++ {
		m := &BasicDeliver{ConsumerTag: []byte("c1"), DeliveryTag: tag, Exchange: []byte("ex"), RoutingKey: []byte("rk")}
		b = AppendMethodFrame(b, 1, m)
		if tag%50 == 0 {
			b = AppendMethodFrame(b, 1, m) // the same bytes again
		}
	}
	now, later := decodeNowAndLater(b)
	if len(later.units) != len(now.units) || len(later.units) != 612 {
		t.Fatalf("%d and %d units, want 612", len(later.units), len(now.units))
	}
	var z Summarizer
	in := func(s string, buf []byte) bool {
		p, q := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(buf[:cap(buf)])))
		return p >= q && p < q+uintptr(cap(buf))
	}
	lentTo := 0
	// Batches of up to 40 units, one ending before each repeated
	// delivery: the repeat's summary must not be the one in the buffer
	// just taken back.
	for i := 0; i < len(later.units); {
		j := i + 1
		for j < len(later.units) && j-i < 40 && string(later.units[j].Raw) != string(later.units[j-1].Raw) {
			j++
		}
		// A small buffer, so that some batches overflow it.
		z.Lend(make([]byte, 0, 1200))
		units := later.units[i:j]
		for _, u := range units {
			z.Summarize(u)
		}
		buf := z.Lend(nil)
		for k, u := range units {
			if want := now.units[i+k].Summary; u.Summary != want {
				t.Fatalf("unit %d: summarised %q, want %q", i+k+1, u.Summary, want)
			}
			if in(u.Summary, buf) {
				lentTo++
			}
		}
		if len(buf) > cap(buf) || len(buf) == 0 {
			t.Fatalf("batch at %d: %d bytes of %d written in the lent buffer", i, len(buf), cap(buf))
		}
		// Done with: read reuses the buffer, as garbage here.
		buf = buf[:cap(buf)]
		for x := range buf {
			buf[x] = '#'
		}
		i = j
	}
	if lentTo < len(later.units)/2 || lentTo == len(later.units) {
		t.Errorf("%d summaries of %d in lent buffers, want most but not all (the small buffer overflows)", lentTo, len(later.units))
	}
}
