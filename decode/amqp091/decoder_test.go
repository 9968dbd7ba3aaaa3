package amqp091

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// recorder collects what a decoder emits.
type recorder struct {
	units []*decode.Unit
}

func (r *recorder) emit(u *decode.Unit) { r.units = append(r.units, u) }

func (r *recorder) types() []string {
	var s []string
	for _, u := range r.units {
		s = append(s, u.Type)
	}
	return s
}

func newTestDecoder(opt *decode.Options) (decode.Decoder, *recorder) {
	r := &recorder{}
	return New(&decode.Conn{ID: 1}, opt, r.emit), r
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// checkSummaries fails t unless r has as many units as want has
// summaries, each unit's the one at its place.
func checkSummaries(t *testing.T, r *recorder, want []string) {
	t.Helper()
	if len(r.units) != len(want) {
		t.Fatalf("%d units: %v", len(r.units), r.types())
	}
	for i, u := range r.units {
		if u.Summary != want[i] {
			t.Errorf("unit %d: summary %q, want %q", i+1, u.Summary, want[i])
		}
	}
}

// feedChunks feeds b in pieces of n bytes.
func feedChunks(d decode.Decoder, dir decode.Dir, b []byte, n int) {
	for off := 0; off < len(b); off += n {
		d.Feed(dir, b[off:min(off+n, len(b))], t0)
	}
}

func TestDecoderConversation(t *testing.T) {
	client, server := conversation(3, 10000, 4096)
	for _, chunk := range []int{1, 7, 1460, len(client)} {
		d, r := newTestDecoder(nil)
		feedChunks(d, decode.DirF, client, chunk)
		d.End(decode.DirF, t0)
		var want []string
		want = append(want, "protocol-header", "connection.start-ok", "connection.tune-ok", "connection.open", "channel.open")
		for i := 0; i < 3; i++ {
			want = append(want, "basic.publish", "content-header", "content-body", "content-body", "content-body", "basic.ack")
		}
		want = append(want, "connection.close")
		if got := r.types(); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("chunk %d: types\n%v\nwant\n%v", chunk, got, want)
		}
		var off int64
		for _, u := range r.units {
			if u.Err() != "" {
				t.Fatalf("chunk %d: %s: %s", chunk, u.Type, u.Err())
			}
			if u.Offset != off || u.Len != len(u.Raw) || !bytes.Equal(u.Raw, client[off:off+int64(u.Len)]) && !u.Secret {
				t.Fatalf("chunk %d: %s at %d, want %d", chunk, u.Type, u.Offset, off)
			}
			off += int64(u.Len)
			u.Fields() // must not panic
		}
		if off != int64(len(client)) {
			t.Fatalf("units cover %d of %d bytes", off, len(client))
		}
		r.units = nil
		feedChunks(d, decode.DirB, server, chunk)
		d.End(decode.DirB, t0)
		deliveries := 0
		for _, u := range r.units {
			if u.Err() != "" || u.Dir != decode.DirB {
				t.Fatalf("chunk %d: server %s: %s", chunk, u.Type, u.Err())
			}
			if u.Type == "basic.deliver" {
				deliveries++
			}
		}
		if deliveries != 3 {
			t.Fatalf("chunk %d: %d deliveries", chunk, deliveries)
		}
	}
}

func TestDecoderSummaries(t *testing.T) {
	var b []byte
	b = append(b, ProtocolHeader...)
	b = AppendMethodFrame(b, 1, &BasicPublish{Exchange: []byte("amq.direct"), RoutingKey: []byte("foo"), Mandatory: true})
	b = AppendHeaderFrame(b, 1, &ContentHeader{ClassID: ClassBasic, BodySize: 5, Properties: Properties{Flags: FlagContentType | FlagDeliveryMode, ContentType: []byte("text/plain"), DeliveryMode: 2}})
	b = AppendFrame(b, FrameBody, 1, []byte("hello"))
	b = AppendMethodFrame(b, 1, &ChannelClose{ReplyCode: 404, ReplyText: []byte("NOT_FOUND - no queue 'q'"), ClassID: 50, MethodID: 10})
	b = AppendMethodFrame(b, 2, &QueueDeclare{Queue: []byte("jobs"), Durable: true})
	b = AppendMethodFrame(b, 2, &BasicAck{DeliveryTag: 42, Multiple: true})
	b = AppendMethodFrame(b, 0, &ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60})
	b = AppendHeartbeatFrame(b)
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b, t0)
	want := []string{
		"Protocol-Header AMQP 0-9-1",
		"Basic.Publish x=amq.direct rk=foo mandatory",
		"Content-Header type=text/plain size=5 persistent",
		"Content-Body len=5 (5/5 complete)",
		"Channel.Close reply=404 NOT_FOUND - no queue 'q' on=queue.declare",
		"Queue.Declare q=jobs durable",
		"Basic.Ack tag=42 multiple",
		"Connection.Tune channel-max=2047 frame-max=131072 heartbeat=60",
		"Heartbeat",
	}
	checkSummaries(t, r, want)
	for i, u := range r.units {
		if u.Type != "protocol-header" && (!u.HasChannel || u.Channel != binaryChannel(u.Raw)) {
			t.Errorf("unit %d channel %d", i, u.Channel)
		}
	}
}

func binaryChannel(raw []byte) uint16 { return uint16(raw[1])<<8 | uint16(raw[2]) }

// jsonShape renders a field tree the way INTERFACES.md's fields object is
// built: KindMap -> object keyed by Key, KindList -> array, leaves -> Value.
func jsonShape(fs []*decode.Field) map[string]any {
	m := map[string]any{}
	for _, f := range fs {
		m[f.Key] = shapeOf(f)
	}
	return m
}

func shapeOf(f *decode.Field) any {
	switch f.Kind {
	case decode.KindMap:
		return jsonShape(f.Kids)
	case decode.KindList:
		var l []any
		for _, k := range f.Kids {
			l = append(l, shapeOf(k))
		}
		return l
	}
	if b, ok := f.Value.([]byte); ok {
		return string(b)
	}
	return f.Value
}

func TestDecoderFields(t *testing.T) {
	var b []byte
	var args Table
	args = args.Append("x-max-length", Int64Value(10)).Append("x-queue-type", StringValue("quorum"))
	b = AppendMethodFrame(b, 1, &QueueDeclare{Queue: []byte("jobs"), Durable: true, Arguments: args})
	body := bytes.Repeat([]byte("0123456789"), 1000)
	var hdrs Table
	hdrs = hdrs.Append("trace", StringValue("t-1"))
	b = AppendMessage(b, 1, &BasicPublish{Exchange: []byte("ex"), RoutingKey: []byte("rk")},
		&Properties{Flags: FlagContentType | FlagHeaders, ContentType: []byte("text/plain"), Headers: hdrs}, body, 4096)
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b, t0)
	if got := strings.Join(r.types(), " "); got != "queue.declare basic.publish content-header content-body content-body content-body" {
		t.Fatal(got)
	}
	// Every field's range lies within the unit, and ranged leaves hold the
	// bytes they say.
	for _, u := range r.units {
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Offset < 0 || f.Offset+f.Length > len(u.Raw) {
				t.Errorf("%s: field %s range %d+%d outside %d bytes", u.Type, f.Key, f.Offset, f.Length, len(u.Raw))
			}
			return true
		})
	}
	qd := r.units[0].Fields()
	shape := bytes.TrimSpace(mustJSON(t, jsonShape(qd)))
	want := `{"arguments":{"arguments":{"x-max-length":-10,"x-queue-type":"quorum"},"auto-delete":false,"durable":true,"exclusive":false,"no-wait":false,"passive":false,"queue":"jobs","reserved-1":0},"channel":1,"class":50,"length":62,"method":10,"name":"queue.declare","type":1}`
	want = strings.Replace(want, "-10", "10", 1)
	if string(shape) != want {
		t.Errorf("queue.declare fields\n%s\nwant\n%s", shape, want)
	}
	rk := decode.Find(qd, "amqp.method.arguments.x_queue_type")
	if rk != nil {
		t.Errorf("table keys must keep their spelling: %+v", rk)
	}
	if f := decode.Find(qd, "amqp.method.arguments.arguments.x-queue-type"); f == nil || string(r.units[0].Raw[f.Offset:f.Offset+f.Length]) != "\x0cx-queue-typeS\x00\x00\x00\x06quorum" {
		t.Errorf("x-queue-type field %+v", f)
	}
	if f := decode.Find(qd, "amqp.method.arguments.queue"); f == nil || string(r.units[0].Raw[f.Offset:f.Offset+f.Length]) != "\x04jobs" {
		t.Errorf("queue field %+v", f)
	}
	// The last body frame carries the whole message.
	last := r.units[len(r.units)-1]
	lf := jsonShape(last.Fields())
	msg, ok := lf["message"].(map[string]any)
	if !ok {
		t.Fatalf("no message on the last body frame: %v", lf)
	}
	if msg["method"] != "basic.publish" || msg["body"] != string(body) || msg["body-size"] != uint64(len(body)) {
		t.Errorf("message %v", msg["method"])
	}
	if a := msg["arguments"].(map[string]any); a["routing-key"] != "rk" {
		t.Errorf("message arguments %v", a)
	}
	if p := msg["properties"].(map[string]any); p["content-type"] != "text/plain" || p["headers"].(map[string]any)["trace"] != "t-1" {
		t.Errorf("message properties %v", p)
	}
	if _, ok := jsonShape(r.units[3].Fields())["message"]; ok {
		t.Error("first body frame carries the message")
	}
}

func TestDecoderMaxMessage(t *testing.T) {
	body := bytes.Repeat([]byte("z"), 50000)
	b := AppendMessage(nil, 1, &BasicPublish{}, nil, body, 4096)
	opt := decode.DefaultOptions()
	opt.MaxMessage = 1000
	d, r := newTestDecoder(opt)
	d.Feed(decode.DirF, b, t0)
	last := r.units[len(r.units)-1]
	if len(last.Warnings()) == 0 {
		t.Fatal("no warning for a cut message")
	}
	f := decode.Find(last.Fields(), "amqp.message.body")
	if s, _ := f.Value.(string); len(s) != 1000 {
		t.Fatalf("kept %d bytes", len(s))
	}
}

func TestDecoderSecrets(t *testing.T) {
	var amqplain Table
	amqplain = amqplain.Append("LOGIN", StringValue("bob")).Append("PASSWORD", StringValue("hunter2"))
	frames := []struct {
		m      Method
		secret string
		user   string
	}{
		{&ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00alice\x00s3cret"), Locale: []byte("en_US")}, "s3cret", "alice"},
		{&ConnectionStartOk{Mechanism: []byte("AMQPLAIN"), Response: amqplain, Locale: []byte("en_US")}, "hunter2", "bob"},
		{&ConnectionStartOk{Mechanism: []byte("SCRAM-SHA-1"), Response: []byte("n,,n=u,r=nonce"), Locale: []byte("en_US")}, "n=u,r=nonce", ""},
		{&ConnectionSecureOk{Response: []byte("c=biws,p=proof")}, "c=biws,p=proof", ""},
		{&ConnectionUpdateSecret{NewSecret: []byte("eyJhbGciOi.token"), Reason: []byte("refresh")}, "eyJhbGciOi.token", ""},
	}
	for _, show := range []bool{false, true} {
		for _, c := range frames {
			opt := decode.DefaultOptions()
			opt.ShowSecrets = show
			d, r := newTestDecoder(opt)
			d.Feed(decode.DirF, AppendMethodFrame(nil, 0, c.m), t0)
			u := r.units[0]
			if u.Err() != "" {
				t.Fatal(u.Err())
			}
			leaked := bytes.Contains(u.Raw, []byte(c.secret))
			fs := u.Fields()
			var shown bool
			decode.Walk(fs, func(f *decode.Field) bool {
				if s, ok := f.Value.(string); ok && strings.Contains(s, c.secret) {
					shown = true
				}
				if b, ok := f.Value.([]byte); ok && bytes.Contains(b, []byte(c.secret)) {
					shown = true
				}
				return true
			})
			if show != leaked || show != shown || u.Secret == show {
				t.Errorf("%s show=%v: in raw %v, in fields %v, Secret %v", c.m.Name(), show, leaked, shown, u.Secret)
			}
			if !show && decode.Find(fs, "amqp.method.arguments.response") == nil && decode.Find(fs, "amqp.method.arguments.new_secret") == nil {
				t.Errorf("%s: secret field missing", c.m.Name())
			}
			if !show && !strings.Contains(string(mustJSON(t, jsonShape(fs))), decode.Redacted) {
				t.Errorf("%s: fields do not say %s", c.m.Name(), decode.Redacted)
			}
			if c.user != "" && !strings.Contains(u.Summary, "user="+c.user) {
				t.Errorf("%s: summary %q lacks the user", c.m.Name(), u.Summary)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecoderMalformed(t *testing.T) {
	good := AppendMethodFrame(nil, 1, &BasicAck{DeliveryTag: 5})
	hb := AppendHeartbeatFrame(nil)
	cases := []struct {
		name  string
		input []byte
		want  string // unit types
		errs  int
	}{
		{"garbage between frames", cat(good, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), good, hb), "basic.ack malformed basic.ack heartbeat", 1},
		{"huge frame claim", cat(good, []byte{3, 0, 1, 0x7f, 0xff, 0xff, 0xff, 1, 2, 3}, good), "basic.ack malformed basic.ack", 1},
		{"bad frame-end", cat(good, good[:len(good)-1], []byte{0}, good, hb), "basic.ack malformed basic.ack heartbeat", 1},
		{"unknown method", cat(AppendFrame(nil, FrameMethod, 1, []byte{0, 99, 0, 1}), good), "method basic.ack", 1},
		{"truncated arguments", cat(AppendFrame(nil, FrameMethod, 1, good[7:len(good)-3]), good), "basic.ack basic.ack", 1},
		{"short method payload", cat(AppendFrame(nil, FrameMethod, 1, []byte{0}), good), "method basic.ack", 1},
		{"bad content header", cat(AppendFrame(nil, FrameHeader, 1, []byte{0, 60, 0, 0, 0}), good), "content-header basic.ack", 1},
		{"frame cut at the end", cat(good, good[:12]), "basic.ack basic.ack", 1},
		{"only garbage", bytes.Repeat([]byte{0xff}, 5000), "malformed", 1},
	}
	for _, c := range cases {
		for _, chunk := range []int{1, 3, 1 << 20} {
			opt := decode.DefaultOptions()
			opt.MaxFrame = 1 << 20
			d, r := newTestDecoder(opt)
			feedChunks(d, decode.DirF, c.input, chunk)
			d.End(decode.DirF, t0)
			errs := 0
			var total int
			for _, u := range r.units {
				if u.Err() != "" {
					errs++
				}
				total += u.Len
				u.Fields()
			}
			if got := strings.Join(r.types(), " "); got != c.want || errs != c.errs {
				t.Errorf("%s (chunk %d): %q with %d errors, want %q with %d", c.name, chunk, got, errs, c.want, c.errs)
			}
			if total != len(c.input) {
				t.Errorf("%s (chunk %d): units cover %d of %d bytes", c.name, chunk, total, len(c.input))
			}
		}
	}
}

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// A frame header claiming gigabytes is an error at once: the decoder neither
// waits for nor allocates what it claims.
func TestDecoderAbsurdLength(t *testing.T) {
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, []byte{3, 0, 1, 0xff, 0xff, 0xff, 0xf0, 'x'}, t0)
	d.End(decode.DirF, t0)
	if len(r.units) != 1 || r.units[0].Type != UnitMalformed || !strings.Contains(r.units[0].Err(), "exceeds the limit") {
		t.Fatalf("%v %+v", r.types(), r.units)
	}
	// The negotiated frame-max is a limit too.
	d, r = newTestDecoder(nil)
	d.Feed(decode.DirF, AppendMethodFrame(nil, 0, &ConnectionTuneOk{FrameMax: 4096}), t0)
	d.Feed(decode.DirF, AppendFrame(nil, FrameBody, 1, make([]byte, 5000)), t0)
	d.End(decode.DirF, t0)
	if got := strings.Join(r.types(), " "); got != "connection.tune-ok malformed" || !strings.Contains(r.units[1].Err(), "4088") {
		t.Fatalf("%s: %+v", got, r.units[1])
	}
}

func TestDecoderResyncAfterGap(t *testing.T) {
	client, _ := conversation(20, 3000, 4096)
	// The true frame boundaries, from decoding the whole stream.
	d, full := newTestDecoder(nil)
	d.Feed(decode.DirF, client, t0)
	next := func(at int) int64 { // first boundary at or after at
		for _, u := range full.units {
			if u.Offset >= int64(at) {
				return u.Offset
			}
		}
		return int64(len(client))
	}
	for cut := 1; cut < len(client)-2000; cut += 97 {
		// The capture began mid-connection: a gap before the first byte.
		d, r := newTestDecoder(nil)
		d.Gap(decode.DirF, -1, t0)
		feedChunks(d, decode.DirF, client[cut:], 1460)
		d.End(decode.DirF, t0)
		checkResynced(t, "start", cut, client[cut:], r, next(cut)-int64(cut))

		// Bytes lost in the middle.
		d, r = newTestDecoder(nil)
		feedChunks(d, decode.DirF, client[:cut], 1460)
		d.Gap(decode.DirF, 777, t0)
		feedChunks(d, decode.DirF, client[cut+777:], 1460)
		d.End(decode.DirF, t0)
		checkResynced(t, "middle", cut, client, r, next(cut+777))
	}
}

// checkResynced checks that decoding resumed at the first frame boundary
// after the gap, at offset first, and went on without an error.
func checkResynced(t *testing.T, where string, cut int, stream []byte, r *recorder, first int64) {
	t.Helper()
	resumed := false
	for _, u := range r.units {
		if u.Err() != "" || u.Type == UnitMalformed {
			t.Errorf("%s gap at %d: %s unit at %d: %s", where, cut, u.Type, u.Offset, u.Err())
			return
		}
		if !u.Secret && !bytes.Equal(u.Raw, stream[u.Offset:u.Offset+int64(u.Len)]) {
			t.Errorf("%s gap at %d: %s unit at %d does not match the stream", where, cut, u.Type, u.Offset)
			return
		}
		if u.Offset >= int64(cut) || where == "start" {
			if !resumed && u.Offset != first {
				t.Errorf("%s gap at %d: resumed at %d, want %d", where, cut, u.Offset, first)
			}
			resumed = true
		}
	}
	if last := r.units[len(r.units)-1]; last.Type != "connection.close" {
		t.Errorf("%s gap at %d: last unit %s", where, cut, last.Type)
	}
}

// After a gap, body frames of a message whose start was lost carry no
// message; the next whole message is assembled again.
func TestDecoderGapDropsMessage(t *testing.T) {
	b := AppendMessage(nil, 1, &BasicPublish{RoutingKey: []byte("a")}, nil, bytes.Repeat([]byte("a"), 10000), 4096)
	second := AppendMessage(nil, 1, &BasicPublish{RoutingKey: []byte("b")}, nil, []byte("bee"), 4096)
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, b[:5000], t0)
	d.Gap(decode.DirF, 100, t0)
	d.Feed(decode.DirF, b[5100:], t0)
	d.Feed(decode.DirF, second, t0)
	for _, u := range r.units[:len(r.units)-1] {
		if f := decode.Find(u.Fields(), "amqp.message"); f != nil && u.Offset > 5000 {
			t.Fatalf("%s at %d carries a message", u.Type, u.Offset)
		}
	}
	last := r.units[len(r.units)-1]
	if f := decode.Find(last.Fields(), "amqp.message.body"); f == nil || f.Value != "bee" {
		t.Fatalf("second message not assembled: %+v", f)
	}
}

// Messages on different channels interleave frame by frame; each is
// assembled on its own, and the bytes kept for all of them are bounded.
func TestDecoderInterleavedChannels(t *testing.T) {
	split := func(ch uint16, body []byte) [][]byte {
		var frames [][]byte
		b := AppendMessage(nil, ch, &BasicPublish{RoutingKey: []byte{byte('0' + ch)}}, nil, body, 512)
		for len(b) > 0 {
			_, n, err := ParseFrame(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			frames = append(frames, b[:n])
			b = b[n:]
		}
		return frames
	}
	one, two := bytes.Repeat([]byte("1"), 3000), bytes.Repeat([]byte("2"), 2000)
	f1, f2 := split(1, one), split(2, two)
	var stream []byte
	for i := 0; i < max(len(f1), len(f2)); i++ {
		if i < len(f1) {
			stream = append(stream, f1[i]...)
		}
		if i < len(f2) {
			stream = append(stream, f2[i]...)
		}
	}
	for _, limit := range []int{1 << 20, 2500} {
		opt := decode.DefaultOptions()
		opt.MaxMessage = limit
		d, r := newTestDecoder(opt)
		for off := 0; off < len(stream); off += 100 {
			d.Feed(decode.DirF, stream[off:min(off+100, len(stream))], t0)
			if n := d.(*Decoder).inflight; n > limit {
				t.Fatalf("limit %d: %d bytes in flight", limit, n)
			}
		}
		got := map[uint16]string{}
		for _, u := range r.units {
			if u.Err() != "" {
				t.Fatal(u.Err())
			}
			if f := decode.Find(u.Fields(), "amqp.message.body"); f != nil {
				got[u.Channel] = f.Value.(string)
			}
		}
		if limit > 5000 && (got[1] != string(one) || got[2] != string(two)) {
			t.Fatalf("bodies %d and %d bytes", len(got[1]), len(got[2]))
		}
		if limit < 5000 && (len(got[1])+len(got[2]) >= len(one)+len(two) || !strings.HasPrefix(string(one), got[1]) || !strings.HasPrefix(string(two), got[2])) {
			t.Fatalf("limit %d: kept %d and %d bytes", limit, len(got[1]), len(got[2]))
		}
		if n := d.(*Decoder).inflight; n != 0 {
			t.Fatalf("limit %d: %d bytes still counted in flight", limit, n)
		}
	}
}

// A start-ok that is cut short, or whose other arguments are malformed,
// still has its password redacted.
func TestDecoderSecretsInBrokenFrames(t *testing.T) {
	full := AppendMethodFrame(nil, 0, &ConnectionStartOk{Mechanism: []byte("PLAIN"), Response: []byte("\x00alice\x00longpassword"), Locale: []byte("en_US")})
	// Cut inside the password: the stream ends there.
	cut := full[:bytes.Index(full, []byte("longpass"))+6]
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, cut, t0)
	d.End(decode.DirF, t0)
	if len(r.units) != 1 || r.units[0].Err() == "" {
		t.Fatalf("%v", r.types())
	}
	if u := r.units[0]; bytes.Contains(u.Raw, []byte("longpa")) || !u.Secret {
		t.Errorf("cut start-ok leaks: %q", u.Raw)
	}
	// The client-properties table is malformed: the arguments still decode
	// far enough to find the response.
	bad := AppendMethodFrame(nil, 0, &ConnectionStartOk{ClientProperties: Table{1, 'k', '?'}, Mechanism: []byte("PLAIN"),
		Response: []byte("\x00alice\x00longpassword"), Locale: []byte("en_US")})
	d, r = newTestDecoder(nil)
	d.Feed(decode.DirF, bad, t0)
	if u := r.units[0]; u.Err() == "" || bytes.Contains(u.Raw, []byte("longpassword")) || !u.Secret {
		t.Errorf("malformed start-ok leaks: err %q raw %q", u.Err(), u.Raw)
	}
	// A response whose length overruns the frame is overwritten whole.
	over := append([]byte(nil), full...)
	i := bytes.Index(over, []byte("\x00alice")) - 4
	over[i+3] = 0xff
	d, r = newTestDecoder(nil)
	d.Feed(decode.DirF, over, t0)
	if u := r.units[0]; bytes.Contains(u.Raw, []byte("longpassword")) || !u.Secret {
		t.Errorf("overrunning response leaks: %q", u.Raw)
	}
}

// Every field-value type shows up in the tree with its type octet, its value
// and the exact bytes it came from.
func TestDissectTableTypes(t *testing.T) {
	tab := sampleTable()
	fs := dissectTable(tab, 0, "amqp.method.arguments.arguments", 0)
	if len(fs) != 18 {
		t.Fatalf("%d fields", len(fs))
	}
	for _, f := range fs {
		raw := tab[f.Offset : f.Offset+f.Length]
		if int(raw[0]) != len(f.Key) || string(raw[1:1+len(f.Key)]) != f.Key || raw[1+len(f.Key)] != f.Encoding[0] {
			t.Errorf("%s: range % x, encoding %q", f.Key, raw, f.Encoding)
		}
		if f.Name != "amqp.method.arguments.arguments."+f.Key {
			t.Errorf("%s: name %q", f.Key, f.Name)
		}
	}
	shape := jsonShape(fs)
	want := map[string]any{"bool": true, "int8": int64(-8), "uint64": uint64(1 << 63), "decimal": "-12.34",
		"longstr": "héllo", "bytes": string([]byte{0, 1, 0xff}), "void": nil,
		"timestamp": time.Unix(1700000000, 0).UTC(), "table": map[string]any{"deep": "yes"}}
	for k, v := range want {
		if !reflect.DeepEqual(shape[k], v) {
			t.Errorf("%s = %#v, want %#v", k, shape[k], v)
		}
	}
	arr, ok := shape["array"].([]any)
	if !ok || len(arr) != 4 || arr[0] != int64(-7) || arr[1] != "two" {
		t.Errorf("array = %#v", shape["array"])
	}
	// Nested ranges are relative to the same base.
	for _, f := range fs {
		if f.Key == "table" {
			k := f.Kids[0]
			if string(tab[k.Offset:k.Offset+k.Length]) != "\x04deepS\x00\x00\x00\x03yes" {
				t.Errorf("nested range % x", tab[k.Offset:k.Offset+k.Length])
			}
		}
	}
}

// Every filterable name the decoder puts in a tree is registered for
// completion, or is one of the filter's own fields.
func TestFieldNamesRegistered(t *testing.T) {
	known := map[string]bool{"amqp.type": true, "amqp.channel": true, "amqp.method": true}
	for _, f := range decode.FieldNames() {
		known[f.Name] = true
	}
	client, server := conversation(1, 10, 4096)
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, client, t0)
	d.Feed(decode.DirB, server, t0)
	var b []byte
	for _, m := range sampleMethods {
		b = AppendMethodFrame(b, 1, m)
	}
	b = AppendHeaderFrame(b, 1, &ContentHeader{ClassID: ClassBasic, Properties: sampleProperties})
	d.Feed(decode.DirF, b, t0)
	for _, u := range r.units {
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Name != "" && !known[f.Name] && !strings.Contains(f.Name, ".arguments.arguments.") &&
				!strings.Contains(f.Name, "_properties.") && !strings.Contains(f.Name, ".headers.") {
				t.Errorf("%s: field %s not registered", u.Type, f.Name)
			}
			return true
		})
	}
}

// A server that does not speak the client's version answers with the
// protocol header it does speak; a 0-8 client's header is shown with a
// warning.
func TestDecoderProtocolHeaders(t *testing.T) {
	d, r := newTestDecoder(nil)
	d.Feed(decode.DirF, []byte("AMQP\x01\x01\x08\x00"), t0)
	d.Feed(decode.DirB, []byte("AMQP\x00\x00\x09\x01"), t0)
	d.End(decode.DirF, t0)
	d.End(decode.DirB, t0)
	if len(r.units) != 2 {
		t.Fatalf("%v", r.types())
	}
	if u := r.units[0]; u.Type != UnitProtocolHeader || u.Summary != "Protocol-Header AMQP 1.1.8.0" || len(u.Warnings()) != 1 {
		t.Errorf("0-8 header: %+v", u)
	}
	if u := r.units[1]; u.Summary != "Protocol-Header AMQP 0-9-1" || len(u.Warnings()) != 0 || u.HasChannel {
		t.Errorf("0-9-1 header: %+v", u)
	}
	fs := jsonShape(r.units[1].Fields())
	if fs["protocol"] != "AMQP" || fs["version-minor"] != uint64(9) {
		t.Errorf("fields %v", fs)
	}
	// A header cut short at the end of the stream is an error unit.
	d, r = newTestDecoder(nil)
	d.Feed(decode.DirF, []byte("AMQP\x00"), t0)
	d.End(decode.DirF, t0)
	if len(r.units) != 1 || r.units[0].Err() == "" {
		t.Errorf("cut header: %v", r.types())
	}
}
