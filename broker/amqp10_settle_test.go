package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// attachModes attaches a link with the given snd-settle-mode and
// rcv-settle-mode and returns the broker's attach.
func (r *raw10) attachModes(handle uint32, role bool, addr string, snd, rcv uint8) *amqp10.Composite {
	r.t.Helper()
	term := amqp10.AppendComposite(nil, amqp10.DescriptorTarget, amqp10.AppendString(nil, addr))
	src := amqp10.AppendNull(nil)
	if role {
		src, term = amqp10.AppendComposite(nil, amqp10.DescriptorSource, amqp10.AppendString(nil, addr)), amqp10.AppendNull(nil)
	}
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "modes-"+addr),
		amqp10.AppendUint(nil, handle), amqp10.AppendBool(nil, role), amqp10.AppendUbyte(nil, snd), amqp10.AppendUbyte(nil, rcv),
		src, term, amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 0)))
	return r.expect(amqp10.DescriptorAttach)
}

// TestAMQP10RcvSettleModeSecond: rcv-settle-mode second is what RabbitMQ 4
// makes of it. A link asking for it is refused (an attach without its
// terminus, then a detach with amqp:not-implemented) unless its sender
// settles everything, where the mode is moot: a publisher is then
// answered first, a consumer gets its mode echoed. A transfer asking for
// second on an unsettled delivery detaches its link the same way; on a
// settled one it is ignored. go-amqp asking for second is refused too.
func TestAMQP10RcvSettleModeSecond(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "rs2")
	r := dialRaw10(t, url, 4096)
	refused := func(handle uint32, role bool) {
		t.Helper()
		a := r.attachModes(handle, role, "/queues/rs2", sndSettleUnsettled, rcvSettleSecond)
		term := 6
		if role {
			term = 5
		}
		if f, ok := a.Field(term); ok && !f.IsNull() {
			t.Errorf("refused attach (receiver %v) has a terminus", role)
		}
		if m, _ := a.Uint(r.last(), 4); m != rcvSettleSecond {
			t.Errorf("refused attach: rcv-settle-mode %d, want the client's, 1", m)
		}
		expectCondition(t, r, amqp10.DescriptorDetach, condNotImplemented)
		if _, desc := r.condition(); desc != "rcv-settle-mode second not supported" {
			t.Errorf("detach description %q", desc)
		}
	}
	refused(0, roleSender)
	refused(1, roleReceiver)

	// The sender settles everything: accepted.
	a := r.attachModes(2, roleSender, "/queues/rs2", sndSettleSettled, rcvSettleSecond)
	if m, _ := a.Uint(r.last(), 4); m != 0 {
		t.Errorf("publisher attach answered rcv-settle-mode %d, want first (0)", m)
	}
	r.expect(amqp10.DescriptorFlow)
	msg := messages10()["data"]
	r.transfer(2, 0, true, msg, 1000)
	a = r.attachModes(3, roleReceiver, "/queues/rs2", sndSettleSettled, rcvSettleSecond)
	if m, _ := a.Uint(r.last(), 4); m != rcvSettleSecond {
		t.Errorf("consumer attach answered rcv-settle-mode %d, want the client's, 1", m)
	}
	r.flow(3, 0, 1, false)
	if got, _, settled, _ := r.receive(); !settled || !strings.HasSuffix(string(got), string(msg)) {
		t.Errorf("settled consumer: settled %v, message %x", settled, got)
	}

	// A mixed-mode publisher: a transfer's own rcv-settle-mode second.
	r.attachModes(4, roleSender, "/queues/rs2", 2, 0)
	r.expect(amqp10.DescriptorFlow)
	transfer := func(id uint32, settled bool) {
		r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 4), amqp10.AppendUint(nil, id),
			amqp10.AppendBinary(nil, []byte{byte(id)}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, settled), amqp10.AppendBool(nil, false),
			amqp10.AppendUbyte(nil, rcvSettleSecond)), msg)
	}
	transfer(10, true) // settled: the mode is ignored
	waitEmptyOf(t, url, "rs2", 1)
	transfer(11, false)
	expectCondition(t, r, amqp10.DescriptorDetach, condNotImplemented)
	waitEmptyOf(t, url, "rs2", 1)

	conn := dialGoAMQP(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = sess.NewSender(ctx, "/queues/rs2", &goamqp.SenderOptions{RequestedReceiverSettleMode: goamqp.ReceiverSettleModeSecond.Ptr()})
	if err == nil || !strings.Contains(err.Error(), condNotImplemented) {
		t.Errorf("go-amqp sender asking for second: %v, want %s", err, condNotImplemented)
	}
	_, err = sess.NewReceiver(ctx, "/queues/rs2", &goamqp.ReceiverOptions{SettlementMode: goamqp.ReceiverSettleModeSecond.Ptr()})
	if err == nil || !strings.Contains(err.Error(), condNotImplemented) {
		t.Errorf("go-amqp receiver asking for second: %v, want %s", err, condNotImplemented)
	}
	stillServed(t, url)
}
