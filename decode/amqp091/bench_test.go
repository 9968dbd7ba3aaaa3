package amqp091

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// codecCase is one of the frames whose parse and encode must not allocate.
type codecCase struct {
	name  string
	frame []byte
	parse func(md *MethodDecoder, h *ContentHeader, f Frame) error
	enc   func(dst []byte) []byte
}

func codecCases(tb testing.TB) []codecCase {
	pub := &BasicPublish{Exchange: []byte("amq.direct"), RoutingKey: []byte("key"), Mandatory: true}
	ack := &BasicAck{DeliveryTag: 1}
	cl := &ChannelClose{ReplyCode: PreconditionFailed, ReplyText: []byte("PRECONDITION_FAILED"), ClassID: ClassQueue, MethodID: 10}
	var hdr ContentHeader
	f, _, err := ParseFrame(headerFrame, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if err := hdr.DecodeFromBytes(f.Payload); err != nil {
		tb.Fatal(err)
	}
	hdr.Properties.Headers = append(Table(nil), hdr.Properties.Headers...)
	hdr.Properties.ContentType = append([]byte(nil), hdr.Properties.ContentType...)
	method := func(md *MethodDecoder, _ *ContentHeader, f Frame) error {
		_, err := md.Decode(f.Payload)
		return err
	}
	return []codecCase{
		{"basic.publish", publishFrame, method, func(dst []byte) []byte { return AppendMethodFrame(dst, 1, pub) }},
		{"basic.ack", ackFrame, method, func(dst []byte) []byte { return AppendMethodFrame(dst, 1, ack) }},
		{"channel.close", channelCloseFrame, method, func(dst []byte) []byte { return AppendMethodFrame(dst, 1, cl) }},
		{"content-header", headerFrame, func(_ *MethodDecoder, h *ContentHeader, f Frame) error {
			if err := h.DecodeFromBytes(f.Payload); err != nil {
				return err
			}
			// Reading the headers table is part of parsing it.
			it := h.Properties.Headers.Iter()
			for it.Next() {
			}
			return it.Err()
		}, func(dst []byte) []byte { return AppendHeaderFrame(dst, 1, &hdr) }},
	}
}

func TestCodecAllocs(t *testing.T) {
	for _, c := range codecCases(t) {
		var md MethodDecoder
		var h ContentHeader
		parse := testing.AllocsPerRun(100, func() {
			f, _, err := ParseFrame(c.frame, 0)
			if err == nil {
				err = c.parse(&md, &h, f)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
		buf := make([]byte, 0, 256)
		var out []byte
		enc := testing.AllocsPerRun(100, func() { out = c.enc(buf[:0]) })
		if parse != 0 || enc != 0 {
			t.Errorf("%s: %v allocs to parse, %v to encode; want 0", c.name, parse, enc)
		}
		if !bytes.Equal(out, c.frame) {
			t.Errorf("%s: encoded % x, want % x", c.name, out, c.frame)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, c := range codecCases(b) {
		b.Run(c.name, func(b *testing.B) {
			var md MethodDecoder
			var h ContentHeader
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			for b.Loop() {
				f, _, err := ParseFrame(c.frame, 0)
				if err == nil {
					err = c.parse(&md, &h, f)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range codecCases(b) {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.ReportAllocs()
			b.SetBytes(int64(len(c.frame)))
			for b.Loop() {
				buf = c.enc(buf[:0])
			}
		})
	}
}

// conversation is a publish/consume session as a client and RabbitMQ would
// have it: n messages of size bytes each, published, delivered and acked.
func conversation(n, size, frameMax int) (client, server []byte) {
	client = append(client, ProtocolHeader...)
	client = AppendMethodFrame(client, 0, &ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00guest\x00guest"), Locale: []byte("en_US")})
	client = AppendMethodFrame(client, 0, &ConnectionTuneOk{ChannelMax: 2047, FrameMax: uint32(frameMax), Heartbeat: 60})
	client = AppendMethodFrame(client, 0, &ConnectionOpen{VirtualHost: []byte("/")})
	client = AppendMethodFrame(client, 1, &ChannelOpen{})
	server = AppendMethodFrame(server, 0, &ConnectionStart{VersionMinor: 9, Mechanisms: []byte("PLAIN AMQPLAIN"), Locales: []byte("en_US")})
	server = AppendMethodFrame(server, 0, &ConnectionTune{ChannelMax: 2047, FrameMax: uint32(frameMax), Heartbeat: 60})
	server = AppendMethodFrame(server, 0, &ConnectionOpenOk{})
	server = AppendMethodFrame(server, 1, &ChannelOpenOk{})
	var headers Table
	headers = headers.Append("x-trace", StringValue("abc")).Append("n", Int32Value(7))
	props := &Properties{Flags: FlagContentType | FlagHeaders | FlagDeliveryMode, ContentType: []byte("application/json"), Headers: headers, DeliveryMode: 2}
	// Random bytes, with a heartbeat frame and a method frame header inside,
	// so resynchronisation cannot count on bodies looking unlike frames.
	body := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	copy(body[min(10, size):], AppendHeartbeatFrame(nil))
	copy(body[min(40, size):], publishFrame[:11])
	for i := 1; i <= n; i++ {
		client = AppendMessage(client, 1, &BasicPublish{Exchange: []byte("amq.direct"), RoutingKey: []byte("orders")}, props, body, frameMax)
		server = AppendMessage(server, 1, &BasicDeliver{ConsumerTag: []byte("ctag-1"), DeliveryTag: uint64(i), Exchange: []byte("amq.direct"), RoutingKey: []byte("orders")}, props, body, frameMax)
		client = AppendMethodFrame(client, 1, &BasicAck{DeliveryTag: uint64(i)})
		if i%100 == 0 {
			server = AppendHeartbeatFrame(server)
		}
	}
	client = AppendMethodFrame(client, 0, &ConnectionClose{ReplyCode: ReplySuccess, ReplyText: []byte("bye")})
	server = AppendMethodFrame(server, 0, &ConnectionCloseOk{})
	return client, server
}

// BenchmarkDecoder measures the per-connection decoder on a publish/consume
// conversation fed in 1460-byte segments, as TCP reassembly hands it over.
func BenchmarkDecoder(b *testing.B) {
	for _, size := range []int{100, 10000} {
		client, server := conversation(1000, size, 131072)
		b.Run("body="+uitoa(uint64(size)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(client) + len(server)))
			units := 0
			emit := func(u *decode.Unit) { units++ }
			now := time.Now()
			for b.Loop() {
				feedConversation(New(&decode.Conn{ID: 1}, decode.DefaultOptions(), emit), client, server, 1460, now)
			}
			b.ReportMetric(float64(units)/float64(b.N), "units/op")
		})
	}
}

// TestFindFieldAllocs: the finder allocates nothing when the field is
// absent (the common case of a filter scan) and at most the boxing of the
// value when it is found; the unit's tree is never built.
func TestFindFieldAllocs(t *testing.T) {
	var units []*decode.Unit
	d := New(&decode.Conn{ID: 1}, decode.DefaultOptions(), func(u *decode.Unit) { units = append(units, u) })
	d.Feed(decode.DirF, append([]byte(ProtocolHeader), publishFrame...), t0)
	var pub *decode.Unit
	for _, u := range units {
		if u.Type == "basic.publish" {
			pub = u
		}
	}
	if pub == nil {
		t.Fatal("no basic.publish unit")
	}
	for _, c := range []struct {
		name   string
		found  bool
		allocs float64
	}{
		{"amqp.method.arguments.delivery_tag", false, 0}, // publish has none
		{"amqp.method.properties.content_type", false, 0},
		{"amqp.method.arguments.mandatory", true, 0}, // a bool boxes for free
		{"amqp.method.arguments.routing_key", true, 1},
	} {
		var ok, handled bool
		n := testing.AllocsPerRun(100, func() { _, ok, handled = pub.FindField(c.name, 0) })
		if !handled || ok != c.found {
			t.Errorf("%s: handled %v found %v, want handled, found %v", c.name, handled, ok, c.found)
		}
		if n > c.allocs {
			t.Errorf("%s: %v allocations per lookup, want at most %v", c.name, n, c.allocs)
		}
	}
}

// BenchmarkAppendPrintable appends an exchange name of a summary.
func BenchmarkAppendPrintable(b *testing.B) {
	s := []byte("wiretap.bench-fanout.orders.eu-west")
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		dst = appendPrintable(dst[:0], s, 200)
	}
}

// TestAppendPrintableControls: control bytes are shown as '.' wherever
// they fall in the eight-byte blocks, and bytes from 0x80 are kept.
func TestAppendPrintableControls(t *testing.T) {
	base := []byte("abcdefghijklmnopqrstuvwxyz0123\xc3\xa9")
	for i := range base {
		for _, c := range []byte{0, 0x1f, 0x7f, '\n', 0x80, 0xff, ' '} {
			s := append([]byte(nil), base...)
			s[i] = c
			want := append([]byte(nil), s...)
			for j, x := range want {
				if x < 0x20 || x == 0x7f {
					want[j] = '.'
				}
			}
			if got := appendPrintable([]byte("x="), s, 200); string(got) != "x="+string(want) {
				t.Fatalf("byte %#x at %d: %q, want %q", c, i, got, "x="+string(want))
			}
		}
	}
}

// BenchmarkDecoderLargeBodies measures the decoder on the corpus's
// amqp091-large shape: bodies of 64 KiB to 1 MiB over RabbitMQ's 128 KiB
// frames, fed in 64 KiB segments (what segmentation offload hands a
// capture).
func BenchmarkDecoderLargeBodies(b *testing.B) {
	var client, server []byte
	for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
		c, s := conversation(4, size, 131072)
		client, server = append(client, c...), append(server, s...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(client) + len(server)))
	units := 0
	emit := func(u *decode.Unit) { units++ }
	now := time.Now()
	for b.Loop() {
		feedConversation(New(&decode.Conn{ID: 1}, decode.DefaultOptions(), emit), client, server, 65536, now)
	}
	b.ReportMetric(float64(units)/float64(b.N), "units/op")
}

// feedConversation feeds d the client's bytes and then the server's, in
// segments of seg bytes, as TCP reassembly hands them over, and ends both.
func feedConversation(d decode.Decoder, client, server []byte, seg int, now time.Time) {
	for _, s := range []struct {
		dir decode.Dir
		b   []byte
	}{{decode.DirF, client}, {decode.DirB, server}} {
		for off := 0; off < len(s.b); off += seg {
			d.Feed(s.dir, s.b[off:min(off+seg, len(s.b))], now)
		}
		d.End(s.dir, now)
	}
}
