// Package amqp091 provides AMQP 0-9-1: a codec for frames, methods, content
// headers and field tables, generated from the machine-readable
// specification, and the per-connection [decode.Decoder] wiretap's pipeline
// uses ([New]).
//
// The specification is RabbitMQ's extended 0-9-1 XML (Debian's amqp-specs
// package, /usr/share/amqp/specs/0-9-1-rabbit) plus spec/extensions.xml for
// what that 2013 file lacks: connection.blocked/unblocked and
// connection.update-secret/-ok. spec_gen.go is generated from both by
// internal/specgen (`go generate`); TestGeneratedUpToDate fails when it
// drifts. See https://www.rabbitmq.com/resources/specs/amqp0-9-1.pdf and
// https://www.rabbitmq.com/amqp-0-9-1-errata.html.
//
// # Codec
//
// Every method is a struct named in the spec's words ([BasicPublish],
// [QueueDeclareOk]) implementing [Method]. Decoding is in place and does not
// allocate: byte-string arguments ([]byte) and tables ([Table]) alias the
// decoded bytes, so they are valid while those bytes are. Encoding appends to
// a caller's buffer. Reading and writing a connection, as a broker does:
//
//	fr := amqp091.NewFrameReader(conn)
//	hdr, err := fr.ReadProtocolHeader()
//	var md amqp091.MethodDecoder // one reusable value per method
//	var ch amqp091.ContentHeader
//	for {
//		f, err := fr.ReadFrame() // f.Payload valid until the next ReadFrame
//		switch f.Type {
//		case amqp091.FrameMethod:
//			m, err := md.Decode(f.Payload) // valid until the next Decode
//			switch m := m.(type) {
//			case *amqp091.BasicPublish:
//				exchange := string(m.Exchange) // copy what you keep
//			}
//		case amqp091.FrameHeader:
//			err = ch.DecodeFromBytes(f.Payload)
//		case amqp091.FrameBody, amqp091.FrameHeartbeat:
//		}
//	}
//
//	out = amqp091.AppendMethodFrame(out[:0], 1, &amqp091.QueueDeclareOk{Queue: q, MessageCount: n})
//	out = amqp091.AppendMessage(out, 1, &amqp091.BasicDeliver{...}, &props, body, frameMax)
//	out = amqp091.AppendHeartbeatFrame(out)
//	conn.Write(out)
//
// [ParseFrame] works on a buffer instead of a reader. Field tables are
// iterated lazily ([Table.Iter], [Table.Get]); [Table.Map] and [Value.Any]
// materialise them for display. Tables are built with [Table.Append] and the
// Value constructors ([StringValue], [Int32Value], ...).
//
// Field-value types follow RabbitMQ and the common clients rather than the
// 0-9-1 grammar where the two disagree (see the errata): 's' is a signed
// 16-bit integer, 'l' a signed 64-bit integer, 'x' a byte array; 'U'
// (int16) and 'L' (uint64) from the grammar are accepted too.
//
// # Decoder
//
// [New] builds the per-connection decoder. It emits one unit per frame
// (Type "class.method" as the spec names it, "content-header",
// "content-body" or "heartbeat", with Channel set) and one per protocol
// header ("protocol-header"). Bytes that cannot be a frame (garbage, a
// frame-end octet that is not 0xCE, an unknown frame type, a frame larger
// than Options.MaxFrame or the negotiated frame-max) become one unit of type
// "malformed" with Err set, and decoding resumes at the next frame boundary
// it can trust: a frame of a known type, a plausible size and a 0xCE at its
// end, whose method ids or class are known, or whose end is followed by
// another plausible frame header. After a Gap (including one before the first
// Feed, when the capture began mid-connection) it resynchronises the same way
// without reporting the skipped tail of the lost frame.
//
// Summaries follow tshark's Info column ("Basic.Publish x=amq.direct
// rk=orders") and add what helps: delivery tags, flags that are set, reply
// codes and texts, queue counts, content type and body size, body progress
// ("Content-Body len=8184 (16368/48000)").
//
// The unit that completes a message (the last body frame, or the content
// header when the body is empty) carries the assembled message: method,
// arguments, properties and the whole body across its frames, kept up to
// Options.MaxMessage bytes (with a warning when cut).
//
// Secrets: connection.start-ok's response (the password of PLAIN and
// AMQPLAIN, all of other mechanisms but EXTERNAL), connection.secure-ok's
// response and connection.update-secret's new-secret are overwritten with '*'
// in Unit.Raw, shown as "<redacted>" in the field tree, and the unit is
// marked Secret, unless Options.ShowSecrets.
//
// # Field tree
//
// Field.Name is Wireshark's AMQP field name where it has one, so display
// filters read the same: amqp.type, amqp.channel, amqp.length,
// amqp.method.class, amqp.method.method, amqp.method.arguments.<argument>
// (underscores for hyphens, and Wireshark's names for the arguments it names
// differently: nowait, ticket, capabilities, insist, known_hosts,
// out_of_band, channel_id, cluster_id), amqp.header.class,
// amqp.header.weight, amqp.header.body-size, amqp.header.property-flags,
// amqp.method.properties.<property>, amqp.payload, amqp.init.* for the
// protocol header. wiretap adds amqp.method ("basic.publish"), table entries
// as <table's name>.<key> (amqp.method.properties.headers.x-trace), and
// amqp.message, amqp.message.method, amqp.message.body-size and
// amqp.message.body for an assembled message. Field.Key is the spec's name
// ("routing-key"); Encoding is the AMQP domain (shortstr, longstr, octet,
// short, long, longlong, bit, table, timestamp) or, in tables, the type
// octet and its name ("S longstr"). Offsets and lengths are relative to
// Unit.Raw; fields of an assembled message have no range.
//
// Rendered as JSON (KindMap as an object keyed by Key, KindList as an array),
// a method frame's fields look like
//
//	{"type": 1, "channel": 1, "length": 27, "class": 60, "method": 40,
//	 "name": "basic.publish",
//	 "arguments": {"reserved-1": 0, "exchange": "amq.direct",
//	               "routing-key": "orders", "mandatory": false, "immediate": false}}
//
// a content header's like
//
//	{"type": 2, "channel": 1, "length": 44, "class": 60, "weight": 0,
//	 "body-size": 11, "property-flags": 40960,
//	 "properties": {"content-type": "text/plain", "headers": {"a": 1}}}
//
// and a body frame's like {"type": 3, "channel": 1, "length": 11,
// "payload": <bytes>}, plus, on the frame that completes a message,
//
//	"message": {"method": "basic.publish", "arguments": {...},
//	            "properties": {...}, "body-size": 11, "body": "hello world"}
//
// Longstr values and bodies are strings when they are printable UTF-8 and
// bytes otherwise; timestamps are times; decimals are strings ("12.34").
package amqp091
