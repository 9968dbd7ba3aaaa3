package amqp091

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"
)

// sampleTable has one field of every value type, nested table and array
// included.
func sampleTable() Table {
	var inner Table
	inner = inner.Append("deep", StringValue("yes"))
	var arr Array
	arr = arr.Append(Int32Value(-7)).Append(StringValue("two")).Append(TableValue(inner)).Append(VoidValue())
	var t Table
	t = t.Append("bool", BoolValue(true)).
		Append("int8", Int8Value(-8)).
		Append("uint8", Uint8Value(200)).
		Append("int16", Int16Value(-1600)).
		Append("uint16", Uint16Value(60000)).
		Append("int32", Int32Value(-320000)).
		Append("uint32", Uint32Value(4000000000)).
		Append("int64", Int64Value(-1<<40)).
		Append("uint64", Uint64Value(1<<63)).
		Append("float", FloatValue(1.5)).
		Append("double", DoubleValue(-2.25)).
		Append("decimal", DecimalValue(Decimal{Scale: 2, Value: -1234})).
		Append("longstr", StringValue("héllo")).
		Append("bytes", BytesValue([]byte{0, 1, 0xff})).
		Append("timestamp", TimestampValue(time.Unix(1700000000, 0))).
		Append("table", TableValue(inner)).
		Append("array", ArrayValue(arr)).
		Append("void", VoidValue())
	return t
}

func TestMethodRoundTrip(t *testing.T) {
	if len(sampleMethods) != len(Methods()) {
		t.Fatalf("%d samples for %d methods", len(sampleMethods), len(Methods()))
	}
	var md MethodDecoder
	for _, m := range sampleMethods {
		t.Run(m.Name(), func(t *testing.T) {
			frame := AppendMethodFrame(nil, 3, m)
			f, n, err := ParseFrame(frame, 0)
			if err != nil || n != len(frame) || f.Type != FrameMethod || f.Channel != 3 {
				t.Fatalf("ParseFrame = %+v, %d, %v", f, n, err)
			}
			got, err := md.Decode(f.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, m)
			}
			fresh, err := ParseMethod(f.Payload)
			if err != nil || !reflect.DeepEqual(fresh, m) {
				t.Fatalf("ParseMethod = %#v, %v", fresh, err)
			}
			if again := got.AppendTo(nil); !bytes.Equal(again, f.Payload) {
				t.Fatalf("re-encoded % x, want % x", again, f.Payload)
			}
			class, id := m.IDs()
			if info := LookupMethod(class, id); info == nil || info.Name != m.Name() || info.Content != m.HasContent() {
				t.Fatalf("LookupMethod(%d, %d) = %+v", class, id, info)
			}
			// Every prefix of the arguments is truncated, never accepted.
			for i := 4; i < len(f.Payload); i++ {
				if _, err := md.Decode(f.Payload[:i]); !errors.Is(err, ErrTruncated) {
					t.Fatalf("prefix of %d bytes: err = %v, want truncated", i, err)
				}
			}
			// A trailing byte is reported.
			if _, err := md.Decode(append(f.Payload[:len(f.Payload):len(f.Payload)], 0)); err == nil {
				t.Fatal("trailing byte accepted")
			}
		})
	}
}

func TestContentHeaderRoundTrip(t *testing.T) {
	h := ContentHeader{ClassID: ClassBasic, BodySize: 1 << 33, Properties: sampleProperties}
	frame := AppendHeaderFrame(nil, 9, &h)
	f, _, err := ParseFrame(frame, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got ContentHeader
	if err := got.DecodeFromBytes(f.Payload); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, h)
	}
	// Each property alone.
	for i, info := range propertyInfos {
		one := ContentHeader{ClassID: ClassBasic, BodySize: 5}
		one.Properties = sampleProperties
		one.Properties.Flags = 1 << (15 - i)
		var dec ContentHeader
		if err := dec.DecodeFromBytes(one.AppendTo(nil)); err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		if dec.Properties.Flags != one.Properties.Flags {
			t.Fatalf("%s: flags %x", info.Name, dec.Properties.Flags)
		}
		if again := dec.AppendTo(nil); !bytes.Equal(again, one.AppendTo(nil)) {
			t.Fatalf("%s: re-encoded differs", info.Name)
		}
	}
}

func TestTableValues(t *testing.T) {
	tab := sampleTable()
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := tab.Map()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"bool": true, "int8": int64(-8), "uint8": uint64(200), "int16": int64(-1600),
		"uint16": uint64(60000), "int32": int64(-320000), "uint32": uint64(4000000000),
		"int64": int64(-1 << 40), "uint64": uint64(1 << 63), "float": 1.5, "double": -2.25,
		"decimal": Decimal{Scale: 2, Value: -1234}, "longstr": "héllo", "bytes": []byte{0, 1, 0xff},
		"timestamp": time.Unix(1700000000, 0).UTC(),
		"table":     map[string]any{"deep": "yes"},
		"array":     []any{int64(-7), "two", map[string]any{"deep": "yes"}, nil},
		"void":      nil,
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Map =\n%#v\nwant\n%#v", m, want)
	}
	if v, ok := tab.Get("uint16"); !ok || v.Type != TypeUint16 || v.Uint() != 60000 {
		t.Fatalf("Get(uint16) = %+v, %v", v, ok)
	}
	if _, ok := tab.Get("missing"); ok {
		t.Fatal("Get(missing) found something")
	}
	if got := (Decimal{Scale: 3, Value: -5}).String(); got != "-0.005" {
		t.Fatalf("decimal = %q", got)
	}
}

// A table as RabbitMQ sends it in connection.start's server-properties,
// cut from a capture:
//
//	00000000  0c 63 61 70 61 62 69 6c  69 74 69 65 73 46 00 00  |.capabilitiesF..|
//	00000010  00 15 12 70 75 62 6c 69  73 68 65 72 5f 63 6f 6e  |...publisher_con|
//	00000020  66 69 72 6d 73 74 01 07  70 72 6f 64 75 63 74 53  |firmst..productS|
//	00000030  00 00 00 08 52 61 62 62  69 74 4d 51              |....RabbitMQ|
var rabbitProps = []byte{
	0x0c, 0x63, 0x61, 0x70, 0x61, 0x62, 0x69, 0x6c, 0x69, 0x74, 0x69, 0x65, 0x73, 0x46, 0x00, 0x00,
	0x00, 0x15, 0x12, 0x70, 0x75, 0x62, 0x6c, 0x69, 0x73, 0x68, 0x65, 0x72, 0x5f, 0x63, 0x6f, 0x6e,
	0x66, 0x69, 0x72, 0x6d, 0x73, 0x74, 0x01, 0x07, 0x70, 0x72, 0x6f, 0x64, 0x75, 0x63, 0x74, 0x53,
	0x00, 0x00, 0x00, 0x08, 0x52, 0x61, 0x62, 0x62, 0x69, 0x74, 0x4d, 0x51,
}

func TestTableFromWire(t *testing.T) {
	tab := Table(rabbitProps)
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	caps, ok := tab.Get("capabilities")
	if !ok || caps.Type != TypeTable {
		t.Fatalf("capabilities = %+v", caps)
	}
	if v, ok := caps.Table().Get("publisher_confirms"); !ok || !v.Bool() {
		t.Fatalf("publisher_confirms = %+v %v", v, ok)
	}
	if v, _ := tab.Get("product"); string(v.Bytes()) != "RabbitMQ" {
		t.Fatalf("product = %q", v.Bytes())
	}
}

func TestTableMalformed(t *testing.T) {
	cases := map[string][]byte{
		"unknown type":        {1, 'k', '?', 0},
		"key overruns":        {9, 'k'},
		"no type":             {1, 'k'},
		"short int":           {1, 'k', 'I', 0, 0},
		"string overruns":     {1, 'k', 'S', 0, 0, 0, 9, 'a'},
		"huge string":         {1, 'k', 'S', 0xff, 0xff, 0xff, 0xff},
		"bad nested":          {1, 'k', 'F', 0, 0, 0, 2, 1, 'x'},
		"bad array element":   {1, 'k', 'A', 0, 0, 0, 1, '?'},
		"decimal cut":         {1, 'k', 'D', 2, 0, 0},
		"timestamp cut":       {1, 'k', 'T', 0, 0, 0, 0},
		"array overruns":      {1, 'k', 'A', 0, 0, 1, 0},
		"key without a value": {0},
	}
	for name, b := range cases {
		if err := Table(b).Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
		it := Table(b).Iter()
		for it.Next() {
		}
		if _, err := Table(b).Map(); err == nil && name != "bad nested" && name != "bad array element" {
			t.Errorf("%s: Map accepted", name)
		}
	}
	// Deep nesting is refused, not recursed into without bound.
	var deep Table
	for i := 0; i < maxNesting+5; i++ {
		deep = Table(nil).Append("n", TableValue(deep))
	}
	if err := deep.Validate(); err == nil {
		t.Error("nesting beyond the limit accepted")
	}
	// A method carrying a malformed table fails to decode.
	m := &QueueDeclare{Queue: []byte("q"), Arguments: Table{1, 'k', '?'}}
	if _, err := ParseMethod(m.AppendTo(nil)); err == nil {
		t.Error("queue.declare with a malformed table accepted")
	}
}

func TestParseFrameErrors(t *testing.T) {
	hb := AppendHeartbeatFrame(nil)
	for i := 0; i < len(hb); i++ {
		if _, _, err := ParseFrame(hb[:i], 0); err != ErrShortBuffer {
			t.Fatalf("%d bytes: %v", i, err)
		}
	}
	bad := append([]byte(nil), hb...)
	bad[7] = 0
	if _, _, err := ParseFrame(bad, 0); err == nil || err == ErrShortBuffer {
		t.Fatalf("bad frame-end: %v", err)
	}
	// A size of 4 GiB - 1 is refused before anything waits for it.
	huge := []byte{3, 0, 1, 0xff, 0xff, 0xff, 0xff}
	if _, _, err := ParseFrame(huge, 1<<20); err == nil || err == ErrShortBuffer {
		t.Fatalf("huge frame: %v", err)
	}
}

// basic.publish on channel 1, exchange "amq.direct", routing key "key",
// mandatory, as amqp091-go writes it:
//
//	00000000  01 00 01 00 00 00 16 00  3c 00 28 00 00 0a 61 6d  |........<.(...am|
//	00000010  71 2e 64 69 72 65 63 74  03 6b 65 79 01 ce        |q.direct.key..|
var publishFrame = []byte{
	0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x16, 0x00, 0x3c, 0x00, 0x28, 0x00, 0x00, 0x0a, 0x61, 0x6d,
	0x71, 0x2e, 0x64, 0x69, 0x72, 0x65, 0x63, 0x74, 0x03, 0x6b, 0x65, 0x79, 0x01, 0xce,
}

// channel.close on channel 1: 406 PRECONDITION_FAILED, caused by
// queue.declare (50, 10):
//
//	00000000  01 00 01 00 00 00 1e 00  14 00 28 01 96 13 50 52  |..........(...PR|
//	00000010  45 43 4f 4e 44 49 54 49  4f 4e 5f 46 41 49 4c 45  |ECONDITION_FAILE|
//	00000020  44 00 32 00 0a ce                                 |D.2...|
var channelCloseFrame = []byte{
	0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1e, 0x00, 0x14, 0x00, 0x28, 0x01, 0x96, 0x13, 0x50, 0x52,
	0x45, 0x43, 0x4f, 0x4e, 0x44, 0x49, 0x54, 0x49, 0x4f, 0x4e, 0x5f, 0x46, 0x41, 0x49, 0x4c, 0x45,
	0x44, 0x00, 0x32, 0x00, 0x0a, 0xce,
}

// basic.ack on channel 1, delivery-tag 1, not multiple, as RabbitMQ 3.10
// confirmed a publish (from a capture):
//
//	00000000  01 00 01 00 00 00 0d 00  3c 00 50 00 00 00 00 00  |........<.P.....|
//	00000010  00 00 01 00 ce                                    |.....|
var ackFrame = []byte{
	0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x3c, 0x00, 0x50, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x01, 0x00, 0xce,
}

// A content header as pika 1.3 sent it to RabbitMQ 3.10 (from a capture):
// body 11 bytes, content-type text/plain, headers {a: 1 (I), b: "x" (S)}:
//
//	00000000  02 00 01 00 00 00 2c 00  3c 00 00 00 00 00 00 00  |......,.<.......|
//	00000010  00 00 0b a0 00 0a 74 65  78 74 2f 70 6c 61 69 6e  |......text/plain|
//	00000020  00 00 00 0f 01 61 49 00  00 00 01 01 62 53 00 00  |.....aI.....bS..|
//	00000030  00 01 78 ce                                       |..x.|
var headerFrame = []byte{
	0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x3c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x0b, 0xa0, 0x00, 0x0a, 0x74, 0x65, 0x78, 0x74, 0x2f, 0x70, 0x6c, 0x61, 0x69, 0x6e,
	0x00, 0x00, 0x00, 0x0f, 0x01, 0x61, 0x49, 0x00, 0x00, 0x00, 0x01, 0x01, 0x62, 0x53, 0x00, 0x00,
	0x00, 0x01, 0x78, 0xce,
}

func TestLiteralFrames(t *testing.T) {
	var md MethodDecoder
	f, n, err := ParseFrame(publishFrame, 0)
	if err != nil || n != len(publishFrame) {
		t.Fatal(n, err)
	}
	m, err := md.Decode(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := m.(*BasicPublish)
	if !ok || string(p.Exchange) != "amq.direct" || string(p.RoutingKey) != "key" || !p.Mandatory || p.Immediate {
		t.Fatalf("publish = %#v", m)
	}
	if got := AppendMethodFrame(nil, 1, &BasicPublish{Exchange: []byte("amq.direct"), RoutingKey: []byte("key"), Mandatory: true}); !bytes.Equal(got, publishFrame) {
		t.Fatalf("encoded % x", got)
	}

	f, _, err = ParseFrame(channelCloseFrame, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err = md.Decode(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := m.(*ChannelClose)
	if !ok || c.ReplyCode != PreconditionFailed || string(c.ReplyText) != "PRECONDITION_FAILED" || c.ClassID != ClassQueue || c.MethodID != 10 {
		t.Fatalf("close = %#v", m)
	}

	f, _, err = ParseFrame(ackFrame, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = md.Decode(f.Payload); err != nil || m.(*BasicAck).DeliveryTag != 1 || m.(*BasicAck).Multiple {
		t.Fatalf("ack = %#v, %v", m, err)
	}

	f, _, err = ParseFrame(headerFrame, 0)
	if err != nil {
		t.Fatal(err)
	}
	var h ContentHeader
	if err := h.DecodeFromBytes(f.Payload); err != nil {
		t.Fatal(err)
	}
	if h.BodySize != 11 || string(h.Properties.ContentType) != "text/plain" || h.Properties.Flags != FlagContentType|FlagHeaders {
		t.Fatalf("header = %+v", h)
	}
	if v, ok := h.Properties.Headers.Get("a"); !ok || v.Type != TypeInt32 || v.Int() != 1 {
		t.Fatalf("headers.a = %+v", v)
	}
	if got := AppendHeaderFrame(nil, 1, &h); !bytes.Equal(got, headerFrame) {
		t.Fatalf("encoded % x", got)
	}
}

func TestFrameReader(t *testing.T) {
	var stream []byte
	stream = append(stream, ProtocolHeader...)
	stream = append(stream, publishFrame...)
	stream = AppendMessage(stream, 1, &BasicPublish{RoutingKey: []byte("q")}, &Properties{Flags: FlagDeliveryMode, DeliveryMode: 2},
		bytes.Repeat([]byte("x"), 100000), 4096)
	stream = AppendHeartbeatFrame(stream)
	fr := NewFrameReader(&oneByteReader{stream})
	if h, err := fr.ReadProtocolHeader(); err != nil || string(h[:]) != ProtocolHeader {
		t.Fatal(h, err)
	}
	var types []FrameType
	body := 0
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break
		}
		types = append(types, f.Type)
		if f.Type == FrameBody {
			body += len(f.Payload)
			if len(f.Payload) > 4096-FrameOverhead {
				t.Fatalf("body frame of %d bytes", len(f.Payload))
			}
		}
	}
	if body != 100000 || types[0] != FrameMethod || types[1] != FrameMethod || types[2] != FrameHeader || types[len(types)-1] != FrameHeartbeat {
		t.Fatalf("types %v body %d", types, body)
	}
}

// TestFrameReaderBufferAdapts reads 4 KiB messages through a reader that
// fills whatever room it is given: the buffer doubles up to MaxBuffer,
// every frame comes out whole, and once reads are small it goes back to
// its first size.
func TestFrameReaderBufferAdapts(t *testing.T) {
	var stream []byte
	const n = 200
	for i := range n {
		body := bytes.Repeat([]byte{byte(i)}, 4096)
		stream = AppendMessage(stream, 1, &BasicPublish{RoutingKey: []byte("q")}, &Properties{}, body, 131072)
	}
	src := &chunkReader{b: stream}
	fr := NewFrameReaderSize(src, 16<<10)
	fr.MaxBuffer = 64 << 10
	bodies := 0
	for bodies < n {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == FrameBody {
			if len(f.Payload) != 4096 || f.Payload[0] != byte(bodies) || f.Payload[4095] != byte(bodies) {
				t.Fatalf("body %d: %d bytes, first %d", bodies, len(f.Payload), f.Payload[0])
			}
			bodies++
		}
	}
	if len(fr.buf) != 64<<10 {
		t.Fatalf("buffer of %d bytes after full reads, want %d", len(fr.buf), 64<<10)
	}
	// Heartbeats a few bytes at a time: small reads.
	src.b, src.most = nil, 8
	for range readFew + 2 {
		src.b = AppendHeartbeatFrame(src.b)
	}
	for range readFew + 2 {
		if f, err := fr.ReadFrame(); err != nil || f.Type != FrameHeartbeat {
			t.Fatal(f, err)
		}
	}
	if len(fr.buf) != 16<<10 {
		t.Fatalf("buffer of %d bytes after small reads, want %d", len(fr.buf), 16<<10)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		src.b = AppendHeartbeatFrame(src.b[:0])
		fr.ReadFrame()
	}); allocs != 0 {
		t.Errorf("%v allocations per frame at the first size", allocs)
	}
}

// chunkReader gives at most most bytes a read (0: all the room there is).
type chunkReader struct {
	b    []byte
	most int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.most > 0 && len(p) > r.most {
		p = p[:r.most]
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

type oneByteReader struct{ b []byte }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	p[0] = r.b[0]
	r.b = r.b[1:]
	return 1, nil
}
