package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// AMQP 1.0 on the 0-9-1 listener: the protocol header chooses (AMQP 1.0
// §2.2 and §5.3.1). The connection, session and link state machines are
// here and in amqp10_link.go; the queues, exchanges and permissions are the
// ones 0-9-1 uses. Every frame is read and written with decode/amqp10.

// The protocol headers of AMQP 1.0 (§2.2) and of its SASL layer (§5.3.1).
const (
	header10AMQP = "AMQP\x00\x01\x00\x00"
	header10SASL = "AMQP\x03\x01\x00\x00"
)

// Error conditions of AMQP 1.0 (§2.8.15, §2.8.16, §2.8.17, §2.8.18).
const (
	condDecodeError           = "amqp:decode-error"
	condNotFound              = "amqp:not-found"
	condUnauthorized          = "amqp:unauthorized-access"
	condResourceLocked        = "amqp:resource-locked"
	condResourceDeleted       = "amqp:resource-deleted"
	condInvalidField          = "amqp:invalid-field"
	condNotImplemented        = "amqp:not-implemented"
	condInternalError         = "amqp:internal-error"
	condFramingError          = "amqp:connection:framing-error"
	condConnectionForced      = "amqp:connection:forced"
	condHandleInUse           = "amqp:session:handle-in-use"
	condWindowViolation       = "amqp:session:window-violation"
	condUnattachedHandle      = "amqp:session:unattached-handle"
	condTransferLimit         = "amqp:link:transfer-limit-exceeded"
	condMessageSizeExceeded   = "amqp:link:message-size-exceeded"
	condResourceLimitExceeded = "amqp:resource-limit-exceeded"
)

// error10 is an AMQP 1.0 error (§2.8.14) to close, end or detach with.
type error10 struct {
	cond string
	desc string
}

func (e *error10) Error() string { return "broker: " + e.cond + ": " + e.desc }

func err10(cond, desc string) *error10 { return &error10{cond: cond, desc: desc} }

// appendError10 encodes e as an error composite.
func appendError10(dst []byte, e *error10) []byte {
	return amqp10.AppendComposite(dst, amqp10.DescriptorError, amqp10.AppendSymbol(nil, e.cond), amqp10.AppendString(nil, e.desc))
}

// amqpErrorTo10 maps a 0-9-1 refusal of the shared model (a permission,
// a missing queue, an exclusive queue) to the AMQP 1.0 condition RabbitMQ 4
// uses for it.
func amqpErrorTo10(e *amqpError) *error10 {
	cond := condInternalError
	switch e.code {
	case 403:
		cond = condUnauthorized
	case 404:
		cond = condNotFound
	case 405:
		cond = condResourceLocked
	case 406:
		cond = condInvalidField
	}
	text := e.text
	if i := strings.Index(text, " - "); i >= 0 {
		text = text[i+3:] // "NOT_FOUND - no queue ..." without the 0-9-1 code name
	}
	return err10(cond, text)
}

// Limits of an AMQP 1.0 connection.
const (
	// maxLinksPerSession bounds the links (and so the per-link buffers)
	// of a session: handle-max announced in begin is one less.
	maxLinksPerSession = 256
	// sessionWindow is the incoming-window the broker announces: it is
	// re-announced in every flow, and link credit is what bounds a
	// publisher.
	sessionWindow = 1 << 30
	// linkCredit is the credit a publishing link is granted, topped up
	// when half is used.
	linkCredit = 1000
)

// grant10 is the credit a publishing link is granted: linkCredit unless
// a test set credit10.
func (b *Broker) grant10() uint32 {
	if b.credit10 > 0 {
		return b.credit10
	}
	return linkCredit
}

// window10 is the session incoming-window the broker announces:
// sessionWindow unless a test set window10.
func (b *Broker) window10() uint32 {
	if b.window10n > 0 {
		return b.window10n
	}
	return sessionWindow
}

// reader10 frames the bytes read from the socket. A frame is valid until
// the next call.
type reader10 struct {
	r        io.Reader
	nc       net.Conn
	buf      []byte
	beg, end int
	max      uint32        // the largest frame accepted: the broker's max-frame-size
	idle     time.Duration // read deadline per read; 0 keeps the current one
}

func (r *reader10) fill() error {
	if r.beg > 0 && r.beg == r.end {
		r.beg, r.end = 0, 0
	}
	if r.end == len(r.buf) {
		if r.beg > 0 {
			r.end = copy(r.buf, r.buf[r.beg:r.end])
			r.beg = 0
		} else {
			nb := make([]byte, len(r.buf)*2)
			copy(nb, r.buf[:r.end])
			r.buf = nb
		}
	}
	if r.idle > 0 {
		r.nc.SetReadDeadline(time.Now().Add(r.idle))
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// header reads a protocol header.
func (r *reader10) header() (string, error) {
	for r.end-r.beg < amqp10.ProtocolHeaderLen {
		if err := r.fill(); err != nil {
			return "", err
		}
	}
	h := string(r.buf[r.beg : r.beg+amqp10.ProtocolHeaderLen])
	r.beg += amqp10.ProtocolHeaderLen
	return h, nil
}

// buffered reports whether a whole frame is waiting in the buffer.
func (r *reader10) buffered() bool {
	if r.end-r.beg < amqp10.FrameHeaderLen {
		return false
	}
	return int(binary.BigEndian.Uint32(r.buf[r.beg:])) <= r.end-r.beg
}

// frame reads the next frame. A frame larger than max is a framing error
// found from its header alone: the broker never buffers more than max.
func (r *reader10) frame(f *amqp10.Frame) error {
	for {
		if r.end-r.beg >= amqp10.FrameHeaderLen {
			size, err := amqp10.ParseFrameHeader(r.buf[r.beg:r.end], 0)
			if err != nil {
				return err10(condFramingError, err.Error())
			}
			if size > r.max {
				return err10(condFramingError, "frame of "+strconv.FormatUint(uint64(size), 10)+
					" bytes is larger than the max-frame-size of "+strconv.FormatUint(uint64(r.max), 10))
			}
			if n, _ := amqp10.ParseFrame(r.buf[r.beg:r.end], f); n > 0 {
				r.beg += n
				return nil
			}
			if int(size) > len(r.buf)-r.beg && int(size) > len(r.buf)/2 {
				// Room for the whole frame: grow once to its size.
				nb := make([]byte, max(int(size), 2*len(r.buf)))
				r.end = copy(nb, r.buf[r.beg:r.end])
				r.beg = 0
				r.buf = nb
			}
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// conn10 is the AMQP 1.0 side of a connection; conn keeps the socket, the
// writer, the vhost and the user.
type conn10 struct {
	c       *conn
	rd      reader10
	comp    amqp10.Composite
	scratch routeScratch
	// msg and header are the publishing path's scratch, shared by the
	// links (reader goroutine): a link costs little more than its name.
	msg      amqp10.Message
	header   amqp10.Composite
	opened   bool
	maxFrame uint32 // ours, announced in open
	// peerMaxFrame is the peer's max-frame-size: transfers to it are
	// split to fit (min with ours, so frames stay bounded both ways).
	peerMaxFrame uint32
	peerIdle     time.Duration
	sessions     map[uint16]*session10 // by the client's channel
	stopIdle     chan struct{}
	// assembling is the bytes of messages being assembled over all links
	// (reader goroutine).
	assembling int64
	// rhdrs and rtable are routingHeaders' scratch (reader goroutine).
	rhdrs  []routeHeader10
	rtable []byte
	// disp is the disposition being gathered (reader goroutine): the
	// outcomes of consecutive deliveries of one session that ended alike
	// go out as one disposition, first..last, when the read batch ends
	// or before any other frame the reader sends.
	disp pendingDisposition
}

// pendingDisposition is a range of deliveries settled with one outcome.
type pendingDisposition struct {
	n           int // deliveries in the range; 0: none pending
	channel     uint16
	first, last uint32
	state       []byte
}

// settle10 records the broker's outcome of a client's delivery; it goes
// out with its neighbours (see conn10.disp).
func (cn *conn10) settle10(channel uint16, id uint32, state []byte) {
	d := &cn.disp
	if d.n > 0 && d.channel == channel && id == d.last+1 && string(state) == string(d.state) {
		d.last = id
		d.n++
		return
	}
	cn.flushDisposition()
	*d = pendingDisposition{n: 1, channel: channel, first: id, last: id, state: state}
}

// flushDisposition sends the pending disposition, if any.
func (cn *conn10) flushDisposition() {
	d := &cn.disp
	if d.n == 0 {
		return
	}
	c := cn.c
	c.wmu.Lock()
	if !c.wclosed {
		c.out = appendDisposition10(c.out, d.channel, d.first, d.last, d.state)
	}
	c.wmu.Unlock()
	d.n, d.state = 0, nil
	c.signal()
}

// endOfBatch runs when the reader has no whole frame left to handle: the
// gathered disposition goes out and the consumers the batch delivered to
// are woken once.
func (cn *conn10) endOfBatch() {
	cn.flushDisposition()
	cn.c.flushWakes()
}

// appendDisposition10 appends a frame with the broker's settled
// disposition of first..last (last left out, as null, for one delivery),
// encoded as AppendComposite would, without building its fields.
func appendDisposition10(dst []byte, channel uint16, first, last uint32, state []byte) []byte {
	if len(state) > 200 {
		lastField := amqp10.AppendNull(nil)
		if last != first {
			lastField = amqp10.AppendUint(nil, last)
		}
		return appendFrame10(dst, amqp10.FrameTypeAMQP, channel, amqp10.AppendComposite(nil, amqp10.DescriptorDisposition,
			amqp10.AppendBool(nil, roleReceiver), amqp10.AppendUint(nil, first), lastField, amqp10.AppendBool(nil, true), state))
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 2, amqp10.FrameTypeAMQP, byte(channel>>8), byte(channel),
		byte(amqp10.CodeDescribed), byte(amqp10.CodeSmallUlong), byte(amqp10.DescriptorDisposition), byte(amqp10.CodeList8), 0, 5)
	items := len(dst)
	dst = amqp10.AppendBool(dst, roleReceiver)
	dst = amqp10.AppendUint(dst, first)
	if last != first {
		dst = amqp10.AppendUint(dst, last)
	} else {
		dst = amqp10.AppendNull(dst)
	}
	dst = amqp10.AppendBool(dst, true)
	dst = append(dst, state...)
	dst[items-2] = byte(len(dst) - items + 1)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// run10 runs an AMQP 1.0 connection after its protocol header.
func (c *conn) run10(hdr [8]byte) error {
	cn := &conn10{c: c, sessions: make(map[uint16]*session10), maxFrame: c.b.frameMax, peerMaxFrame: c.b.frameMax}
	// What the 0-9-1 reader read past the protocol header is the 1.0
	// handler's to start with, all of it: a client may pipeline its whole
	// opening and its first messages (§2.4.1).
	pending := c.fr.Pending()
	cn.rd = reader10{r: tapReader{c}, nc: c.nc, max: cn.maxFrame, buf: make([]byte, max(8<<10, len(pending)))}
	cn.rd.end = copy(cn.rd.buf, pending)
	c.fr = nil
	c.amqp10.Store(true)
	c.setState(stateStarting)
	defer func() {
		if cn.stopIdle != nil {
			close(cn.stopIdle)
		}
		for _, s := range cn.sessions {
			for _, l := range s.links {
				l.dropAssembly()
			}
		}
	}()
	if string(hdr[:]) == header10SASL {
		ok, err := cn.sasl()
		if err != nil || !ok {
			return err
		}
		h, err := cn.rd.header()
		if err != nil {
			return err
		}
		if h != header10AMQP {
			c.send(func(out []byte) []byte { return append(out, header10AMQP...) })
			return errors.New("protocol header " + strconv.Quote(h) + " after SASL is not AMQP 1.0")
		}
	} else {
		// Without SASL only the anonymous user may connect; a client is
		// otherwise told, by the SASL header, that it must authenticate.
		if c.b.cfg.AMQP10AnonymousUser == "" {
			c.send(func(out []byte) []byte { return append(out, header10SASL...) })
			return errors.New("amqp 1.0 without SASL refused (ANONYMOUS is not enabled)")
		}
		c.user = c.b.cfg.AMQP10AnonymousUser
		c.mechanism = "none"
	}
	c.send(func(out []byte) []byte { return append(out, header10AMQP...) })
	c.setState(stateOpening)
	err := cn.loop()
	var e *error10
	if errors.As(err, &e) {
		return cn.closeWith(e)
	}
	return err
}

// sasl runs the SASL exchange (§5.3): mechanisms, init, outcome.
func (cn *conn10) sasl() (bool, error) {
	c := cn.c
	mechs := []string{auth.PLAIN}
	if c.b.cfg.AMQP10AnonymousUser != "" {
		mechs = append(mechs, "ANONYMOUS")
	}
	if c.tls != nil && c.b.tlsClientAuth() {
		mechs = append(mechs, auth.EXTERNAL)
	}
	c.send(func(out []byte) []byte {
		out = append(out, header10SASL...)
		return appendFrame10(out, amqp10.FrameTypeSASL, 0,
			amqp10.AppendComposite(nil, amqp10.DescriptorSASLMechanisms, amqp10.AppendSymbolArray(nil, mechs...)))
	})
	var f amqp10.Frame
	if err := cn.rd.frame(&f); err != nil {
		return false, err
	}
	b := f.Body
	if f.Type != amqp10.FrameTypeSASL || amqp10.ScanComposite(b, 0, &cn.comp) != nil || cn.comp.Descriptor != amqp10.DescriptorSASLInit {
		return false, errors.New("expected sasl-init, got another frame")
	}
	mech, _ := cn.comp.Bytes(b, 0)
	resp, _ := cn.comp.Bytes(b, 1)
	var user string
	var err error
	switch string(mech) {
	case "ANONYMOUS":
		if c.b.cfg.AMQP10AnonymousUser == "" {
			err = errors.New("auth: ANONYMOUS is not enabled")
		}
		user = c.b.cfg.AMQP10AnonymousUser
	case auth.PLAIN, auth.EXTERNAL:
		user, err = c.b.users.Authenticate(string(mech), resp, c.peer.Addr(), c.tls)
	default:
		err = errors.New("auth: unknown mechanism " + strconv.Quote(string(mech)))
	}
	code := byte(0) // ok (§5.3.3.6)
	if err != nil {
		code = 1 // auth
	}
	c.send(func(out []byte) []byte {
		return appendFrame10(out, amqp10.FrameTypeSASL, 0, amqp10.AppendComposite(nil, amqp10.DescriptorSASLOutcome, amqp10.AppendUbyte(nil, code)))
	})
	if err != nil {
		c.logf("authentication failed: ", err.Error())
		time.Sleep(c.b.silentDelay)
		return false, nil
	}
	c.user = user
	c.mechanism = string(mech)
	return true, nil
}

// appendFrame10 appends one frame of body.
func appendFrame10(dst []byte, typ uint8, channel uint16, body []byte) []byte {
	return amqp10.AppendFrame(dst, typ, channel, body)
}

// send10 writes one performative on channel (reader goroutine), after the
// disposition being gathered.
func (cn *conn10) send10(channel uint16, perf []byte) {
	cn.flushDisposition()
	cn.c.send(func(out []byte) []byte { return appendFrame10(out, amqp10.FrameTypeAMQP, channel, perf) })
}

// loop reads and handles frames until the connection ends.
func (cn *conn10) loop() error {
	var f amqp10.Frame
	for {
		if err := cn.rd.frame(&f); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				if !cn.opened {
					return errors.New("handshake timeout")
				}
				return err10(condResourceLimitExceeded, "local-idle-timeout expired")
			}
			return err
		}
		if err := cn.frame(&f); err != nil {
			return err
		}
		if !cn.rd.buffered() {
			cn.endOfBatch()
		}
		if reason := cn.c.closeRequested.Swap(nil); reason != nil {
			return err10(condConnectionForced, *reason)
		}
	}
}

// frame handles one frame.
func (cn *conn10) frame(f *amqp10.Frame) error {
	if f.Type != amqp10.FrameTypeAMQP {
		return err10(condFramingError, "frame type "+strconv.Itoa(int(f.Type))+" after the SASL layer")
	}
	if len(f.Body) == 0 {
		return nil // an empty frame keeps the connection alive (§2.4.5)
	}
	b := f.Body
	if err := amqp10.ScanComposite(b, 0, &cn.comp); err != nil {
		return err10(condDecodeError, "performative: "+err.Error())
	}
	comp := &cn.comp
	payload := b[comp.List.End:]
	if !cn.opened {
		if comp.Descriptor != amqp10.DescriptorOpen {
			return err10(condFramingError, "expected open")
		}
		return cn.open(b, comp)
	}
	switch comp.Descriptor {
	case amqp10.DescriptorOpen:
		return err10(condFramingError, "second open")
	case amqp10.DescriptorClose:
		cn.c.cleanup()
		cn.send10(0, amqp10.AppendComposite(nil, amqp10.DescriptorClose))
		return errCloseOkSent
	case amqp10.DescriptorBegin:
		return cn.begin(f.Channel, b, comp)
	}
	s := cn.sessions[f.Channel]
	if s == nil {
		return err10(condFramingError, "frame on channel "+strconv.Itoa(int(f.Channel))+", which has no session")
	}
	if s.ending {
		// The broker ended the session with an error: everything but
		// the client's end is dropped (§2.5.5).
		if comp.Descriptor == amqp10.DescriptorEnd {
			delete(cn.sessions, f.Channel)
		}
		return nil
	}
	var err error
	switch comp.Descriptor {
	case amqp10.DescriptorEnd:
		s.release()
		delete(cn.sessions, f.Channel)
		cn.send10(s.channel, amqp10.AppendComposite(nil, amqp10.DescriptorEnd))
	case amqp10.DescriptorAttach:
		err = s.attach(b, comp)
	case amqp10.DescriptorFlow:
		err = s.flow(b, comp)
	case amqp10.DescriptorTransfer:
		err = s.transfer(b, comp, payload)
	case amqp10.DescriptorDisposition:
		err = s.disposition(b, comp)
	case amqp10.DescriptorDetach:
		err = s.detach(b, comp)
	default:
		return err10(condDecodeError, "unknown performative 0x"+strconv.FormatUint(comp.Descriptor, 16))
	}
	var se *sessionError
	if errors.As(err, &se) {
		s.endWith(se.e)
		return nil
	}
	return err
}

// sessionError ends the session, not the connection.
type sessionError struct{ e *error10 }

func (e *sessionError) Error() string { return e.e.Error() }

// open handles open (§2.7.1): the hostname "vhost:NAME" selects the vhost
// as RabbitMQ 4 maps it, anything else the default "/".
func (cn *conn10) open(b []byte, comp *amqp10.Composite) error {
	c := cn.c
	if _, ok := comp.Field(0); !ok {
		return err10(condInvalidField, "open without a container-id")
	}
	if v, ok := comp.Uint(b, 2); ok {
		if v < amqp10.MinMaxFrameSize {
			return err10(condInvalidField, "max-frame-size "+strconv.FormatUint(v, 10)+" is below the minimum of 512")
		}
		cn.peerMaxFrame = uint32(min(v, uint64(cn.maxFrame)))
	}
	if v, ok := comp.Uint(b, 4); ok && v > 0 {
		cn.peerIdle = time.Duration(v) * time.Millisecond
	}
	host, _ := comp.Bytes(b, 1)
	name := "/"
	if h := string(host); strings.HasPrefix(h, "vhost:") {
		name = h[len("vhost:"):]
	}
	ourIdle := uint32(c.b.heartbeat) * 1000
	cn.opened = true
	// The open goes out first even when the connection is refused, then
	// close with the reason (§2.4.2).
	cn.send10(0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen,
		amqp10.AppendString(nil, c.b.node), amqp10.AppendNull(nil),
		amqp10.AppendUint(nil, cn.maxFrame), amqp10.AppendUshort(nil, c.b.channelMax),
		amqp10.AppendUint(nil, ourIdle)))
	vh := c.b.vhost(name)
	if vh == nil {
		return err10(condNotFound, "vhost "+name+" not found")
	}
	if err := c.b.users.CheckVHostAccess(c.user, name); err != nil {
		return err10(condUnauthorized, authError(err, 530).text)
	}
	// What the state view shows: the frame size the broker writes with,
	// the channel-max it announced, its idle-time-out in seconds.
	c.frameMax, c.channelMax, c.heartbeat = cn.peerMaxFrame, c.b.channelMax, uint16(ourIdle/1000)
	if !c.b.addConn(c) {
		return err10(condResourceLimitExceeded, "connection limit reached")
	}
	c.vh = vh
	c.setState(stateRunning)
	if ourIdle > 0 {
		// The client must send something within our idle-time-out; the
		// broker allows it twice, as 0-9-1 allows two missed heartbeats.
		cn.rd.idle = 2 * time.Duration(ourIdle) * time.Millisecond
	} else {
		c.nc.SetReadDeadline(time.Time{})
	}
	if cn.peerIdle > 0 {
		cn.stopIdle = make(chan struct{})
		go cn.keepAlive(cn.peerIdle/2, cn.stopIdle)
	}
	return nil
}

// keepAlive sends an empty frame when nothing was written for every, half
// the peer's idle-time-out (§2.4.5).
func (cn *conn10) keepAlive(every time.Duration, stop chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if time.Since(time.Unix(0, cn.c.lastWrite.Load())) >= every {
				cn.c.send(func(out []byte) []byte { return appendFrame10(out, amqp10.FrameTypeAMQP, 0, nil) })
			}
		}
	}
}

// closeWith closes the connection with an error (§2.4.3) and waits,
// bounded, for the client's close.
func (cn *conn10) closeWith(e *error10) error {
	c := cn.c
	c.logf("closing: ", e.cond, " ", e.desc)
	c.setState(stateClosing)
	if !cn.opened {
		// Before open the peer expects an open first (§2.4.2).
		cn.send10(0, amqp10.AppendComposite(nil, amqp10.DescriptorOpen, amqp10.AppendString(nil, c.b.node)))
		cn.opened = true
	}
	cn.send10(0, amqp10.AppendComposite(nil, amqp10.DescriptorClose, appendError10(nil, e)))
	c.cleanup()
	c.nc.SetReadDeadline(time.Now().Add(closeTimeout))
	cn.rd.idle = 0
	var f amqp10.Frame
	for {
		if err := cn.rd.frame(&f); err != nil {
			return nil
		}
		if f.Type == amqp10.FrameTypeAMQP && len(f.Body) > 0 && amqp10.ScanComposite(f.Body, 0, &cn.comp) == nil &&
			cn.comp.Descriptor == amqp10.DescriptorClose {
			return nil
		}
	}
}

// appendTransferPerf appends a transfer performative without building
// values (the delivery path's frame): handle, delivery-id, a four-byte
// delivery-tag, message-format 0, settled and more on the first frame of
// a delivery; handle and more on the others (§2.7.5).
func appendTransferPerf(dst []byte, handle, id uint32, first, settled, more bool) []byte {
	dst = append(dst, 0x00, byte(amqp10.CodeSmallUlong), byte(amqp10.DescriptorTransfer))
	if first {
		dst = append(dst, byte(amqp10.CodeList8), 20, 6, byte(amqp10.CodeUint))
		dst = binary.BigEndian.AppendUint32(dst, handle)
		dst = append(dst, byte(amqp10.CodeUint))
		dst = binary.BigEndian.AppendUint32(dst, id)
		dst = append(dst, byte(amqp10.CodeVbin8), 4)
		dst = binary.BigEndian.AppendUint32(dst, id)
		dst = append(dst, byte(amqp10.CodeUint0), boolCode(settled), boolCode(more))
		return dst
	}
	dst = append(dst, byte(amqp10.CodeList8), 11, 6, byte(amqp10.CodeUint))
	dst = binary.BigEndian.AppendUint32(dst, handle)
	return append(dst, byte(amqp10.CodeNull), byte(amqp10.CodeNull), byte(amqp10.CodeNull), byte(amqp10.CodeNull), boolCode(more))
}

func boolCode(v bool) byte {
	if v {
		return byte(amqp10.CodeTrue)
	}
	return byte(amqp10.CodeFalse)
}

// transferPerfMax is the longest performative appendTransferPerf writes.
const transferPerfMax = 3 + 3 + 19

// appendTransfers appends the frames of one delivery whose payload is
// the concatenation of parts, each frame at most maxFrame bytes. It
// returns the frames written.
func appendTransfers(dst []byte, channel uint16, handle, id uint32, settled bool, parts [3][]byte, maxFrame uint32) ([]byte, uint32) {
	room := int(maxFrame) - amqp10.FrameHeaderLen - transferPerfMax
	left := len(parts[0]) + len(parts[1]) + len(parts[2])
	p := 0
	frames := uint32(0)
	for first := true; first || left > 0; first = false {
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0, 2, amqp10.FrameTypeAMQP, byte(channel>>8), byte(channel))
		n := min(left, room)
		dst = appendTransferPerf(dst, handle, id, first, settled, left > n)
		left -= n
		for n > 0 {
			for len(parts[p]) == 0 {
				p++
			}
			k := min(n, len(parts[p]))
			dst = append(dst, parts[p][:k]...)
			parts[p] = parts[p][k:]
			n -= k
		}
		binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start))
		frames++
	}
	return dst, frames
}
