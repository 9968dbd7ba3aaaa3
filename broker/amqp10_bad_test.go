package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// expectCondition reads until a close, end or detach and checks its
// error condition.
func expectCondition(t *testing.T, r *raw10, desc uint64, cond string) {
	t.Helper()
	for {
		d := r.next()
		if d == amqp10.DescriptorDisposition || d == amqp10.DescriptorTransfer || d == amqp10.DescriptorAttach {
			continue
		}
		if d != desc {
			t.Fatalf("got performative 0x%x, want 0x%x%s", d, desc, r.errorText())
		}
		if got, _ := r.condition(); got != cond {
			t.Fatalf("condition %q, want %q%s", got, cond, r.errorText())
		}
		return
	}
}

// stillServed checks that a fresh connection still publishes and
// consumes after a bad client.
func stillServed(t *testing.T, url string) {
	t.Helper()
	declare10(t, url, "served")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/served", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, messages10()["data"], 1000)
	r.attach(1, true, "/queues/served", true)
	r.flow(1, 0, 1, false)
	r.receive()
}

func TestAMQP10TransferBeyondCredit(t *testing.T) {
	b, url := startBroker(t, Config{})
	b.credit10 = 1 // no top-up: less than half of 1 is never left
	declare10(t, url, "cr")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/cr", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, messages10()["data"], 1000)
	r.transfer(0, 1, true, messages10()["data"], 1000)
	expectCondition(t, r, amqp10.DescriptorDetach, condTransferLimit)
	stillServed(t, url)
}

func TestAMQP10OversizedFrame(t *testing.T) {
	_, url := startBroker(t, Config{})
	r := dialRaw10(t, url, 4096)
	var h [8]byte
	binary.BigEndian.PutUint32(h[:], DefaultFrameMax+1)
	h[4] = 2
	r.write(h[:])
	expectCondition(t, r, amqp10.DescriptorClose, condFramingError)
	stillServed(t, url)
}

func TestAMQP10GarbageAfterHeader(t *testing.T) {
	_, url := startBroker(t, Config{})
	// After the SASL header: not a sasl-init; the broker hangs up.
	r := dialRaw10Header(t, url)
	r.write([]byte(header10SASL + "\x00\x00\x00\x10\x02\x01\x00\x00garbage!"))
	r.header()
	r.expect(amqp10.DescriptorSASLMechanisms)
	if _, _, err := r.frame(); err != io.EOF {
		t.Fatalf("after garbage: %v, want the connection closed", err)
	}
	// After the AMQP header: a frame that is no performative.
	r = dialRaw10(t, url, 4096)
	r.write([]byte("\x00\x00\x00\x10\x02\x00\x00\x00garbage!"))
	expectCondition(t, r, amqp10.DescriptorClose, condDecodeError)
	stillServed(t, url)
}

func TestAMQP10AttachTwice(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "tw")
	r := dialRaw10(t, url, 4096)
	r.attach(0, true, "/queues/tw", false)
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "again"),
		amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, true), amqp10.AppendUbyte(nil, 0), amqp10.AppendUbyte(nil, 0),
		amqp10.AppendComposite(nil, amqp10.DescriptorSource, amqp10.AppendString(nil, "/queues/tw"))))
	expectCondition(t, r, amqp10.DescriptorEnd, condHandleInUse)
	stillServed(t, url)
}

func TestAMQP10AddressErrors(t *testing.T) {
	users := auth.NewDefaultStore()
	users.PutUser("ro", "ro", nil)
	if err := users.SetPermissions("ro", "/", "", "", ".*"); err != nil {
		t.Fatal(err)
	}
	_, url := startBroker(t, Config{Users: users})
	declare10(t, url, "exists")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/missing", false)
	expectCondition(t, r, amqp10.DescriptorDetach, condNotFound)
	r.attach(1, false, "/exchanges/missing/key", false)
	expectCondition(t, r, amqp10.DescriptorDetach, condNotFound)
	r.attach(2, true, "/queues/missing", false)
	expectCondition(t, r, amqp10.DescriptorDetach, condNotFound)
	r.attach(3, false, "exists", false)
	expectCondition(t, r, amqp10.DescriptorDetach, condInvalidField)
	// The v1 forms RabbitMQ 4 still takes, deprecated.
	r.attach(5, false, "/queue/exists", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(5, 0, true, messages10()["data"], 1000)
	r.attach(6, false, "/exchange/amq.fanout", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(6, 1, true, messages10()["data"], 1000)
	r.attach(7, false, "/topic/k", true)
	r.expect(amqp10.DescriptorFlow)
	r.attach(8, true, "/amq/queue/exists", true)
	r.flow(8, 0, 1, false)
	r.receive()

	// An exchange target: routed with its key; unroutable is released.
	r.attach(4, false, "/exchanges/amq.direct/nowhere", false)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(4, 0, false, messages10()["data"], 1000)
	if d := r.next(); d != amqp10.DescriptorDisposition {
		t.Fatalf("got 0x%x", d)
	}
	f, _ := r.comp.Field(4)
	var st amqp10.Composite
	if f == nil || st.Set(r.last(), *f) != nil || st.Descriptor != amqp10.DescriptorReleased {
		t.Fatal("an unroutable message is not released")
	}

	// A user without write permission may not publish, but may consume.
	ro := dialRaw10Header(t, url)
	ro.write([]byte(header10SASL))
	ro.header()
	ro.expect(amqp10.DescriptorSASLMechanisms)
	ro.writeFrame(amqp10.FrameTypeSASL, 0, amqp10.AppendComposite(nil, amqp10.DescriptorSASLInit,
		amqp10.AppendSymbol(nil, "PLAIN"), amqp10.AppendBinary(nil, []byte("\x00ro\x00ro"))))
	ro.expect(amqp10.DescriptorSASLOutcome)
	ro.write([]byte(header10AMQP))
	ro.header()
	ro.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "ro")))
	ro.expect(amqp10.DescriptorOpen)
	ro.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorBegin, amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 100), amqp10.AppendUint(nil, 100)))
	ro.expect(amqp10.DescriptorBegin)
	ro.attach(0, false, "/queues/exists", false)
	expectCondition(t, ro, amqp10.DescriptorDetach, condUnauthorized)
	ro.attach(1, true, "/queues/exists", false)
	ro.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := ro.frame(); err == nil && ro.comp.Descriptor == amqp10.DescriptorDetach {
		t.Fatalf("consuming refused%s", ro.errorText())
	}
}

func TestAMQP10SASL(t *testing.T) {
	b, url := startBroker(t, Config{})
	b.silentDelay = 0
	r := dialRaw10Header(t, url)
	r.write([]byte(header10SASL))
	r.header()
	m := r.expect(amqp10.DescriptorSASLMechanisms)
	f, _ := m.Field(0)
	if f == nil || string(r.last()[f.Start:f.End]) != string(amqp10.AppendSymbolArray(nil, "PLAIN")) {
		t.Fatal("mechanisms are not PLAIN alone (ANONYMOUS is off by default)")
	}
	r.writeFrame(amqp10.FrameTypeSASL, 0, amqp10.AppendComposite(nil, amqp10.DescriptorSASLInit,
		amqp10.AppendSymbol(nil, "PLAIN"), amqp10.AppendBinary(nil, []byte("\x00guest\x00wrong"))))
	out := r.expect(amqp10.DescriptorSASLOutcome)
	if code, _ := out.Uint(r.last(), 0); code != 1 {
		t.Fatalf("wrong password: sasl-outcome code %d, want 1 (auth)", code)
	}
	// Without SASL and without ANONYMOUS: told to use SASL.
	r = dialRaw10Header(t, url)
	r.write([]byte(header10AMQP))
	if h := r.header(); h != header10SASL {
		t.Fatalf("header %q, want the SASL header", h)
	}

	// With ANONYMOUS enabled, a client may skip SASL.
	_, url2 := startBroker(t, Config{AMQP10AnonymousUser: "guest"})
	r = dialRaw10Header(t, url2)
	r.write([]byte(header10AMQP))
	if h := r.header(); h != header10AMQP {
		t.Fatalf("header %q", h)
	}
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "anon"), amqp10.AppendString(nil, "vhost:nope")))
	r.expect(amqp10.DescriptorOpen)
	expectCondition(t, r, amqp10.DescriptorClose, condNotFound)
}

// FuzzAMQP10Connection feeds bytes after the AMQP 1.0 header to a
// connection (ANONYMOUS enabled, so no SASL): whatever arrives, the broker
// answers or closes, and neither panics nor hangs.
func FuzzAMQP10Connection(f *testing.F) {
	open := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "fz")))
	begin := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorBegin, amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 100), amqp10.AppendUint(nil, 100)))
	attach := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "l"),
		amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendUbyte(nil, 0), amqp10.AppendUbyte(nil, 0),
		amqp10.AppendNull(nil), amqp10.AppendComposite(nil, amqp10.DescriptorTarget, amqp10.AppendString(nil, "/queues/fz"))))
	recv := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "r"),
		amqp10.AppendUint(nil, 1), amqp10.AppendBool(nil, true), amqp10.AppendUbyte(nil, 0), amqp10.AppendUbyte(nil, 0),
		amqp10.AppendComposite(nil, amqp10.DescriptorSource, amqp10.AppendString(nil, "/queues/fz"))))
	flow := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorFlow, amqp10.AppendUint(nil, 1),
		amqp10.AppendUint(nil, 100), amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 100), amqp10.AppendUint(nil, 1),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 10), amqp10.AppendNull(nil), amqp10.AppendBool(nil, true)))
	transfer := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0),
		amqp10.AppendUint(nil, 0), amqp10.AppendBinary(nil, []byte{1}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false),
		amqp10.AppendBool(nil, false)), messages10()["data-sections"])
	disp := amqp10.AppendFrame(nil, 0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorDisposition, amqp10.AppendBool(nil, true),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 100), amqp10.AppendBool(nil, true), amqp10.AppendComposite(nil, amqp10.DescriptorReleased)))
	var all []byte
	for _, p := range [][]byte{open, begin, attach, transfer, recv, flow, disp} {
		all = append(all, p...)
		f.Add(append([]byte(nil), all...))
	}
	b, err := New(Config{AMQP10AnonymousUser: "guest"})
	if err != nil {
		f.Fatal(err)
	}
	b.silentDelay = 0
	f.Cleanup(func() { b.Close(); checkLedger(f, b) })
	v := b.vhost("/")
	v.declareQueue(&conn{admin: true, vh: v, b: b}, &amqp091.QueueDeclare{Queue: []byte("fz")})
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			newConn(b, server).serve()
		}()
		go io.Copy(io.Discard, client)
		client.SetDeadline(time.Now().Add(5 * time.Second))
		client.Write(append([]byte(header10AMQP), data...))
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not end")
		}
	})
}

// TestAMQP10AbortedAndOversizedMessages: an aborted delivery is dropped
// with its bytes; a message past the max message size detaches its link
// with amqp:link:message-size-exceeded; the memory accounting returns to
// nothing either way.
func TestAMQP10AbortedAndOversizedMessages(t *testing.T) {
	b, url := startBroker(t, Config{MaxMessage: 10000})
	declare10(t, url, "ab")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/ab", false)
	r.expect(amqp10.DescriptorFlow)
	part := bytes.Repeat([]byte{1}, 3000)
	more := func(handle, id uint32, first, more, aborted bool) []byte {
		if first {
			return amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, handle), amqp10.AppendUint(nil, id),
				amqp10.AppendBinary(nil, []byte{byte(id)}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendBool(nil, more))
		}
		return amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, handle), amqp10.AppendNull(nil),
			amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendBool(nil, more),
			amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendBool(nil, aborted))
	}
	r.writeFrame(0, 0, more(0, 0, true, true, false), part)
	r.writeFrame(0, 0, more(0, 0, false, true, false), part)
	r.writeFrame(0, 0, more(0, 0, false, false, true), nil) // aborted
	r.transfer(0, 1, false, messages10()["data"], 1000)
	if d := r.next(); d != amqp10.DescriptorDisposition {
		t.Fatalf("got 0x%x, want the disposition of delivery 1", d)
	}
	if id, _ := r.comp.Uint(r.last(), 1); id != 1 {
		t.Fatalf("disposition of delivery %d, want 1 (0 was aborted)", id)
	}
	r.writeFrame(0, 0, more(0, 2, true, true, false), part)
	r.writeFrame(0, 0, more(0, 2, false, true, false), part)
	r.writeFrame(0, 0, more(0, 2, false, true, false), part)
	r.writeFrame(0, 0, more(0, 2, false, false, false), part) // 12000 bytes
	expectCondition(t, r, amqp10.DescriptorDetach, condMessageSizeExceeded)
	waitEmptyOf(t, url, "ab", 1)
	held := int64(len(messages10()["data"]) + annotationsOverhead + len("ab"))
	if used := b.mem.used.Load(); used > held {
		t.Fatalf("memory accounting holds %d bytes, want at most the one stored message's %d", used, held)
	}
	stillServed(t, url)
}

// waitEmptyOf waits until queue holds n messages.
func waitEmptyOf(t *testing.T, url, queue string, n int) {
	t.Helper()
	conn, ch := dial(t, url)
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		q, err := ch.QueueDeclarePassive(queue, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if q.Messages == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s holds %d messages, want %d", queue, q.Messages, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAMQP10SessionWindowViolation(t *testing.T) {
	b, url := startBroker(t, Config{})
	b.window10n = 3
	declare10(t, url, "win")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/win", true)
	r.expect(amqp10.DescriptorFlow) // the window re-announced: 3 from here
	for i := range 4 {
		r.transfer(0, uint32(i), true, messages10()["data"], 1000)
	}
	expectCondition(t, r, amqp10.DescriptorEnd, condWindowViolation)
	waitEmptyOf(t, url, "win", 3)
	stillServed(t, url)
}

// TestAMQP10IdleTimeOut: the broker sends empty frames within half the
// client's idle-time-out, and closes a client silent for twice its own.
func TestAMQP10IdleTimeOut(t *testing.T) {
	_, url := startBroker(t, Config{Heartbeat: time.Second})
	r := dialRaw10Header(t, url)
	r.write([]byte(header10SASL))
	r.header()
	r.expect(amqp10.DescriptorSASLMechanisms)
	r.writeFrame(amqp10.FrameTypeSASL, 0, amqp10.AppendComposite(nil, amqp10.DescriptorSASLInit,
		amqp10.AppendSymbol(nil, "PLAIN"), amqp10.AppendBinary(nil, []byte("\x00guest\x00guest"))))
	r.expect(amqp10.DescriptorSASLOutcome)
	r.write([]byte(header10AMQP))
	r.header()
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "idle"),
		amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 400)))
	open := r.expect(amqp10.DescriptorOpen)
	if ms, _ := open.Uint(r.last(), 4); ms != 1000 {
		t.Fatalf("broker's idle-time-out %d ms, want 1000", ms)
	}
	// Empty frames arrive, then (the client silent) the close.
	var f amqp10.Frame
	start := time.Now()
	empty := 0
	for {
		if err := r.rd.frame(&f); err != nil {
			t.Fatalf("after %d empty frames: %v", empty, err)
		}
		if len(f.Body) == 0 {
			empty++
			continue
		}
		break
	}
	r.body = append([]byte(nil), f.Body...)
	if err := amqp10.ScanComposite(r.body, 0, &r.comp); err != nil || r.comp.Descriptor != amqp10.DescriptorClose {
		t.Fatalf("got 0x%x, want close (%v)", r.comp.Descriptor, err)
	}
	if cond, _ := r.condition(); cond != condResourceLimitExceeded {
		t.Fatalf("close condition %q", cond)
	}
	if took := time.Since(start); empty < 2 || took < 1500*time.Millisecond {
		t.Fatalf("%d empty frames and a close after %v; want empty frames every 200 ms and the close after 2 s", empty, took)
	}
}

// TestAMQP10DrainAndQueueDeleted: drain sends what the queue has and then
// uses up the rest of the credit; deleting the queue detaches its
// consumer with amqp:resource-deleted.
func TestAMQP10DrainAndQueueDeleted(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "dr")
	r := dialRaw10(t, url, 4096)
	r.attach(0, false, "/queues/dr", true)
	r.expect(amqp10.DescriptorFlow)
	r.transfer(0, 0, true, messages10()["data"], 1000)
	r.transfer(0, 1, true, messages10()["data"], 1000)
	waitEmptyOf(t, url, "dr", 2)
	r.attach(1, true, "/queues/dr", true)
	r.flow(1, 0, 5, true)
	r.receive()
	r.receive()
	for {
		if _, _, err := r.frame(); err != nil {
			t.Fatal(err)
		}
		if h, ok := r.comp.Uint(r.last(), 4); r.comp.Descriptor == amqp10.DescriptorFlow && ok && h == 1 {
			break
		}
	}
	dc, _ := r.comp.Uint(r.last(), 5)
	credit, _ := r.comp.Uint(r.last(), 6)
	drain, _ := r.comp.Bool(r.last(), 8)
	if dc != 5 || credit != 0 || !drain {
		t.Fatalf("after drain: delivery-count %d credit %d drain %v, want 5 0 true", dc, credit, drain)
	}
	conn, ch := dial(t, url)
	defer conn.Close()
	if _, err := ch.QueueDelete("dr", false, false, false); err != nil {
		t.Fatal(err)
	}
	expectCondition(t, r, amqp10.DescriptorDetach, condResourceDeleted)
}

// TestAMQP10StateIsBounded: a session holds at most 256 links and a
// connection channel-max sessions, and a link's own state is small (the
// parsing scratch is the connection's), so a client attaching all it may
// holds the broker to a bounded size.
func TestAMQP10StateIsBounded(t *testing.T) {
	if n := unsafe.Sizeof(link10{}); n > 320 {
		t.Fatalf("a link takes %d bytes", n)
	}
	_, url := startBroker(t, Config{})
	r := dialRaw10(t, url, 4096)
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "l"),
		amqp10.AppendUint(nil, maxLinksPerSession), amqp10.AppendBool(nil, false)))
	expectCondition(t, r, amqp10.DescriptorClose, condFramingError)
	r = dialRaw10(t, url, 4096)
	r.writeFrame(0, DefaultChannelMax+1, amqp10.AppendComposite(nil, amqp10.DescriptorBegin, amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 100), amqp10.AppendUint(nil, 100)))
	expectCondition(t, r, amqp10.DescriptorClose, condFramingError)
}
