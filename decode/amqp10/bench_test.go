package amqp10

import (
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

func benchMessage(body int) []byte {
	msg, _ := buildMessage(CRC32, false,
		section{DescriptorHeader, AppendList(nil, AppendBool(nil, true))},
		section{DescriptorProperties, AppendList(nil, AppendString(nil, "message-0001"), AppendNull(nil), AppendString(nil, "/queue/q"))},
		section{DescriptorApplicationProperties, AppendMap(nil, AppendString(nil, "k"), AppendString(nil, "v"), AppendString(nil, "n"), AppendLong(nil, 42))},
		section{DescriptorData, AppendBinary(nil, make([]byte, body))})
	return msg
}

// BenchmarkFrame measures the hot path per transfer frame: framing, the
// performative, the transfer view, locating the message's sections and
// verifying its CRC-32.
func BenchmarkFrame(b *testing.B) {
	frame := transferFrame(0, 0, 1, false, benchMessage(1024))
	var f Frame
	var c Composite
	var tr Transfer
	var m Message
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		ParseFrame(frame, &f)
		ScanComposite(f.Body, 0, &c)
		tr.Decode(f.Body, &c)
		ParseMessage(f.Body[c.List.End:], &m)
		m.VerifyChecksum(f.Body[c.List.End:])
	}
}

// BenchmarkDecoder measures the per-connection decoder end to end (units,
// summaries, reassembly, checksums) on a stream of single-frame transfers.
func BenchmarkDecoder(b *testing.B) {
	var stream []byte
	for i := 0; i < 64; i++ {
		stream = append(stream, transferFrame(0, 0, uint32(i), false, benchMessage(1024))...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) {})
	for b.Loop() {
		d.Feed(decode.DirF, stream, time.Time{})
	}
}

// BenchmarkMultiFrameMessage reassembles a 64 KiB message from 512-byte
// transfers.
func BenchmarkMultiFrameMessage(b *testing.B) {
	stream := transfersOf(benchMessage(64<<10), 480)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) {})
	for b.Loop() {
		d.Feed(decode.DirF, stream, time.Time{})
	}
}

// BenchmarkMessageFields measures the cold path: the full field tree of a
// transfer completing a message, as the detail view and JSON build it.
func BenchmarkMessageFields(b *testing.B) {
	var u *decode.Unit
	d := New(&decode.Conn{ID: 1}, nil, func(x *decode.Unit) { u = x })
	d.Feed(decode.DirF, transferFrame(0, 0, 1, false, benchMessage(1024)), time.Time{})
	b.ReportAllocs()
	b.SetBytes(int64(len(u.Raw)))
	for b.Loop() {
		u.Fields()
	}
}

// BenchmarkDecoderSmallTransfers is the load generator's shape as the
// broker's tap sees it: single-frame transfers of 12-byte data sections,
// nothing else in the message, one unit each.
func BenchmarkDecoderSmallTransfers(b *testing.B) {
	var stream []byte
	msg := AppendDescribed(nil, DescriptorData, AppendBinary(nil, make([]byte, 12)))
	for i := 0; i < 64; i++ {
		stream = append(stream, transferFrame(0, 0, uint32(i), false, msg)...)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) {})
	for b.Loop() {
		d.Feed(decode.DirF, stream, time.Time{})
	}
}

// smallTransfers attaches a link named link on d and returns 64 transfers
// on it, each message with a header, properties carrying a message-id,
// and 16 bytes of data.
func smallTransfers(d decode.Decoder, link string) []byte {
	d.Feed(decode.DirF, AppendFrame(nil, 0, 0, AppendComposite(nil, DescriptorAttach, AppendString(nil, link), AppendUint(nil, 0), AppendBool(nil, false))), time.Time{})
	var stream []byte
	for i := 0; i < 64; i++ {
		msg := AppendDescribed(nil, DescriptorHeader, AppendList(nil, AppendBool(nil, true)))
		msg = append(msg, AppendDescribed(nil, DescriptorProperties, AppendList(nil, AppendString(nil, "m-"+strconv.Itoa(1000+i))))...)
		msg = append(msg, AppendDescribed(nil, DescriptorData, AppendBinary(nil, make([]byte, 16)))...)
		stream = append(stream, transferFrame(0, 0, uint32(i), false, msg)...)
	}
	return stream
}

// BenchmarkDecoderSmallTransfersWithID is the corpus's amqp10-small
// shape: single-frame transfers on an attached link, each message with a
// header, properties carrying a message-id, and 16 bytes of data.
func BenchmarkDecoderSmallTransfersWithID(b *testing.B) {
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) {})
	stream := smallTransfers(d, "sender-link-0123456789")
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		d.Feed(decode.DirF, stream, time.Time{})
	}
}

// BenchmarkDecoderSmallTransfersRead is the corpus's amqp10-small shape
// decoded as `read` decodes it: stable input, transient units, fields
// seldom wanted, late summaries (the messages finished by a Completer
// on the pipeline's stage, not timed here), a link name as long as
// go-amqp's; ns/unit is the decoding goroutine's time per transfer.
func BenchmarkDecoderSmallTransfersRead(b *testing.B) {
	opt := decode.DefaultOptions()
	opt.StableInput, opt.Transient, opt.FieldsSeldom, opt.LateSummaries = true, true, true, true
	units := 0
	d := New(&decode.Conn{ID: 1}, opt, func(*decode.Unit) { units++ })
	stream := smallTransfers(d, "hGxXoqPQ5ewkqT6-QxmAlRMKPY8Ia0bXp-EWPOpSjVL0ggVisgRpGg")
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	units = 0
	for b.Loop() {
		d.Feed(decode.DirF, stream, time.Time{})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
}

// BenchmarkMultiFrameMessage4K is the corpus's amqp10-multiframe shape:
// a 64 KiB message in transfers of RabbitMQ's 4 KiB frames (units with
// bytes of their own), fed 8 KiB at a time.
func BenchmarkMultiFrameMessage4K(b *testing.B) {
	stream := transfersOf(benchMessage(64<<10), 4000)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	d := New(&decode.Conn{ID: 1}, nil, func(*decode.Unit) {})
	for b.Loop() {
		for off := 0; off < len(stream); off += 8192 {
			d.Feed(decode.DirF, stream[off:min(off+8192, len(stream))], time.Time{})
		}
	}
}

// transfersOf is msg sent as transfers of at most per bytes of it, on
// channel 0, handle 0, delivery 1.
func transfersOf(msg []byte, per int) []byte {
	var stream []byte
	for off := 0; off < len(msg); off += per {
		end := min(off+per, len(msg))
		stream = append(stream, transferFrame(0, 0, 1, end < len(msg), msg[off:end])...)
	}
	return stream
}
