package broker

import (
	"bytes"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// TestAMQP10FrameParseAllocatesNothing: reading a transfer frame from a
// batch, locating its performative and decoding the transfer (what
// conn10.loop and session10.transfer do before routing) allocates nothing.
func TestAMQP10FrameParseAllocatesNothing(t *testing.T) {
	perf := amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 7),
		amqp10.AppendBinary(nil, []byte{0, 0, 0, 7}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendBool(nil, false))
	frame := amqp10.AppendFrame(nil, amqp10.FrameTypeAMQP, 0, perf, bench10Message())
	src := bytes.NewReader(bytes.Repeat(frame, 2000))
	rd := reader10{r: src, buf: make([]byte, 64<<10), max: 1 << 20}
	var f amqp10.Frame
	var comp amqp10.Composite
	var tr amqp10.Transfer
	if n := testing.AllocsPerRun(1000, func() {
		if err := rd.frame(&f); err != nil {
			t.Fatal(err)
		}
		if err := amqp10.ScanComposite(f.Body, 0, &comp); err != nil {
			t.Fatal(err)
		}
		if err := tr.Decode(f.Body, &comp); err != nil || tr.DeliveryID != 7 || !rd.buffered() {
			t.Fatalf("transfer %+v, %v", tr, err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per frame parsed", n)
	}
}

// TestAMQP10PublishAllocations: an unsettled single-frame transfer, from
// its performative to the message in its queue and its outcome gathered
// and written, allocates nothing: the stored message comes from the pool,
// and the one x-max-length drops goes back to it.
func TestAMQP10PublishAllocations(t *testing.T) {
	productionMode(t)
	s, c := bench10Link(t)
	msg := bench10Message()
	id := uint32(0)
	var comp amqp10.Composite
	body := make([]byte, 0, 256)
	publish := func() {
		body = append(amqp10.AppendComposite(body[:0], amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, id),
			amqp10.AppendBinary(nil, []byte{0}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendBool(nil, false)), msg...)
		id++
		if err := amqp10.ScanComposite(body, 0, &comp); err != nil {
			t.Fatal(err)
		}
		if err := s.transfer(body, &comp, body[comp.List.End:]); err != nil {
			t.Fatal(err)
		}
		s.cn.endOfBatch()
		c.wmu.Lock()
		c.out = c.out[:0]
		c.wmu.Unlock()
	}
	for range 1001 {
		publish() // the queue at its x-max-length
	}
	n := testing.AllocsPerRun(1000, publish)
	// The performative built above costs its own: AllocsPerRun counts
	// them, so they are measured alone and taken off.
	building := testing.AllocsPerRun(1000, func() {
		body = append(amqp10.AppendComposite(body[:0], amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, id),
			amqp10.AppendBinary(nil, []byte{0}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendBool(nil, false)), msg...)
	})
	t.Logf("%v allocations per publish, %v of them building the frame", n, building)
	if got := n - building; got != 0 {
		t.Fatalf("%v allocations per publish", got)
	}
	if s.cn.disp.n != 0 {
		t.Fatal("a disposition left pending after the batch ended")
	}
}
