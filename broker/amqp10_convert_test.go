package broker

import (
	"bytes"
	"context"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp091go "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/queue"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// The cross-protocol tests check the conversion table of amqp10_convert.go
// (RabbitMQ 4's mc_amqpl mapping) with real clients on both sides:
// go-amqp and a raw 1.0 client on one, amqp091-go on the other. Expected
// values are written from the table, not from the broker's output.

// get091 takes one message from q over 0-9-1.
func get091(t *testing.T, ch *amqp091go.Channel, q string) amqp091go.Delivery {
	t.Helper()
	d, ok, err := ch.Get(q, true)
	if err != nil || !ok {
		t.Fatalf("basic.get %s: ok %v, %v", q, ok, err)
	}
	return d
}

// TestAMQP10ConvertTo091Values: go-amqp publishes a message whose
// application-properties and annotations hold lists, maps, arrays and
// every scalar kind; an amqp091-go consumer gets them as field values as
// RabbitMQ 4 converts them.
func TestAMQP10ConvertTo091Values(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "cv10")
	conn := dialGoAMQP(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := sess.NewSender(ctx, "/queues/cv10", nil)
	if err != nil {
		t.Fatal(err)
	}
	replyTo, ct, ce, grp := "/queues/reply%20q", "text/plain", "gzip", "grp"
	created := time.UnixMilli(1700000000999)
	msg := &goamqp.Message{
		Header: &goamqp.MessageHeader{Durable: true, Priority: 6},
		Annotations: goamqp.Annotations{
			"x-opt-list":    []any{int64(1), "a"},
			"x-cc":          []any{"k1", "k2"},
			"x-basic-type":  "typed",
			"x-dup":         "from the annotations",
			"x-exchange":    "kept out",
			"x-basic-other": "kept out",
			"not-x":         "kept out",
		},
		Properties: &goamqp.MessageProperties{
			MessageID: uint64(42), CorrelationID: []byte("binary id"), ReplyTo: &replyTo, UserID: []byte("guest"),
			ContentType: &ct, ContentEncoding: &ce, CreationTime: &created, GroupID: &grp,
		},
		ApplicationProperties: map[string]any{
			"str": "s", "long": int64(-5), "ulong": uint64(7), "bool": true, "dbl": 1.5, "flt": float32(0.25),
			"i8": int8(-2), "u8": uint8(200), "i16": int16(-300), "u16": uint16(60000), "i32": int32(-70000), "u32": uint32(4000000000),
			"list":  []any{int32(1), "two", []any{true}},
			"map":   map[string]any{"a": int8(-1), "b": "bee"},
			"arr":   []int32{1, 2, 3},
			"ts":    time.UnixMilli(1700000001500),
			"null":  nil,
			"bin":   []byte{0, 1, 2},
			"uuid":  goamqp.UUID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
			"x-dup": "from the application-properties",
		},
		Data: [][]byte{[]byte("ab"), []byte("cd")},
	}
	if err := snd.Send(ctx, msg, nil); err != nil {
		t.Fatal(err)
	}
	c, ch := dial(t, url)
	defer c.Close()
	waitEmptyOf(t, url, "cv10", 1)
	d := get091(t, ch, "cv10")
	want := amqp091go.Table{
		"CC": []any{"k1", "k2"}, "x-opt-list": []any{int64(1), "a"}, "x-dup": "from the annotations",
		"x-correlation-id": []byte("binary id"),
		"str":              "s", "long": int64(-5), "ulong": int64(7), "bool": true, "dbl": 1.5, "flt": float32(0.25),
		"i8": int8(-2), "u8": uint8(200), "i16": int16(-300), "u16": uint16(60000), "i32": int32(-70000), "u32": uint32(4000000000),
		"list": []any{int32(1), "two", []any{true}},
		"map":  amqp091go.Table{"a": int8(-1), "b": "bee"},
		"arr":  []any{int32(1), int32(2), int32(3)},
		"ts":   time.Unix(1700000001, 0),
		"null": nil,
		"bin":  "\x00\x01\x02", // binary becomes a longstr
	}
	if !reflect.DeepEqual(normTable(d.Headers), normTable(want)) {
		t.Errorf("headers:\n got %#v\nwant %#v", d.Headers, want)
	}
	if d.DeliveryMode != 2 || d.Priority != 6 || d.MessageId != "42" || d.CorrelationId != "" || d.ReplyTo != "reply q" ||
		d.UserId != "guest" || d.ContentType != ct || d.ContentEncoding != ce || d.Timestamp.Unix() != 1700000000 ||
		d.AppId != grp || d.Type != "typed" || string(d.Body) != "abcd" {
		t.Errorf("properties: mode %d priority %d id %q corr %q reply-to %q user %q ct %q ce %q ts %v app %q type %q body %q",
			d.DeliveryMode, d.Priority, d.MessageId, d.CorrelationId, d.ReplyTo, d.UserId, d.ContentType, d.ContentEncoding,
			d.Timestamp, d.AppId, d.Type, d.Body)
	}
}

// normTable makes timestamps comparable (amqp091-go decodes them in the
// local zone).
func normTable(t amqp091go.Table) amqp091go.Table {
	out := amqp091go.Table{}
	for k, v := range t {
		if tm, ok := v.(time.Time); ok {
			v = tm.UTC()
		}
		out[k] = v
	}
	return out
}

// TestAMQP10ConvertTo091BodyKinds: each 1.0 body kind reaches a 0-9-1
// consumer as RabbitMQ 4 gives it: data sections concatenated (the footer
// dropped), amqp-value and amqp-sequence as their encoded sections and
// footer, typed "amqp-1.0".
func TestAMQP10ConvertTo091BodyKinds(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "bk10")
	data := func(s string) []byte {
		return amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte(s)))
	}
	props := amqp10.AppendComposite(nil, amqp10.DescriptorProperties, amqp10.AppendString(nil, "id"))
	value := amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendList(nil, amqp10.AppendInt(nil, 7), amqp10.AppendString(nil, "v")))
	seq := append(amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendString(nil, "a"))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendLong(nil, 1<<40)))...)
	withFooter := func(bare []byte, body []byte) ([]byte, []byte) {
		footer := amqp10.AppendChecksumFooter(nil, amqp10.CRC32, bare)
		return append(append([]byte(nil), bare...), footer...), append(append([]byte(nil), body...), footer...)
	}
	type kind struct {
		name      string
		msg       []byte
		body, typ string
	}
	multi := bytes.Join([][]byte{props, data("one"), data(""), data("two")}, nil)
	multiFooter, _ := withFooter(multi, nil)
	valueMsg, valueBody := withFooter(append(append([]byte(nil), props...), value...), value)
	seqMsg, seqBody := withFooter(append(append([]byte(nil), props...), seq...), seq)
	kinds := []kind{
		{"data", data("hello"), "hello", ""},
		{"several data sections", multiFooter, "onetwo", ""},
		{"amqp-value", valueMsg, string(valueBody), "amqp-1.0"},
		{"amqp-sequence", seqMsg, string(seqBody), "amqp-1.0"},
	}
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/bk10", true)
	r.expect(amqp10.DescriptorFlow)
	for i, k := range kinds {
		r.transfer(0, uint32(i), true, k.msg, 1000)
	}
	c, ch := dial(t, url)
	defer c.Close()
	waitEmptyOf(t, url, "bk10", len(kinds))
	for _, k := range kinds {
		d := get091(t, ch, "bk10")
		if string(d.Body) != k.body || d.Type != k.typ {
			t.Errorf("%s: body %x type %q, want %x type %q", k.name, d.Body, d.Type, k.body, k.typ)
		}
	}
}

// entries10 returns a described map section's entries: key text to the
// value's encoding, and the keys in order.
func entries10(t *testing.T, b []byte, sec amqp10.Section) (map[string]string, []string) {
	t.Helper()
	m := map[string]string{}
	var order []string
	it := mapItems(b, sec.Value)
	for it.Next() {
		k := it.Value
		if !it.Next() {
			t.Fatal("odd map")
		}
		name, _ := k.Bytes(b)
		m[string(name)] = hex.EncodeToString(b[it.Value.Start:it.Value.End])
		order = append(order, string(name))
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	return m, order
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// TestAMQP10ConvertFrom091: amqp091-go publishes properties and headers
// with nested tables, arrays and every field type; a raw 1.0 receiver
// gets the sections RabbitMQ 4 builds, checked entry by entry on their
// encoding, and go-amqp decodes the same delivery.
func TestAMQP10ConvertFrom091(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "cf091")
	c, ch := dial(t, url)
	defer c.Close()
	ts := time.Unix(1700000000, 0)
	pub := amqp091go.Publishing{
		DeliveryMode: 2, Priority: 4, Expiration: "5000", MessageId: "urn:uuid:12345678-9abc-def0-0102-030405060708",
		CorrelationId: "corr", ReplyTo: "reply q/1", ContentType: "text/plain", ContentEncoding: "gzip", Timestamp: ts,
		AppId: "app", UserId: "guest", Type: "t",
		Headers: amqp091go.Table{
			"x-tbl":    amqp091go.Table{"n": int32(1), "nested": amqp091go.Table{"deep": true}},
			"x-arr":    []any{"a", int64(2), []any{}},
			"x-ts":     ts,
			"CC":       []any{"no-such-queue"},
			"plain":    "str",
			"bin":      []byte{0, 1},
			"big":      strings.Repeat("é", 2100), // 4200 bytes: past RabbitMQ's UTF-8 scan, so binary
			"nul":      "a\x00b",
			"i8":       int8(-3),
			"u8":       uint8(250),
			"i16":      int16(-2),
			"u16":      uint16(65535),
			"i32":      int32(100),
			"u32":      uint32(0),
			"i64":      int64(1 << 40),
			"f32":      float32(0.5),
			"f64":      2.5,
			"bool":     false,
			"void":     nil,
			"ts":       ts,
			"dec":      amqp091go.Decimal{Scale: 1, Value: 5},
			"tblplain": amqp091go.Table{"dropped": true},
			"arrplain": []any{"dropped"},
		},
		Body: []byte("from 0-9-1"),
	}
	if err := ch.Publish("", "cf091", false, false, pub); err != nil {
		t.Fatal(err)
	}
	waitEmptyOf(t, url, "cf091", 1)
	r := dialRaw10(t, url, 1<<16)
	r.attach(0, true, "/queues/cf091", true)
	r.flow(0, 0, 1, false)
	raw, _, _, _ := r.receive()
	var pm amqp10.Message
	if err := amqp10.ParseMessage(raw, &pm); err != nil {
		t.Fatalf("%v: %x", err, raw)
	}
	var kinds []uint64
	for _, s := range pm.Sections {
		kinds = append(kinds, s.Descriptor)
	}
	wantKinds := []uint64{amqp10.DescriptorHeader, amqp10.DescriptorMessageAnnotations, amqp10.DescriptorProperties,
		amqp10.DescriptorApplicationProperties, amqp10.DescriptorData}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Fatalf("sections %x, want %x", kinds, wantKinds)
	}
	sec := func(i int) []byte { s := pm.Sections[i].Value; return raw[s.Start:s.End] }
	null := amqp10.AppendNull(nil)
	uuid := [16]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8}
	checks := []struct {
		what      string
		got, want []byte
	}{
		{"header", sec(0), amqp10.AppendComposite(nil, amqp10.DescriptorHeader, amqp10.AppendBool(nil, true),
			amqp10.AppendUbyte(nil, 4), amqp10.AppendUint(nil, 5000), amqp10.AppendBool(nil, true), amqp10.AppendUint(nil, 0))},
		{"properties", sec(2), amqp10.AppendComposite(nil, amqp10.DescriptorProperties, amqp10.AppendUUID(nil, uuid),
			amqp10.AppendBinary(nil, []byte("guest")), null, null, amqp10.AppendString(nil, "/queues/reply%20q%2F1"),
			amqp10.AppendString(nil, "corr"), amqp10.AppendSymbol(nil, "text/plain"), amqp10.AppendSymbol(nil, "gzip"), null,
			amqp10.AppendTimestamp(nil, 1700000000000), amqp10.AppendString(nil, "app"))},
		{"body", sec(4), amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("from 0-9-1")))},
	}
	for _, c := range checks {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s:\n got %x\nwant %x", c.what, c.got, c.want)
		}
	}
	ma, order := entries10(t, raw, pm.Sections[1])
	sym := func(s string) []byte { return amqp10.AppendSymbol(nil, s) }
	wantMA := map[string]string{
		"x-routing-key": hexOf(amqp10.AppendString(nil, "cf091")),
		"x-exchange":    hexOf(amqp10.AppendString(nil, "")),
		"x-basic-type":  hexOf(amqp10.AppendString(nil, "t")),
		"x-tbl": hexOf(amqp10.AppendMap(nil, sym("n"), amqp10.AppendInt(nil, 1),
			sym("nested"), amqp10.AppendMap(nil, sym("deep"), amqp10.AppendBoolean(nil, true)))),
		"x-arr": hexOf(amqp10.AppendList(nil, amqp10.AppendString(nil, "a"), amqp10.AppendLong(nil, 2), amqp10.AppendList(nil))),
		"x-ts":  hexOf(amqp10.AppendTimestamp(nil, 1700000000000)),
		"x-cc":  hexOf(amqp10.AppendList(nil, amqp10.AppendString(nil, "no-such-queue"))),
	}
	// amqp091-go writes a Table (a Go map) in map order, so the nested
	// table arrives in either order; the conversion keeps the one it got.
	if ma["x-tbl"] == hexOf(amqp10.AppendMap(nil, sym("nested"), amqp10.AppendMap(nil, sym("deep"), amqp10.AppendBoolean(nil, true)),
		sym("n"), amqp10.AppendInt(nil, 1))) {
		ma["x-tbl"] = wantMA["x-tbl"]
	}
	if !reflect.DeepEqual(ma, wantMA) {
		t.Errorf("message-annotations:\n got %v\nwant %v", ma, wantMA)
	}
	if len(order) < 3 || order[0] != "x-routing-key" || order[1] != "x-exchange" || order[2] != "x-basic-type" {
		t.Errorf("message-annotations in the order %v, want x-routing-key, x-exchange, x-basic-type first", order)
	}
	ap, _ := entries10(t, raw, pm.Sections[3])
	wantAP := map[string]string{
		"plain": hexOf(amqp10.AppendString(nil, "str")),
		"bin":   hexOf(amqp10.AppendBinary(nil, []byte{0, 1})),
		"big":   hexOf(amqp10.AppendBinary(nil, []byte(strings.Repeat("é", 2100)))),
		"nul":   hexOf(amqp10.AppendBinary(nil, []byte("a\x00b"))),
		"i8":    hexOf(amqp10.AppendByte(nil, -3)),
		"u8":    hexOf(amqp10.AppendUbyte(nil, 250)),
		"i16":   hexOf(amqp10.AppendShort(nil, -2)),
		"u16":   hexOf(amqp10.AppendUshort(nil, 65535)),
		"i32":   hexOf(amqp10.AppendInt(nil, 100)),
		"u32":   hexOf(amqp10.AppendUint(nil, 0)),
		"i64":   hexOf(amqp10.AppendLong(nil, 1<<40)),
		"f32":   hexOf(amqp10.AppendFloat(nil, 0.5)),
		"f64":   hexOf(amqp10.AppendDouble(nil, 2.5)),
		"bool":  hexOf(amqp10.AppendBoolean(nil, false)),
		"void":  hexOf(null),
		"ts":    hexOf(amqp10.AppendTimestamp(nil, 1700000000000)),
	}
	if !reflect.DeepEqual(ap, wantAP) {
		t.Errorf("application-properties:\n got %v\nwant %v", ap, wantAP)
	}
	var gm goamqp.Message
	if err := gm.UnmarshalBinary(raw); err != nil {
		t.Fatalf("go-amqp cannot decode the delivery: %v", err)
	}
	tbl, _ := gm.Annotations["x-tbl"].(map[string]any)
	nested, _ := tbl["nested"].(map[string]any)
	if arr, _ := gm.Annotations["x-arr"].([]any); len(arr) != 3 || nested["deep"] != true ||
		gm.ApplicationProperties["plain"] != "str" || gm.ApplicationProperties["i64"] != int64(1<<40) {
		t.Errorf("go-amqp decoded annotations %#v, application-properties plain %#v i64 %#v", gm.Annotations,
			gm.ApplicationProperties["plain"], gm.ApplicationProperties["i64"])
	}
}

// TestAMQP10ConvertFrom091BodyKinds: a 0-9-1 body typed "amqp-1.0"
// reaches a 1.0 consumer as the sections it holds, byte for byte (one
// amqp-value, amqp-sequences with a footer, several data sections); any
// other body is one data section; and a 1.0 message that went to a 0-9-1
// consumer and was republished by it comes back with its body sections
// and footer as they were first sent.
func TestAMQP10ConvertFrom091BodyKinds(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "fb091", "fb10")
	value := amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendMap(nil, amqp10.AppendString(nil, "k"), amqp10.AppendBoolean(nil, true)))
	seq := bytes.Join([][]byte{
		amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendString(nil, "a"))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPSequence, amqp10.AppendList(nil, amqp10.AppendUlong(nil, 9))),
	}, nil)
	seq = amqp10.AppendChecksumFooter(seq, amqp10.Adler32, seq)
	datas := bytes.Join([][]byte{
		amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("x"))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("y"))),
	}, nil)
	plain := []byte("plain bytes")
	c, ch := dial(t, url)
	defer c.Close()
	bodies := [][]byte{value, seq, datas}
	for _, b := range bodies {
		if err := ch.Publish("", "fb091", false, false, amqp091go.Publishing{Type: "amqp-1.0", Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.Publish("", "fb091", false, false, amqp091go.Publishing{Body: plain}); err != nil {
		t.Fatal(err)
	}
	// The round trip: 1.0 in, 0-9-1 out and back in, 1.0 out.
	orig := amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendString(nil, "round trip"))
	orig = amqp10.AppendChecksumFooter(orig, amqp10.CRC32, orig)
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/fb10", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, orig, 1000)
	waitEmptyOf(t, url, "fb10", 1)
	d := get091(t, ch, "fb10")
	if err := ch.Publish("", "fb091", false, false, amqp091go.Publishing{Type: d.Type, Body: d.Body}); err != nil {
		t.Fatal(err)
	}
	waitEmptyOf(t, url, "fb091", 5)
	r.attach(1, true, "/queues/fb091", true)
	r.flow(1, 0, 5, false)
	wants := [][]byte{value, seq, datas, amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, plain)), orig}
	for i, want := range wants {
		raw, _, _, _ := r.receive()
		var pm amqp10.Message
		if err := amqp10.ParseMessage(raw, &pm); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
		start := len(raw)
		for _, s := range pm.Sections {
			switch s.Descriptor {
			case amqp10.DescriptorData, amqp10.DescriptorAMQPValue, amqp10.DescriptorAMQPSequence:
				start = min(start, s.Value.Start)
			}
		}
		if got := raw[start:]; !bytes.Equal(got, want) {
			t.Errorf("delivery %d: body and footer %x, want %x", i, got, want)
		}
	}
}

// TestAMQP10ConvertDeathsAndHeaderOrder: a dead-lettered 1.0 message's
// x-opt-deaths reaches 0-9-1 as x-death (RabbitMQ 4's table per death),
// and the converted headers are sorted by key, the first of equal keys
// kept.
func TestAMQP10ConvertDeathsAndHeaderOrder(t *testing.T) {
	bare := bytes.Join([][]byte{
		amqp10.AppendDescribed(nil, amqp10.DescriptorApplicationProperties, amqp10.AppendMap(nil,
			amqp10.AppendString(nil, "zeta"), amqp10.AppendUbyte(nil, 1),
			amqp10.AppendString(nil, "alpha"), amqp10.AppendUbyte(nil, 2),
			amqp10.AppendString(nil, "alpha"), amqp10.AppendUbyte(nil, 3))),
		amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("b"))),
	}, nil)
	m := &queue.Message{Format: queue.FormatAMQP10, Exchange: "", RoutingKey: "q",
		Header: appendAnnotations(nil, nil, nil, "", "q"), Body: bare}
	now := time.UnixMilli(1700000002345)
	m.Header = deadLetterHeader10(m, queue.Reason("rejected"), "q1", now, "dlx", "rk")
	header, _ := to091(m)
	var h amqp091.ContentHeader
	if err := h.DecodeFromBytes(header); err != nil {
		t.Fatal(err)
	}
	var keys []string
	it := h.Properties.Headers.Iter()
	for it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if strings.Join(keys, ",") != "alpha,x-death,zeta" {
		t.Errorf("header keys %v, want alpha,x-death,zeta", keys)
	}
	if v, _ := h.Properties.Headers.Get("alpha"); v.Uint() != 2 {
		t.Errorf("alpha = %d, want the first of the two, 2", v.Uint())
	}
	death, _ := h.Properties.Headers.Get("x-death")
	var want amqp091.Table
	want = want.Append("count", amqp091.Int64Value(1))
	want = want.Append("reason", amqp091.StringValue("rejected"))
	want = want.Append("queue", amqp091.StringValue("q1"))
	want = want.Append("time", amqp091.TimestampValue(time.Unix(1700000002, 0)))
	want = want.Append("exchange", amqp091.StringValue(""))
	want = want.Append("routing-keys", amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.StringValue("q"))))
	wantArr := amqp091.Array(nil).Append(amqp091.TableValue(want))
	if death.Type != amqp091.TypeArray || !bytes.Equal(death.Bytes(), wantArr) {
		t.Errorf("x-death %x, want %x", death.Bytes(), []byte(wantArr))
	}
}
