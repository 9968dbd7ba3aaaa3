package broker

import (
	"bytes"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// TestAMQP10DispositionEncoding: the disposition the broker writes
// without building its fields is the one AppendComposite builds, for one
// delivery (last null) and for a range, with every outcome and ids of
// every width.
func TestAMQP10DispositionEncoding(t *testing.T) {
	long := outcomeRejected(err10(condInvalidField, string(bytes.Repeat([]byte("x"), 300))))
	states := [][]byte{outcomeAccepted, outcomeReleased, outcomeRejected(err10(condNotFound, "no exchange 'x' in vhost '/'")), long}
	ids := []uint32{0, 1, 255, 256, 70000, 1<<32 - 2}
	for _, st := range states {
		for _, first := range ids {
			for _, n := range []uint32{0, 1, 300} {
				last := first + n
				if last < first {
					continue
				}
				lastField := amqp10.AppendNull(nil)
				if n > 0 {
					lastField = amqp10.AppendUint(nil, last)
				}
				want := appendFrame10([]byte("prefix"), amqp10.FrameTypeAMQP, 7, amqp10.AppendComposite(nil, amqp10.DescriptorDisposition,
					amqp10.AppendBool(nil, roleReceiver), amqp10.AppendUint(nil, first), lastField, amqp10.AppendBool(nil, true), st))
				if got := appendDisposition10([]byte("prefix"), 7, first, last, st); !bytes.Equal(got, want) {
					t.Fatalf("first %d last %d state %x:\n got %x\nwant %x", first, last, st[:4], got, want)
				}
			}
		}
	}
	buf := make([]byte, 0, 256)
	if a := testing.AllocsPerRun(1000, func() { buf = appendDisposition10(buf[:0], 0, 5, 9, outcomeAccepted) }); a != 0 {
		t.Fatalf("%v allocations per disposition", a)
	}
}

// TestAMQP10DispositionsGathered: transfers that arrive together are
// answered by one disposition per run of consecutive deliveries with the
// same outcome, in order, each delivery exactly once: accepted to a
// queue, released where nothing is bound, and a settled delivery between
// them answered by nothing.
func TestAMQP10DispositionsGathered(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "gathered")
	r := dialRaw10(t, url, 1<<16)
	r.attach(0, false, "/queues/gathered", false)
	r.expect(amqp10.DescriptorFlow)
	r.attach(1, false, "/exchanges/amq.direct/nowhere", false)
	r.expect(amqp10.DescriptorFlow)
	msg := messages10()["data"]
	want := map[uint32]uint64{} // delivery-id: the outcome's descriptor
	var burst []byte
	for id := uint32(0); id < 60; id++ {
		handle, settled, outcome := uint32(0), false, amqp10.DescriptorAccepted
		switch {
		case id >= 20 && id < 30:
			handle, outcome = 1, amqp10.DescriptorReleased
		case id == 45:
			settled = true
		}
		if !settled {
			want[id] = outcome
		}
		perf := amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, handle), amqp10.AppendUint(nil, id),
			amqp10.AppendBinary(nil, []byte{byte(id)}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, settled), amqp10.AppendBool(nil, false))
		burst = amqp10.AppendFrame(burst, amqp10.FrameTypeAMQP, 0, perf, msg)
	}
	r.write(burst) // one write: the broker reads it in one batch or a few
	dispositions := 0
	next := uint32(0)
	for len(want) > 0 {
		if d := r.next(); d != amqp10.DescriptorDisposition {
			t.Fatalf("got 0x%x, want a disposition%s", d, r.errorText())
		}
		dispositions++
		first, _ := r.comp.Uint(r.last(), 1)
		last, ok := r.comp.Uint(r.last(), 2)
		if !ok {
			last = first
		}
		f, _ := r.comp.Field(4)
		var st amqp10.Composite
		if f == nil || st.Set(r.last(), *f) != nil {
			t.Fatal("a disposition without a state")
		}
		if settled, _ := r.comp.Bool(r.last(), 3); !settled || last < first || uint32(first) < next {
			t.Fatalf("disposition %d..%d (settled %v) after %d", first, last, settled, next)
		}
		for id := uint32(first); id <= uint32(last); id++ {
			outcome, ok := want[id]
			if !ok || outcome != st.Descriptor {
				t.Fatalf("delivery %d answered 0x%x (want 0x%x, expected %v)", id, st.Descriptor, outcome, ok)
			}
			delete(want, id)
		}
		next = uint32(last) + 1
	}
	// 0..19 accepted, 20..29 released, 30..44 and 46..59 accepted: 4
	// runs, a few more if the burst arrived in several reads.
	if dispositions > 12 {
		t.Errorf("%d dispositions for 59 unsettled transfers sent together", dispositions)
	}
	waitEmptyOf(t, url, "gathered", 50) // fails unless the 50 routed messages are there
}
