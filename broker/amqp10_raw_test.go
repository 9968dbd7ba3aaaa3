package broker

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// raw10 is a bare AMQP 1.0 client built on decode/amqp10: it sees the
// frames exactly as the broker writes them, so a test can compare the bytes
// of a message with what was sent.
type raw10 struct {
	t    testing.TB
	nc   net.Conn
	rd   reader10
	comp amqp10.Composite
	body []byte // the body of the frame last read
	// count is the receiver's delivery-count, for tests that keep it.
	count uint32
}

// brokerAddr is host:port of a broker URL from startBroker.
func brokerAddr(url string) string {
	s := url[strings.Index(url, "@")+1:]
	return strings.TrimSuffix(s, "/")
}

// dialRaw10 connects, logs in with PLAIN as guest and opens the
// connection with maxFrame, then begins a session on channel 0.
func dialRaw10(t testing.TB, url string, maxFrame uint32) *raw10 {
	t.Helper()
	r := dialRaw10Header(t, url)
	r.write([]byte(header10SASL))
	if h := r.header(); h != header10SASL {
		t.Fatalf("header %q, want SASL", h)
	}
	r.expect(amqp10.DescriptorSASLMechanisms)
	r.writeFrame(amqp10.FrameTypeSASL, 0, amqp10.AppendComposite(nil, amqp10.DescriptorSASLInit,
		amqp10.AppendSymbol(nil, "PLAIN"), amqp10.AppendBinary(nil, []byte("\x00guest\x00guest"))))
	out := r.expect(amqp10.DescriptorSASLOutcome)
	if code, _ := out.Uint(r.last(), 0); code != 0 {
		t.Fatalf("sasl-outcome code %d", code)
	}
	r.write([]byte(header10AMQP))
	if h := r.header(); h != header10AMQP {
		t.Fatalf("header %q after SASL", h)
	}
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "raw"),
		amqp10.AppendString(nil, "vhost:/"), amqp10.AppendUint(nil, maxFrame)))
	r.expect(amqp10.DescriptorOpen)
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorBegin, amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 1<<20), amqp10.AppendUint(nil, 1<<20)))
	r.expect(amqp10.DescriptorBegin)
	return r
}

func dialRaw10Header(t testing.TB, url string) *raw10 {
	t.Helper()
	nc, err := net.Dial("tcp", brokerAddr(url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	return &raw10{t: t, nc: nc, rd: reader10{r: nc, nc: nc, max: 1 << 30, buf: make([]byte, 4096)}}
}

func (r *raw10) write(b []byte) {
	r.t.Helper()
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func (r *raw10) writeFrame(typ uint8, ch uint16, perf []byte, payload ...[]byte) {
	r.t.Helper()
	r.write(amqp10.AppendFrame(nil, typ, ch, append([][]byte{perf}, payload...)...))
}

func (r *raw10) header() string {
	r.t.Helper()
	h, err := r.rd.header()
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// frame reads the next non-empty frame: its performative in r.comp, its
// body and payload returned.
func (r *raw10) frame() (body, payload []byte, err error) {
	var f amqp10.Frame
	for {
		if err := r.rd.frame(&f); err != nil {
			return nil, nil, err
		}
		if len(f.Body) > 0 {
			break
		}
	}
	body = append([]byte(nil), f.Body...)
	if err := amqp10.ScanComposite(body, 0, &r.comp); err != nil {
		return nil, nil, err
	}
	r.body = body
	return body, body[r.comp.List.End:], nil
}

func (r *raw10) last() []byte { return r.body }

// expect reads the next frame and fails unless it is desc.
func (r *raw10) expect(desc uint64) *amqp10.Composite {
	r.t.Helper()
	if _, _, err := r.frame(); err != nil {
		r.t.Fatalf("waiting for 0x%x: %v", desc, err)
	}
	if r.comp.Descriptor != desc {
		r.t.Fatalf("got performative 0x%x, want 0x%x%s", r.comp.Descriptor, desc, r.errorText())
	}
	return &r.comp
}

// errorText is the error of a close, end or detach just read, for
// failure messages.
func (r *raw10) errorText() string {
	cond, desc := r.condition()
	if cond == "" {
		return ""
	}
	return " (" + cond + ": " + desc + ")"
}

// condition returns the error condition and description of the close,
// end or detach just read.
func (r *raw10) condition() (string, string) {
	idx := map[uint64]int{amqp10.DescriptorClose: 0, amqp10.DescriptorEnd: 0, amqp10.DescriptorDetach: 2}
	i, ok := idx[r.comp.Descriptor]
	if !ok {
		return "", ""
	}
	f, ok := r.comp.Field(i)
	if !ok {
		return "", ""
	}
	var e amqp10.Composite
	if e.Set(r.body, *f) != nil {
		return "", ""
	}
	c, _ := e.Bytes(r.body, 0)
	d, _ := e.Bytes(r.body, 1)
	return string(c), string(d)
}

// attach attaches a link; role true is a receiver (the client consumes).
func (r *raw10) attach(handle uint32, role bool, addr string, settled bool) *amqp10.Composite {
	r.t.Helper()
	mode := uint8(0)
	if settled {
		mode = 1
	}
	term := amqp10.AppendComposite(nil, amqp10.DescriptorTarget, amqp10.AppendString(nil, addr))
	src := amqp10.AppendNull(nil)
	if role {
		src, term = amqp10.AppendComposite(nil, amqp10.DescriptorSource, amqp10.AppendString(nil, addr)), amqp10.AppendNull(nil)
	}
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "link-"+addr),
		amqp10.AppendUint(nil, handle), amqp10.AppendBool(nil, role), amqp10.AppendUbyte(nil, mode), amqp10.AppendUbyte(nil, 0),
		src, term, amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 0)))
	return r.expect(amqp10.DescriptorAttach)
}

// flow grants credit on handle.
func (r *raw10) flow(handle, deliveryCount, credit uint32, drain bool) {
	r.t.Helper()
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorFlow, amqp10.AppendUint(nil, 1), amqp10.AppendUint(nil, 1<<20),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 1<<20), amqp10.AppendUint(nil, handle),
		amqp10.AppendUint(nil, deliveryCount), amqp10.AppendUint(nil, credit), amqp10.AppendNull(nil), amqp10.AppendBool(nil, drain)))
}

// transfer sends message as one delivery in frames of at most chunk
// payload bytes.
func (r *raw10) transfer(handle, id uint32, settled bool, message []byte, chunk int) {
	r.t.Helper()
	for first := true; first || len(message) > 0; first = false {
		n := min(chunk, len(message))
		more := n < len(message)
		var perf []byte
		if first {
			perf = amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, handle), amqp10.AppendUint(nil, id),
				amqp10.AppendBinary(nil, []byte{byte(id)}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, settled), amqp10.AppendBool(nil, more))
		} else {
			perf = amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, handle), amqp10.AppendNull(nil),
				amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendBool(nil, more))
		}
		r.writeFrame(0, 0, perf, message[:n])
		message = message[n:]
	}
}

// receive reads one whole delivery (skipping flows and dispositions):
// its message bytes, delivery-id, settled flag and frame count.
func (r *raw10) receive() (msg []byte, id uint32, settled bool, frames int) {
	r.t.Helper()
	for {
		_, payload, err := r.frame()
		if err != nil {
			r.t.Fatalf("receive: %v", err)
		}
		if r.comp.Descriptor != amqp10.DescriptorTransfer {
			if r.comp.Descriptor == amqp10.DescriptorDetach || r.comp.Descriptor == amqp10.DescriptorEnd || r.comp.Descriptor == amqp10.DescriptorClose {
				r.t.Fatalf("receive: got 0x%x%s", r.comp.Descriptor, r.errorText())
			}
			continue
		}
		var t amqp10.Transfer
		if err := t.Decode(r.body, &r.comp); err != nil {
			r.t.Fatal(err)
		}
		if frames == 0 {
			id, settled = t.DeliveryID, t.Settled
		}
		frames++
		msg = append(msg, payload...)
		if !t.More {
			return msg, id, settled, frames
		}
	}
}

// dispose settles delivery id with state.
func (r *raw10) dispose(first, last uint32, state []byte) {
	r.t.Helper()
	r.writeFrame(0, 0, amqp10.AppendComposite(nil, amqp10.DescriptorDisposition, amqp10.AppendBool(nil, true),
		amqp10.AppendUint(nil, first), amqp10.AppendUint(nil, last), amqp10.AppendBool(nil, true), state))
}

// next returns the next performative other than flow.
func (r *raw10) next() uint64 {
	r.t.Helper()
	for {
		if _, _, err := r.frame(); err != nil {
			r.t.Fatalf("next: %v", err)
		}
		if r.comp.Descriptor != amqp10.DescriptorFlow {
			return r.comp.Descriptor
		}
	}
}

// delivered10 splits a message into what the broker must keep (its header
// section and everything from the bare message on, as bytes) and its
// message-annotations (each entry's key and value bytes); ok is false when
// it has delivery-annotations or cannot be parsed.
func delivered10(b []byte) (header, rest []byte, annotations []string, ok bool) {
	var pm amqp10.Message
	if amqp10.ParseMessage(b, &pm) != nil {
		return nil, nil, nil, false
	}
	for _, sec := range pm.Sections {
		if sec.Value.Start >= pm.BareStart {
			break
		}
		switch sec.Descriptor {
		case amqp10.DescriptorHeader:
			header = b[sec.Value.Start:sec.Value.End]
		case amqp10.DescriptorDeliveryAnnotations:
			return nil, nil, nil, false
		case amqp10.DescriptorMessageAnnotations:
			it := mapItems(b, sec.Value)
			for it.Next() {
				annotations = append(annotations, string(b[it.Value.Start:it.Value.End]))
			}
		}
	}
	return header, b[pm.BareStart:], annotations, true
}

// checkDelivered checks that got is sent as the broker must deliver it:
// the header and the bare message and footer byte for byte, the
// delivery-annotations gone, the message-annotations the sender's (but
// x-exchange and x-routing-key) followed by x-exchange and x-routing-key
// as the broker routed it.
func checkDelivered(t *testing.T, what string, got, sent []byte, exchange, key string) {
	t.Helper()
	gh, grest, gann, ok := delivered10(got)
	if !ok {
		t.Errorf("%s: delivered %x does not parse, or has delivery-annotations", what, head(got))
		return
	}
	var pm amqp10.Message
	if err := amqp10.ParseMessage(sent, &pm); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var sh []byte
	var want []string
	for _, sec := range pm.Sections {
		if sec.Value.Start >= pm.BareStart {
			break
		}
		switch sec.Descriptor {
		case amqp10.DescriptorHeader:
			sh = sent[sec.Value.Start:sec.Value.End]
		case amqp10.DescriptorMessageAnnotations:
			it := mapItems(sent, sec.Value)
			for it.Next() {
				k := string(sent[it.Value.Start:it.Value.End])
				it.Next()
				if k == string(amqp10.AppendSymbol(nil, "x-exchange")) || k == string(amqp10.AppendSymbol(nil, "x-routing-key")) {
					continue
				}
				want = append(want, k, string(sent[it.Value.Start:it.Value.End]))
			}
		}
	}
	want = append(want, string(amqp10.AppendSymbol(nil, "x-exchange")), string(amqp10.AppendString(nil, exchange)),
		string(amqp10.AppendSymbol(nil, "x-routing-key")), string(amqp10.AppendString(nil, key)))
	if !bytes.Equal(gh, sh) {
		t.Errorf("%s: header %x, sent %x", what, gh, sh)
	}
	if !bytes.Equal(grest, sent[pm.BareStart:]) {
		t.Errorf("%s: the %d bytes of bare message and footer received differ from the %d sent", what, len(grest), len(sent)-pm.BareStart)
	}
	if strings.Join(gann, "|") != strings.Join(want, "|") {
		t.Errorf("%s: message-annotations %q, want %q", what, gann, want)
	}
}

// TestAMQP10PipelinedClient: a client that writes its whole opening
// (SASL header and init, AMQP header, open, begin, attach) and a 24 KB
// message in one go, before reading a byte, as the specification allows
// (§2.4.1 pipelined open): every byte read with the protocol header, more
// than the first 8 KiB, reaches the 1.0 handler, and the message arrives
// whole.
func TestAMQP10PipelinedClient(t *testing.T) {
	_, url := startBroker(t, Config{})
	declare10(t, url, "pipelined")
	sent := messages10()["big-data"]
	r := dialRaw10Header(t, url)
	var out []byte
	frame := func(typ uint8, perf []byte, payload ...[]byte) {
		out = append(out, amqp10.AppendFrame(nil, typ, 0, append([][]byte{perf}, payload...)...)...)
	}
	out = append(out, header10SASL...)
	frame(amqp10.FrameTypeSASL, amqp10.AppendComposite(nil, amqp10.DescriptorSASLInit,
		amqp10.AppendSymbol(nil, "PLAIN"), amqp10.AppendBinary(nil, []byte("\x00guest\x00guest"))))
	out = append(out, header10AMQP...)
	frame(0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, "raw"),
		amqp10.AppendString(nil, "vhost:/"), amqp10.AppendUint(nil, 1<<20)))
	frame(0, amqp10.AppendComposite(nil, amqp10.DescriptorBegin, amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 1<<20), amqp10.AppendUint(nil, 1<<20)))
	target := amqp10.AppendComposite(nil, amqp10.DescriptorTarget, amqp10.AppendString(nil, "/queues/pipelined"))
	frame(0, amqp10.AppendComposite(nil, amqp10.DescriptorAttach, amqp10.AppendString(nil, "pipelined-sender"),
		amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, false), amqp10.AppendUbyte(nil, 1), amqp10.AppendUbyte(nil, 0),
		amqp10.AppendNull(nil), target, amqp10.AppendNull(nil), amqp10.AppendNull(nil), amqp10.AppendUint(nil, 0)))
	frame(0, amqp10.AppendComposite(nil, amqp10.DescriptorTransfer, amqp10.AppendUint(nil, 0), amqp10.AppendUint(nil, 0),
		amqp10.AppendBinary(nil, []byte{0}), amqp10.AppendUint(nil, 0), amqp10.AppendBool(nil, true), amqp10.AppendBool(nil, false)), sent)
	if len(out) <= 8<<10 {
		t.Fatalf("the opening and message take %d bytes: the test needs more than 8 KiB", len(out))
	}
	r.write(out)
	if h := r.header(); h != header10SASL {
		t.Fatalf("header %q", h)
	}
	r.expect(amqp10.DescriptorSASLMechanisms)
	r.expect(amqp10.DescriptorSASLOutcome)
	if h := r.header(); h != header10AMQP {
		t.Fatalf("header %q after SASL", h)
	}
	r.expect(amqp10.DescriptorOpen)
	r.expect(amqp10.DescriptorBegin)
	r.expect(amqp10.DescriptorAttach)
	// The sender granted no credit beforehand: a transfer it sent anyway
	// is the broker's to refuse (with a detach) or take; either way the
	// connection must not have lost bytes. RabbitMQ grants credit with
	// its attach, and so does wiretap, so the transfer is taken.
	recv := dialRaw10(t, url, 1<<20)
	recv.attach(0, true, "/queues/pipelined", true)
	recv.flow(0, 0, 1, false)
	got, _, _, _ := recv.receive()
	checkDelivered(t, "pipelined", got, sent, "", "pipelined")
}
