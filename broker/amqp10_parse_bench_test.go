package broker

import (
	"bytes"
	"io"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// BenchmarkAMQP10FrameParse is the reading side of the publish path: one
// transfer frame of a 12-byte message read by the connection's frame
// reader from a buffer of many, its performative located and the transfer
// decoded, as conn10.loop and session10.transfer do before routing.
func BenchmarkAMQP10FrameParse(b *testing.B) {
	perf := amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 7),
		amqp10.AppendBinary(nil, []byte{0, 0, 0, 7}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendBool(nil, false))
	frame := amqp10.AppendFrame(nil, amqp10.FrameTypeAMQP, 0, perf, bench10Message())
	const batch = 1024
	stream := bytes.Repeat(frame, batch)
	src := bytes.NewReader(stream)
	rd := reader10{r: src, buf: make([]byte, 64<<10), max: 1 << 20}
	var f amqp10.Frame
	var comp amqp10.Composite
	var t amqp10.Transfer
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if err := rd.frame(&f); err != nil {
			if err != io.EOF {
				b.Fatal(err)
			}
			src.Reset(stream)
			rd.beg, rd.end = 0, 0
			if err := rd.frame(&f); err != nil {
				b.Fatal(err)
			}
		}
		if err := amqp10.ScanComposite(f.Body, 0, &comp); err != nil {
			b.Fatal(err)
		}
		if err := t.Decode(f.Body, &comp); err != nil || t.DeliveryID != 7 {
			b.Fatal(err)
		}
	}
}
