package amqp091

import (
	"testing"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestLateSummaries checks Options.LateSummaries and the Summarizer: the
// decoder leaves the summaries of methods outside the connection class
// (and only those) as SummaryLater, and the Summarizer makes them what
// the decoder would have, leaving every other unit alone, a truncated
// frame's empty summary included.
func TestLateSummaries(t *testing.T) {
	client, _ := conversation(3, 100, 4096)
	// A publish cut short at the end of the stream: the decoder shows it
	// with an empty summary and an error.
	cut := AppendMethodFrame(nil, 1, &BasicPublish{Exchange: []byte("ex"), RoutingKey: []byte("cut")})
	client = append(client, cut[:len(cut)-3]...)

	d, now := newTestDecoder(nil)
	feedChunks(d, decode.DirF, client, 1460)
	d.End(decode.DirF, t0)
	opt := decode.DefaultOptions()
	opt.LateSummaries = true
	dl, later := newTestDecoder(opt)
	feedChunks(dl, decode.DirF, client, 1460)
	dl.End(decode.DirF, t0)
	if len(later.units) != len(now.units) {
		t.Fatalf("%d units with late summaries, %d without", len(later.units), len(now.units))
	}
	var z Summarizer
	left := 0
	for i, u := range later.units {
		want := now.units[i].Summary
		method := len(u.Raw) >= FrameHeaderSize+4 && FrameType(u.Raw[0]) == FrameMethod && u.Err() == ""
		class := uint16(0)
		if method {
			class = uint16(u.Raw[FrameHeaderSize])<<8 | uint16(u.Raw[FrameHeaderSize+1])
		}
		if late := u.Summary == SummaryLater; late != (method && class != ClassConnection) {
			t.Errorf("unit %d %s: summary %q", i+1, u.Type, u.Summary)
		} else if late {
			left++
		}
		z.Summarize(u)
		if u.Summary != want {
			t.Errorf("unit %d %s: summarised %q, want %q", i+1, u.Type, u.Summary, want)
		}
	}
	if left < 3*2 {
		t.Errorf("%d summaries left to the Summarizer, want a publish and an ack per message at least", left)
	}
	if last := later.units[len(later.units)-1]; last.Summary != "" || last.Err() == "" {
		t.Errorf("the cut publish: summary %q, error %q", last.Summary, last.Err())
	}
}

// TestHeaderSummaryShared checks that content headers with the same bytes
// share their summary's string, and that a different header gets its own.
func TestHeaderSummaryShared(t *testing.T) {
	var b []byte
	for _, typ := range []string{"text/plain", "text/plain", "application/json"} {
		b = AppendMessage(b, 1, &BasicPublish{Exchange: []byte("ex")}, &Properties{Flags: FlagContentType, ContentType: []byte(typ)}, []byte("x"), 4096)
	}
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b, t0)
	var hs []*decode.Unit
	for _, u := range r.units {
		if u.Type == UnitContentHeader {
			hs = append(hs, u)
		}
	}
	if len(hs) != 3 {
		t.Fatalf("%d headers", len(hs))
	}
	if hs[0].Summary != "Content-Header type=text/plain size=1" || unsafe.StringData(hs[1].Summary) != unsafe.StringData(hs[0].Summary) {
		t.Errorf("headers 1 and 2: %q and %q, not one string", hs[0].Summary, hs[1].Summary)
	}
	if hs[2].Summary != "Content-Header type=application/json size=1" {
		t.Errorf("header 3: %q", hs[2].Summary)
	}
}

// TestSummarizeAllocs checks that making late summaries allocates nothing
// but, now and then, a slab: not a string a unit, whether a summary is
// made afresh (publishes to two routing keys, one after the other) or
// from the last one (deliveries, whose tags differ).
func TestSummarizeAllocs(t *testing.T) {
	opt := decode.DefaultOptions()
	opt.LateSummaries = true
	for _, c := range []struct {
		dir  decode.Dir
		m    func(i int) Method
		want string
	}{
		{decode.DirF, func(i int) Method { return &BasicPublish{Exchange: []byte("ex"), RoutingKey: []byte{'a' + byte(i)}} }, "Basic.Publish x=ex rk=b"},
		{decode.DirB, func(i int) Method {
			return &BasicDeliver{ConsumerTag: []byte("c"), DeliveryTag: 1000 + uint64(i), Exchange: []byte("ex")}
		}, "Basic.Deliver ctag=c tag=1001 x=ex rk="},
	} {
		var b []byte
		for i := range 2 {
			b = AppendMethodFrame(b, 1, c.m(i))
		}
		d, r := newTestDecoder(opt)
		d.Feed(c.dir, b, t0)
		if len(r.units) != 2 {
			t.Fatalf("%d units", len(r.units))
		}
		var z Summarizer
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			u := r.units[i&1] // alternating: each one made afresh
			i++
			u.Summary = SummaryLater
			z.Summarize(u)
		})
		if allocs > 0.01 {
			t.Errorf("%s: %.3f allocations a summary", c.want, allocs)
		}
		if r.units[1].Summary != c.want {
			t.Errorf("summary %q, want %q", r.units[1].Summary, c.want)
		}
	}
}
