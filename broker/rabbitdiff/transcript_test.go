package rabbitdiff

import (
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// wire concatenates frames into a server-to-client stream.
func wire(parts ...[]byte) []byte { return slices.Concat(parts...) }

func method(ch uint16, m amqp091.Method) []byte { return amqp091.AppendMethodFrame(nil, ch, m) }

func message(ch uint16, m amqp091.Method, props *amqp091.Properties, body string) []byte {
	return amqp091.AppendMessage(nil, ch, m, props, []byte(body), 0)
}

func build(opt Options, streams ...[]byte) *Transcript {
	recs := make([]Recording, len(streams))
	for i, s := range streams {
		recs[i].ServerBytes = s
	}
	return Build(recs, opt)
}

func TestBuildSeparatesDeliveriesFromReplies(t *testing.T) {
	deliver := func(tag uint64, body string) []byte {
		return message(1, &amqp091.BasicDeliver{ConsumerTag: []byte("c"), DeliveryTag: tag, RoutingKey: []byte("k")},
			&amqp091.Properties{Flags: amqp091.FlagContentType, ContentType: []byte("text/plain")}, body)
	}
	s := wire(
		method(1, &amqp091.BasicConsumeOk{ConsumerTag: []byte("c")}),
		deliver(1, "one"),
		method(1, &amqp091.BasicQosOk{}),
		message(1, &amqp091.BasicGetOk{DeliveryTag: 2, RoutingKey: []byte("k"), MessageCount: 3}, nil, "got"),
		deliver(3, "two"),
		method(1, &amqp091.BasicCancel{ConsumerTag: []byte("c"), NoWait: true}),
	)
	tr := build(Options{}, s)
	ch := tr.Conns[0].Channels[0]
	wantReplies := []string{
		"basic.consume-ok ctag=c",
		"basic.qos-ok",
		`basic.get-ok tag=2 redelivered=false exchange="" rk=k message-count=3`,
		"content-header size=3 props={}",
		`body "got"`,
	}
	wantDeliveries := []string{
		`basic.deliver ctag=c tag=1 redelivered=false exchange="" rk=k`,
		"content-header size=3 props={content-type=text/plain}",
		`body "one"`,
		`basic.deliver ctag=c tag=3 redelivered=false exchange="" rk=k`,
		"content-header size=3 props={content-type=text/plain}",
		`body "two"`,
		"basic.cancel ctag=c no-wait=true",
	}
	if !slices.Equal(ch.Replies, wantReplies) {
		t.Errorf("replies:\n%s\nwant:\n%s", strings.Join(ch.Replies, "\n"), strings.Join(wantReplies, "\n"))
	}
	if !slices.Equal(ch.Deliveries, wantDeliveries) {
		t.Errorf("deliveries:\n%s\nwant:\n%s", strings.Join(ch.Deliveries, "\n"), strings.Join(wantDeliveries, "\n"))
	}
	// The interleaving of the two sequences does not matter...
	moved := wire(method(1, &amqp091.BasicConsumeOk{ConsumerTag: []byte("c")}), method(1, &amqp091.BasicQosOk{}),
		message(1, &amqp091.BasicGetOk{DeliveryTag: 2, RoutingKey: []byte("k"), MessageCount: 3}, nil, "got"),
		deliver(1, "one"), deliver(3, "two"), method(1, &amqp091.BasicCancel{ConsumerTag: []byte("c"), NoWait: true}))
	if a, b := tr.String(), build(Options{}, moved).String(); a != b {
		t.Errorf("interleaving changed the transcript:\n%s", UnifiedDiff("a", a, "b", b))
	}
	// ...unless the workload asks for strict order.
	if a, b := build(Options{Strict: true}, s).String(), build(Options{Strict: true}, moved).String(); a == b {
		t.Errorf("strict order ignored the interleaving:\n%s", a)
	}
	if got := build(Options{Strict: true}, s).Conns[0].Channels[0]; len(got.Deliveries) != 0 || len(got.Replies) != 12 {
		t.Errorf("strict: %d replies, %d deliveries", len(got.Replies), len(got.Deliveries))
	}
}

func TestBuildConfirmsReadAlikeHoweverCoalesced(t *testing.T) {
	ack := func(tag uint64, multiple bool) []byte {
		return method(1, &amqp091.BasicAck{DeliveryTag: tag, Multiple: multiple})
	}
	nack := func(tag uint64, multiple bool) []byte {
		return method(1, &amqp091.BasicNack{DeliveryTag: tag, Multiple: multiple})
	}
	ret := message(1, &amqp091.BasicReturn{ReplyCode: 312, ReplyText: []byte("NO_ROUTE"), RoutingKey: []byte("k")}, nil, "r")
	cases := []struct {
		name string
		a, b []byte
		same bool
	}{
		{"singles vs one multiple", wire(ack(1, false), ack(2, false), ack(3, false)), ack(3, true), true},
		{"partial multiple", wire(ack(2, true), ack(3, false)), ack(3, true), true},
		{"out of order singles", wire(ack(2, false), ack(1, false), ack(3, true)), wire(ack(2, false), ack(1, false), ack(3, false)), true},
		{"nack in the middle", wire(ack(1, false), nack(2, false), ack(3, false)), wire(ack(1, false), nack(2, false), ack(3, true)), true},
		{"ack vs nack", ack(3, true), nack(3, true), false},
		{"fewer tags", ack(3, true), ack(2, true), false},
		{"return before vs after", wire(ret, ack(1, false)), wire(ack(1, false), ret), false},
		{"duplicate ack", wire(ack(1, false), ack(1, false)), ack(1, false), false},
	}
	for _, c := range cases {
		a, b := build(Options{}, c.a).String(), build(Options{}, c.b).String()
		if (a == b) != c.same {
			t.Errorf("%s: same=%v, want %v:\n%s\n%s", c.name, a == b, c.same, a, b)
		}
	}
	got := build(Options{}, wire(ack(2, true), nack(3, false), ret, ack(5, true))).Conns[0].Channels[0].Replies
	want := []string{"basic.ack tags=1-2", "basic.nack requeue=false tag=3", `basic.return 312 "NO_ROUTE" exchange="" rk=k`,
		"content-header size=1 props={}", `body "r"`, "basic.ack tags=4-5"}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A reopened channel starts its tags again.
	reopened := build(Options{}, wire(ack(1, false), method(1, &amqp091.ChannelOpenOk{}), ack(1, false))).Conns[0].Channels[0].Replies
	if want := []string{"basic.ack tag=1", "channel.open-ok", "basic.ack tag=1"}; !slices.Equal(reopened, want) {
		t.Errorf("reopened: %q, want %q", reopened, want)
	}
}

func TestBuildNormalisesGeneratedNames(t *testing.T) {
	session := func(q1, q2, tag string) []byte {
		return wire(
			method(1, &amqp091.QueueDeclareOk{Queue: []byte(q1)}),
			method(1, &amqp091.QueueDeclareOk{Queue: []byte(q2)}),
			method(1, &amqp091.BasicConsumeOk{ConsumerTag: []byte(tag)}),
			method(1, &amqp091.ChannelClose{ReplyCode: 404, ReplyText: []byte("NOT_FOUND - no queue '" + q1 + "' in vhost '/'"), ClassID: 50, MethodID: 10}),
		)
	}
	gen := func(c byte) string { return "amq.gen-" + strings.Repeat(string(c), 22) }
	ctag := "amq.ctag-" + strings.Repeat("Z", 22)
	a := build(Options{}, session(gen('A'), gen('B'), ctag)).String()
	b := build(Options{}, session(gen('x'), gen('y'), "amq.ctag-"+strings.Repeat("-", 22))).String()
	if a != b {
		t.Errorf("generated names not normalised:\n%s", UnifiedDiff("a", a, "b", b))
	}
	if !strings.Contains(a, "queue=<gen1>") || !strings.Contains(a, "queue=<gen2>") || !strings.Contains(a, "no queue '<gen1>'") || !strings.Contains(a, "ctag=<ctag1>") {
		t.Errorf("labels:\n%s", a)
	}
	// The same name twice is not two names.
	if c := build(Options{}, session(gen('A'), gen('A'), ctag)).String(); c == a {
		t.Errorf("a repeated name read like two names:\n%s", c)
	}
	// A name of another shape is left alone, so the difference shows.
	if c := build(Options{}, session("amq.gen-short", gen('B'), ctag)).String(); !strings.Contains(c, "amq.gen-short") {
		t.Errorf("short name was normalised:\n%s", c)
	}
	// The run prefix.
	p := build(Options{Prefix: "rd1234abcd."}, method(1, &amqp091.QueueDeclareOk{Queue: []byte("rd1234abcd.q")})).String()
	if !strings.Contains(p, "queue=<run>.q") {
		t.Errorf("prefix: %s", p)
	}
	// Direct reply-to names.
	r := build(Options{}, message(1, &amqp091.BasicDeliver{ConsumerTag: []byte("c"), DeliveryTag: 1, RoutingKey: []byte("amq.rabbitmq.reply-to.g1h2AA5y==.abc")},
		&amqp091.Properties{Flags: amqp091.FlagReplyTo, ReplyTo: []byte("amq.rabbitmq.reply-to.g1h2AA5y==.abc")}, "x")).String()
	if strings.Count(r, "<replyto1>") != 2 || strings.Contains(r, "g1h2") {
		t.Errorf("reply-to: %s", r)
	}
	// Client notes share the numbering.
	tr := build(Options{}, session(gen('A'), gen('B'), ctag))
	tr.AddClient("declared " + gen('B'))
	if got := tr.Client[0]; got != "declared <gen2>" {
		t.Errorf("client note: %q", got)
	}
}

func TestBuildXDeathAndTables(t *testing.T) {
	header := func(when time.Time, count amqp091.Value, extra string) []byte {
		death := amqp091.Table(nil).
			Append("reason", amqp091.StringValue("expired")).
			Append("count", count).
			Append("time", amqp091.TimestampValue(when)).
			Append("routing-keys", amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.StringValue("k"))))
		h := amqp091.Table(nil).Append("x-death", amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.TableValue(death)))).
			Append("sent", amqp091.TimestampValue(time.Unix(1700000000, 0))).
			Append("z", amqp091.StringValue(extra))
		return message(1, &amqp091.BasicGetOk{DeliveryTag: 1}, &amqp091.Properties{Flags: amqp091.FlagHeaders, Headers: h}, "b")
	}
	t1, t2 := time.Unix(1700000100, 0), time.Unix(1700009999, 0)
	a := build(Options{}, header(t1, amqp091.Int64Value(1), "v")).String()
	if b := build(Options{}, header(t2, amqp091.Int64Value(1), "v")).String(); a != b {
		t.Errorf("x-death time not normalised:\n%s", UnifiedDiff("a", a, "b", b))
	}
	if b := build(Options{}, header(t1, amqp091.Int32Value(1), "v")).String(); a == b {
		t.Errorf("count's type was not compared: %s", a)
	}
	if b := build(Options{}, header(t1, amqp091.Int64Value(2), "v")).String(); a == b {
		t.Errorf("count was not compared: %s", a)
	}
	if b := build(Options{}, header(t1, amqp091.Int64Value(1), "w")).String(); a == b {
		t.Errorf("other headers were not compared: %s", a)
	}
	want := `props={headers={sent=1700000000:T x-death=[{count=1:l reason=expired routing-keys=[k] time=<time>:T}] z=v}}`
	if !strings.Contains(a, want) {
		t.Errorf("got\n%s\nwant it to contain\n%s", a, want)
	}
}

func TestBuildServerProperties(t *testing.T) {
	start := func(product, capability string, withCopyright bool) []byte {
		caps := amqp091.Table(nil).Append(capability, amqp091.BoolValue(true))
		props := amqp091.Table(nil).Append("product", amqp091.StringValue(product)).Append("capabilities", amqp091.TableValue(caps))
		if withCopyright {
			props = props.Append("copyright", amqp091.StringValue("(c) "+product))
		}
		return method(0, &amqp091.ConnectionStart{VersionMinor: 9, ServerProperties: props, Mechanisms: []byte("AMQPLAIN PLAIN"), Locales: []byte("en_US")})
	}
	a := build(Options{}, start("RabbitMQ", "basic.nack", true)).String()
	if b := build(Options{}, start("wiretap", "basic.nack", true)).String(); a != b {
		t.Errorf("product compared:\n%s", UnifiedDiff("a", a, "b", b))
	}
	if b := build(Options{}, start("RabbitMQ", "per_consumer_qos", true)).String(); a == b {
		t.Errorf("capabilities not compared")
	}
	if b := build(Options{}, start("RabbitMQ", "basic.nack", false)).String(); a == b {
		t.Errorf("a missing server property not noticed")
	}
	want := `c1 ch0 connection.start version=0-9 server-properties={capabilities={basic.nack=true} copyright=<> product=<>} mechanisms="AMQPLAIN PLAIN" locales=en_US`
	if strings.TrimSpace(a) != want {
		t.Errorf("got  %s\nwant %s", a, want)
	}
}

func TestBuildOddStreams(t *testing.T) {
	badEnd := method(1, &amqp091.BasicQosOk{})
	badEnd[len(badEnd)-1] = 0x0a
	_, _, badEndErr := amqp091.ParseFrame(badEnd, 0)
	_, unknownErr := amqp091.ParseMethod([]byte{0, 99, 0, 1})
	long := strings.Repeat("ab", 40)
	cases := []struct {
		name   string
		stream []byte
		want   []string
	}{
		{"heartbeats", wire(amqp091.AppendHeartbeatFrame(nil), amqp091.AppendFrame(nil, amqp091.FrameHeartbeat, 1, nil)),
			[]string{"c1 ch1 heartbeat size=0"}},
		{"protocol header", []byte("AMQP\x00\x00\x09\x01"), []string{`c1 ch0 protocol-header "AMQP\x00\x00\t\x01"`}},
		{"bad frame end", badEnd, []string{"c1 not a frame: " + badEndErr.Error()}},
		{"garbage", []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), []string{"c1 28 bytes of an unfinished frame at the end"}},
		{"cut short", method(1, &amqp091.BasicQosOk{})[:10], []string{"c1 10 bytes of an unfinished frame at the end"}},
		{"content without a method", amqp091.AppendFrame(nil, amqp091.FrameBody, 1, []byte("x")), []string{`c1 ch1 body "x" (no method before it)`}},
		{"unknown method", amqp091.AppendFrame(nil, amqp091.FrameMethod, 2, []byte{0, 99, 0, 1}), []string{"c1 ch2 malformed method: " + unknownErr.Error()}},
		{"unknown frame type", amqp091.AppendFrame(nil, 9, 0, []byte("x")), []string{"c1 ch0 frame type=9 size=1"}},
		{"a client method", method(1, &amqp091.BasicQos{PrefetchCount: 1}), []string{"c1 ch1 basic.qos (not a server method) args=00000000000100"}},
		{"nothing", nil, []string{"c1 (no frames)"}},
		{"long body", message(1, &amqp091.BasicGetOk{DeliveryTag: 1}, nil, long), []string{
			`c1 ch1 basic.get-ok tag=1 redelivered=false exchange="" rk="" message-count=0`,
			"c1 ch1 content-header size=80 props={}",
			"c1 ch1 body size=80 crc32=" + strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(long))), 16) + ` head="abababababababab"`}},
	}
	for _, c := range cases {
		got := build(Options{}, c.stream).Lines()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
	tr := Build([]Recording{{DialErr: "dial tcp 127.0.0.1:1: connection refused", Stall: "no reply to queue.declare on channel 1 within 5s"}}, Options{})
	want := []string{"c1 relay could not reach the broker", "c1 relay: no reply to queue.declare on channel 1 within 5s"}
	if got := tr.Lines(); !slices.Equal(got, want) {
		t.Errorf("notes: %q, want %q", got, want)
	}
}

func TestBuildCloseTexts(t *testing.T) {
	s := wire(method(0, &amqp091.ConnectionClose{ReplyCode: 530, ReplyText: []byte("NOT_ALLOWED - vhost nope not found"), ClassID: 10, MethodID: 40}),
		method(3, &amqp091.ChannelClose{ReplyCode: 406, ReplyText: []byte(`PRECONDITION_FAILED - "x"`)}))
	want := []string{
		`c1 ch0 connection.close 530 "NOT_ALLOWED - vhost nope not found" class=10 method=40 (connection.open)`,
		`c1 ch3 channel.close 406 "PRECONDITION_FAILED - \"x\"" class=0 method=0`,
	}
	if got := build(Options{}, s).Lines(); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func BenchmarkBuild(b *testing.B) {
	var s []byte
	for i := range 100 {
		s = append(s, message(1, &amqp091.BasicDeliver{ConsumerTag: []byte("c"), DeliveryTag: uint64(i + 1), RoutingKey: []byte("k")},
			&amqp091.Properties{Flags: amqp091.FlagContentType | amqp091.FlagHeaders, ContentType: []byte("text/plain"),
				Headers: amqp091.Table(nil).Append("a", amqp091.Int32Value(1))}, "hello")...)
		s = append(s, method(2, &amqp091.BasicAck{DeliveryTag: uint64(i + 1)})...)
	}
	recs := []Recording{{ServerBytes: s}}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Build(recs, Options{Prefix: "rd00000000."})
	}
}
