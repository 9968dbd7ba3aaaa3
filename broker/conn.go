package broker

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Connection states as RabbitMQ's management API names them.
const (
	stateStarting = "starting"
	stateTuning   = "tuning"
	stateOpening  = "opening"
	stateRunning  = "running"
	stateBlocked  = "blocked"
	stateFlow     = "flow"
	stateClosing  = "closing"
)

// handshakeTimeout is RabbitMQ's handshake_timeout: the protocol header and
// the negotiation up to connection.open must be done within it.
const handshakeTimeout = 10 * time.Second

// closeTimeout bounds the wait for connection.close-ok after the broker
// closed a connection on an error.
const closeTimeout = 3 * time.Second

// conn is one client connection. Its reader goroutine runs the connection
// and channel state machines; its writer goroutine writes what they and
// the queues delivering to its consumers append to out.
type conn struct {
	b     *Broker
	admin bool // applies definitions: every permission granted
	nc    net.Conn
	name  string
	peer  netip.AddrPort
	local netip.AddrPort
	tls   *tls.ConnectionState
	flow  *capture.DecoupledFlow
	since time.Time

	fr *amqp091.FrameReader
	md amqp091.MethodDecoder
	// wakeLater holds the connections this one's reader delivered to
	// during the current read batch: their writers are woken once, at
	// the end of the batch (see [conn.wakeAfterBatch]), so a burst of
	// publishes costs the consumer one wake-up and one write, not one per
	// message. Only the reader's goroutine touches it.
	wakeLater []*conn
	// flowQueues are the queues this read batch published to whose
	// backlog is past flowHigh: the reader waits for them at the end of
	// the batch (see [conn.awaitFlow]). Reader goroutine only.
	flowQueues []*queueState
	// pubAllowed is the last exchange the user was allowed to publish
	// to, at user store generation pubAllowedGen (checkPublish); reader
	// goroutine only.
	pubAllowed    string
	pubAllowedGen uint64
	pubAllowedSet bool
	// lastCh is the channel of the last frame (see channelFrame); reader
	// goroutine only, cleared when the channel is removed.
	lastCh *channel
	// batched counts the bytes of frames handled in this read batch
	// (see maxBatch); reader goroutine only.
	batched int
	// readAt is when the last read from the socket returned, on
	// latency.Now's clock: the time the frames it read arrived, and the
	// publish time of the messages they complete. Reader goroutine only.
	readAt    int64
	flowWake  chan struct{}
	flowTimer *time.Timer

	// Negotiated in connection.tune-ok and fixed after.
	frameMax       uint32
	channelMax     uint16
	heartbeat      uint16
	mechanism      string
	user           string
	vh             *vhost
	clientProps    []byte // copy of start-ok's client-properties table
	cancelNotify   bool   // capabilities.consumer_cancel_notify
	authFailClose  bool   // capabilities.authentication_failure_close
	blockedNotify  bool   // capabilities.connection.blocked
	blockedSent    bool
	stateName      atomic.Value // string
	closingAt      time.Time    // the broker sent connection.close
	cleaned        bool         // cleanup ran
	closeRequested atomic.Pointer[string]

	// channels is written by the reader goroutine only; mu guards it for
	// the read-only view.
	mu       sync.Mutex
	channels map[uint16]*channel

	// The writer's side.
	wmu       sync.Mutex
	out       []byte
	spare     []byte
	wclosed   bool
	overLimit bool // a delivery saw out past the limit; resume on drain
	wake      chan struct{}
	wdone     chan struct{}
	lastWrite atomic.Int64 // unix nanos
	// hb is the heartbeat for the writer, which reads it while the reader
	// negotiates it.
	hb atomic.Uint32

	// amqp10 says the client speaks AMQP 1.0 (set before the connection
	// is in the broker's list, read by the state view).
	amqp10 atomic.Bool

	recvOct, sendOct atomic.Uint64
	recvCnt, sendCnt atomic.Uint64
}

// tapReader feeds the tap every byte read from the socket, exactly as read.
type tapReader struct{ c *conn }

func (r tapReader) Read(p []byte) (int, error) {
	c := r.c
	if c.heartbeat > 0 {
		// Two missed heartbeats close the connection (RabbitMQ: "missed
		// heartbeats from client").
		c.nc.SetReadDeadline(time.Now().Add(2 * time.Duration(c.heartbeat) * time.Second))
	}
	n, err := c.nc.Read(p)
	if n > 0 {
		c.readAt = latency.Now()
		c.recvOct.Add(uint64(n))
		c.recvCnt.Add(1)
		if c.flow != nil {
			c.b.tap.Data(c.flow, true, p[:n])
			c.b.stats.tapped.Add(uint64(n))
		}
	}
	return n, err
}

func newConn(b *Broker, nc net.Conn) *conn {
	c := &conn{
		b:        b,
		nc:       nc,
		peer:     addrPort(nc.RemoteAddr()),
		local:    addrPort(nc.LocalAddr()),
		since:    time.Now(),
		channels: make(map[uint16]*channel),
		wake:     make(chan struct{}, 1),
		wdone:    make(chan struct{}),
		frameMax: amqp091.FrameMinSize,
	}
	c.name = c.peer.String() + " -> " + c.local.String()
	c.stateName.Store(stateStarting)
	if tc, ok := nc.(*tls.Conn); ok {
		st := tc.ConnectionState()
		c.tls = &st
	}
	return c
}

func addrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// protocol names the connection's protocol as RabbitMQ's management API
// does.
func (c *conn) protocol() string {
	if c.amqp10.Load() {
		return "AMQP 1.0"
	}
	return "AMQP 0-9-1"
}

func (c *conn) state() string { return c.stateName.Load().(string) }

func (c *conn) setState(s string) { c.stateName.Store(s) }

func (c *conn) logf(parts ...string) {
	if c.b.cfg.Log == nil {
		return
	}
	var sb bytes.Buffer
	sb.WriteString("broker: connection ")
	sb.WriteString(c.name)
	sb.WriteString(": ")
	for _, p := range parts {
		sb.WriteString(p)
	}
	c.b.cfg.Log(sb.String())
}

// serve runs the connection to its end. The writer writes what is still
// queued (a close-ok, the protocol header a bad client is answered with)
// before the socket closes.
func (c *conn) serve() {
	defer c.nc.Close()
	if c.b.tap != nil {
		c.flow = c.b.tap.NewFlow(c.peer, c.local, c.since)
		defer c.b.tap.Close(c.flow)
	}
	go c.writer()
	err := c.run()
	c.flushWakes()
	if err == errCloseOkSent {
		c.awaitClientClose()
	} else if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && err != errClientClosed {
		c.logf(err.Error())
	}
	c.cleanup()
	c.wmu.Lock()
	c.wclosed = true
	c.wmu.Unlock()
	c.signal()
	<-c.wdone
}

func (c *conn) run() error {
	if tc, ok := c.nc.(*tls.Conn); ok {
		c.nc.SetDeadline(time.Now().Add(handshakeTimeout))
		if err := tc.Handshake(); err != nil {
			return errors.New("TLS handshake: " + err.Error())
		}
		st := tc.ConnectionState()
		c.tls = &st
	}
	c.nc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	c.fr = amqp091.NewFrameReader(tapReader{c})
	c.fr.MaxFrameSize = int(c.b.frameMax)
	c.fr.MaxBuffer = maxReadBuffer
	hdr, err := c.fr.ReadProtocolHeader()
	if err != nil {
		return err
	}
	if string(hdr[:]) == header10AMQP || string(hdr[:]) == header10SASL {
		return c.run10(hdr)
	}
	if string(hdr[:]) != amqp091.ProtocolHeader {
		// RabbitMQ answers any other header with the one it speaks.
		c.send(func(out []byte) []byte { return append(out, amqp091.ProtocolHeader...) })
		return errors.New("protocol header " + strconv.Quote(string(hdr[:])) + " is not AMQP 0-9-1")
	}
	c.send(func(out []byte) []byte { return amqp091.AppendMethodFrame(out, 0, c.connectionStart()) })
	// The negotiation as a whole is bounded by the handshake timeout;
	// after connection.open the heartbeat bounds each read (open lifts
	// the deadline when there is none).
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var fe *amqp091.FormatError
			if errors.As(err, &fe) {
				return c.hardError(c.frameError(fe))
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				if reason := c.closeRequested.Swap(nil); reason != nil {
					return c.hardError(errorf(amqp091.ConnectionForced, *reason))
				}
				if c.vh == nil {
					return errors.New("handshake timeout")
				}
				return errors.New("missed heartbeats from client, timeout: " + strconv.Itoa(int(c.heartbeat)) + "s")
			}
			return err
		}
		if err := c.frame(f); err != nil {
			if ae, ok := err.(*amqpError); ok {
				return c.hardError(ae)
			}
			return err
		}
		c.batched += len(f.Payload) + amqp091.FrameOverhead
		if c.batched >= maxBatch || !c.fr.BufferedFrame() {
			c.batched = 0
			c.endOfBatch()
		}
		if reason := c.closeRequested.Swap(nil); reason != nil {
			return c.hardError(errorf(amqp091.ConnectionForced, *reason))
		}
	}
}

// maxReadBuffer is how far a busy connection's read buffer grows (from
// amqp091.DefaultReadBuffer): a publisher of 4 KiB messages is read 60 at
// a time rather than 15, with a quarter of the reads. A connection whose
// reads are small again goes back to the default. A read batch still ends
// after maxBatch bytes of frames however much was read (confirms sent,
// writers woken, flow control's wait), so that flow control holds the
// backlog within a batch of flowHigh as before.
const (
	maxReadBuffer = 256 << 10
	maxBatch      = amqp091.DefaultReadBuffer
)

// clientCloseTimeout is how long the broker waits for a client to close
// its socket after close-ok (RabbitMQ's CLOSING_TIMEOUT is 30 s).
const clientCloseTimeout = 30 * time.Second

// awaitClientClose reads and drops what the client still sends until it
// closes the socket, or clientCloseTimeout; the writer meanwhile writes
// close-ok.
func (c *conn) awaitClientClose() {
	c.nc.SetReadDeadline(time.Now().Add(clientCloseTimeout))
	var buf [512]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			return
		}
	}
}

// frameError turns a framing error into RabbitMQ's 501 FRAME_ERROR, worded
// as rabbit_reader words it.
func (c *conn) frameError(fe *amqp091.FormatError) *amqpError {
	h, ok := amqp091.PeekFrameHead(c.fr.Pending())
	if !ok {
		return errorf(501, fe.Msg)
	}
	if uint64(h.Size) > uint64(c.frameMaxLimit()) {
		return errorf(501, frameOctets(uint8(h.Type), nil)+": {frame_too_large,"+strconv.FormatUint(uint64(h.Size), 10)+
			","+strconv.Itoa(int(c.frameMaxLimit())-amqp091.FrameOverhead)+"}")
	}
	p := c.fr.Pending()[amqp091.FrameHeaderSize:]
	if uint64(len(p)) > uint64(h.Size) {
		return errorf(501, frameOctets(uint8(h.Type), p[:h.Size])+": {invalid_frame_end_marker,"+strconv.Itoa(int(p[h.Size]))+"}")
	}
	return errorf(501, fe.Msg)
}

// frameMaxLimit is the largest payload accepted: RabbitMQ allows a frame
// of frame_max bytes of payload (the overhead is its fudge), and reports
// the limit as frame_max less the overhead.
func (c *conn) frameMaxLimit() uint32 {
	if c.frameMax == 0 {
		return c.b.frameMax
	}
	return c.frameMax
}

// endOfBatch runs when no whole frame is left in the read buffer: what was
// held back for coalescing (publisher confirms) goes out.
func (c *conn) endOfBatch() {
	for _, ch := range c.channels {
		if ch.confirmPending {
			ch.flushConfirms()
		}
	}
	c.flushWakes()
	if len(c.flowQueues) > 0 {
		c.awaitFlow()
	}
}

// maxWakeLater bounds the connections a read batch wakes at its end; past
// it, they are woken at once (a fanout to thousands of connections gains
// nothing from waiting, and the list stays small to scan).
const maxWakeLater = 32

// wakeAfterBatch wakes t's writer when this connection's read batch ends
// rather than now. Called on c's reader goroutine only.
func (c *conn) wakeAfterBatch(t *conn) {
	for _, w := range c.wakeLater {
		if w == t {
			return
		}
	}
	if len(c.wakeLater) == maxWakeLater {
		t.signal()
		return
	}
	c.wakeLater = append(c.wakeLater, t)
}

// flushWakes wakes the writers deliveries of this batch went to.
func (c *conn) flushWakes() {
	for i, t := range c.wakeLater {
		t.signal()
		c.wakeLater[i] = nil
	}
	c.wakeLater = c.wakeLater[:0]
}

// frame handles one frame read from the client.
func (c *conn) frame(f amqp091.Frame) error {
	if !c.closingAt.IsZero() {
		// After connection.close the broker discards everything but
		// close and close-ok (spec §2.2.4 of the 0-9-1 specification).
		if f.Type == amqp091.FrameMethod && f.Channel == 0 {
			m, err := c.md.Decode(f.Payload)
			if err == nil {
				switch m.(type) {
				case *amqp091.ConnectionCloseOk:
					return io.EOF
				case *amqp091.ConnectionClose:
					c.send(func(out []byte) []byte {
						return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionCloseOk{})
					})
					return io.EOF
				}
			}
		}
		if time.Since(c.closingAt) > closeTimeout {
			return io.EOF
		}
		return nil
	}
	switch f.Type {
	case amqp091.FrameHeartbeat:
		if len(f.Payload) > 0 {
			return errorf(501, frameOctets(8, f.Payload)+": unknown_frame")
		}
		if f.Channel != 0 {
			return errorf(505, "type 8, all octets = <<>>")
		}
		return nil
	case amqp091.FrameMethod:
		m, err := c.md.Decode(f.Payload)
		if err != nil {
			return c.methodDecodeError(f.Payload, err)
		}
		if f.Channel == 0 {
			return c.connectionMethod(m)
		}
		if c.vh == nil {
			return errorf(504, "expected 'connection.open'")
		}
		return c.channelFrame(f.Channel, m, f)
	case amqp091.FrameHeader, amqp091.FrameBody:
		if f.Channel == 0 || c.vh == nil {
			return errorf(505, frameOctets(uint8(f.Type), f.Payload))
		}
		return c.channelFrame(f.Channel, nil, f)
	}
	return errorf(501, frameOctets(uint8(f.Type), f.Payload)+": unknown_frame")
}

func (c *conn) methodDecodeError(p []byte, err error) error {
	if len(p) < 4 {
		return errorf(501, frameOctets(1, p)+": unknown_frame")
	}
	class := uint16(p[0])<<8 | uint16(p[1])
	id := uint16(p[2])<<8 | uint16(p[3])
	info := amqp091.LookupMethod(class, id)
	if info == nil || errors.Is(err, amqp091.ErrTruncated) == false {
		// RabbitMQ's reader crashes on an unknown method or a field
		// table it cannot parse, and the socket closes without a word.
		c.logf("closing: cannot decode method (class ", strconv.Itoa(int(class)), ", method ", strconv.Itoa(int(id)), "): ", err.Error())
		return errClientClosed
	}
	return &amqpError{code: 501, text: "FRAME_ERROR - cannot decode " + erlangBinary(p[4:]), classID: class, methodID: id}
}

// hardError closes the connection with connection.close as RabbitMQ does
// on a hard error, then waits (bounded) for close-ok.
func (c *conn) hardError(e *amqpError) error {
	c.logf("closing: ", strconv.Itoa(int(e.code)), " ", e.text)
	c.setState(stateClosing)
	c.send(func(out []byte) []byte {
		return amqp091.AppendMethodFrame(out, 0, &amqp091.ConnectionClose{
			ReplyCode: e.code, ReplyText: replyText(e.text), ClassID: e.classID, MethodID: e.methodID})
	})
	c.closingAt = time.Now()
	c.nc.SetReadDeadline(c.closingAt.Add(closeTimeout))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			return nil
		}
		if c.frame(f) != nil {
			return nil
		}
	}
}

// send appends frames built by fn to the outgoing buffer.
func (c *conn) send(fn func(out []byte) []byte) {
	c.wmu.Lock()
	if !c.wclosed {
		c.out = fn(c.out)
	}
	c.wmu.Unlock()
	c.signal()
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// outLimit is how much a connection may have waiting to be written before
// its consumers stop being given messages (they stay in their queues).
func (c *conn) outLimit() int { return c.b.outLimit }

// roomToWrite reports whether a consumer on c may be given another
// message: what waits to be written is under outLimit. When it is not, the
// writer resumes the connection's consumers once it has drained.
func (c *conn) roomToWrite() bool {
	c.wmu.Lock()
	full := len(c.out) >= c.outLimit()
	if full {
		c.overLimit = true
	}
	c.wmu.Unlock()
	return !full
}

// writer writes what is appended to out, swapping buffers so appending
// never waits for the socket, and sends heartbeats when idle.
func (c *conn) writer() {
	defer close(c.wdone)
	var tick *time.Ticker
	var tickC <-chan time.Time
	var idle *time.Timer
	for {
		c.wmu.Lock()
		buf := c.out
		c.out = c.spare[:0]
		closed := c.wclosed
		resume := c.overLimit && len(buf) > 0
		c.overLimit = false
		c.wmu.Unlock()
		if len(buf) > 0 {
			if c.flow != nil {
				c.b.tap.Data(c.flow, false, buf)
				c.b.stats.tapped.Add(uint64(len(buf)))
			}
			c.nc.SetWriteDeadline(time.Now().Add(30 * time.Second))
			_, err := c.nc.Write(buf)
			c.sendOct.Add(uint64(len(buf)))
			c.sendCnt.Add(1)
			c.lastWrite.Store(time.Now().UnixNano())
			if err != nil {
				c.nc.Close()
				c.wmu.Lock()
				c.wclosed = true
				c.out = nil
				c.wmu.Unlock()
				return
			}
		}
		c.spare = buf[:0]
		if resume {
			c.resumeConsumers()
		}
		if closed {
			if len(buf) > 0 {
				continue // what was appended before the close
			}
			return
		}
		// What was appended during the write is taken when its wake
		// comes, not now: a reader delivering a batch wakes this writer
		// at the batch's end (wakeAfterBatch), so a write made mid-batch
		// goes on to wait for the rest of it rather than write it in
		// pieces, each waking the client.

		hb := time.Duration(c.hb.Load()) * time.Second
		if tickC == nil && hb > 0 {
			tick = time.NewTicker(hb / 2)
			defer tick.Stop()
			tickC = tick.C
		}
		// The buffers a burst grew are kept while traffic flows (the
		// writer goes idle between read batches, and growing them again
		// for every batch cost a tenth of the broker's time with 4 KiB
		// bodies) and given back once the connection has been quiet for
		// idleRelease.
		var idleC <-chan time.Time
		if cap(c.spare) > keepIdle {
			if idle == nil {
				idle = time.NewTimer(idleRelease)
				defer idle.Stop()
			} else {
				idle.Reset(idleRelease)
			}
			idleC = idle.C
		}
		select {
		case <-c.wake:
		case <-tickC:
			if time.Since(time.Unix(0, c.lastWrite.Load())) >= hb/2 {
				c.send(amqp091.AppendHeartbeatFrame)
			}
		case <-idleC:
			c.spare = nil
			c.wmu.Lock()
			if len(c.out) == 0 && cap(c.out) > keepIdle {
				c.out = nil
			}
			c.wmu.Unlock()
		}
	}
}

// keepIdle is the capacity of outgoing buffer a quiet connection keeps;
// idleRelease is how long it must be quiet to give back a larger one.
const (
	keepIdle    = 256 << 10
	idleRelease = time.Second
)

// resumeConsumers gives the queues of this connection's consumers a chance
// to deliver again after the outgoing buffer drained.
func (c *conn) resumeConsumers() {
	c.mu.Lock()
	var qs []*queueState
	for _, ch := range c.channels {
		ch.mu.Lock()
		for _, cons := range ch.consumers {
			qs = append(qs, cons.q)
		}
		ch.mu.Unlock()
	}
	c.mu.Unlock()
	for _, q := range qs {
		q.mu.Lock()
		q.dispatch()
		q.mu.Unlock()
	}
}

// cleanup releases what the connection held: its channels (unacked
// messages requeued, consumers cancelled) and its exclusive queues.
func (c *conn) cleanup() {
	if c.cleaned {
		return
	}
	c.cleaned = true
	c.setState(stateClosing)
	c.mu.Lock()
	chs := make([]*channel, 0, len(c.channels))
	for _, ch := range c.channels {
		chs = append(chs, ch)
	}
	c.mu.Unlock()
	for _, ch := range chs {
		ch.release()
	}
	c.mu.Lock()
	clear(c.channels)
	c.mu.Unlock()
	if c.vh != nil {
		c.vh.deleteExclusive(c)
	}
	c.b.removeConn(c)
}
