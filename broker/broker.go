package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// RabbitMQ's defaults for connection.tune and limits.
const (
	DefaultFrameMax   = 131072
	DefaultChannelMax = 2047
	DefaultHeartbeat  = 60 * time.Second
	DefaultMaxMessage = 128 << 20
	// DefaultOutboundLimit is the bytes a connection may have waiting to
	// be written before its consumers are given nothing more.
	DefaultOutboundLimit = 4 << 20
)

// Config configures a Broker. The zero value is RabbitMQ's defaults: vhost
// "/", user guest/guest (from loopback only), frame_max 131072,
// channel_max 2047, heartbeat 60 s.
type Config struct {
	// FrameMax, ChannelMax and Heartbeat are what connection.tune offers
	// (0: RabbitMQ's defaults 131072, 2047, 60 s; a negative Heartbeat
	// offers none).
	FrameMax   uint32
	ChannelMax uint16
	Heartbeat  time.Duration
	// MaxMessage bounds a message body (0: RabbitMQ's 128 MiB).
	MaxMessage int64
	// MaxConnections bounds the open connections (0: no limit).
	MaxConnections int
	// MaxChannels bounds the channels a connection may open, on top of
	// channel_max (0: channel_max alone).
	MaxChannels int
	// DefaultMaxLength and DefaultMaxLengthBytes, when positive, bound
	// every queue declared without x-max-length / x-max-length-bytes, as
	// a RabbitMQ policy with max-length would (overflow drop-head unless
	// the queue says otherwise).
	DefaultMaxLength, DefaultMaxLengthBytes int64
	// MemoryHighWatermark is the message bytes held above which
	// publishers are blocked (0: 40% of physical memory, as RabbitMQ).
	MemoryHighWatermark int64
	// OutboundLimit is the bytes a connection may have waiting to be
	// written before its consumers stop being given messages (0:
	// DefaultOutboundLimit).
	OutboundLimit int
	// Users holds users, vhosts and permissions (nil: RabbitMQ's
	// defaults, guest/guest on "/").
	Users *auth.Store
	// Tap, when set, receives every connection's bytes exactly as read
	// from and written to its socket, one flow per connection. It is fed
	// through a bounded buffer (TapBuffer bytes, 0:
	// capture.DefaultDecoupledBuffer, a capture.Decoupled): a
	// slow tap loses bytes, reported to it as gaps, and never delays a
	// client.
	Tap       *capture.Serial
	TapBuffer int
	// TLS, when set, is used for connections accepted by ServeTLS; with
	// client certificates requested, EXTERNAL is offered.
	TLS *tls.Config
	// AMQP10AnonymousUser, when set, lets AMQP 1.0 clients log in with
	// SASL ANONYMOUS (or without SASL) as this user, as RabbitMQ 4's
	// anonymous_login_user does; empty (the default), ANONYMOUS is not
	// offered and AMQP 1.0 clients must log in with PLAIN.
	AMQP10AnonymousUser string
	// VerifyChecksums recomputes the AMQP 1.0 end-to-end checksums
	// (x-opt-crc-32, x-opt-adler-32 footer annotations) of every 1.0
	// message on arrival and on delivery to a 1.0 consumer, and reports
	// each mismatch (Broker.Checksums, a "broker" note on the tap);
	// ChecksumPublish ("crc-32" or "adler-32") adds that footer to 1.0
	// messages published without a footer. See amqp10_checksum.go.
	VerifyChecksums bool
	ChecksumPublish string
	// Log, when set, receives one line per notable event (a connection
	// refused, closed on an error).
	Log func(msg string)
}

// Broker is the embedded AMQP 0-9-1 broker. Its model (vhosts with their
// exchanges, queues and bindings) is shared by the connections; each
// connection runs its own state machine on its own goroutines.
type Broker struct {
	cfg        Config
	users      *auth.Store
	tap        *capture.Decoupled
	frameMax   uint32
	channelMax uint16
	heartbeat  uint16
	maxMessage int64
	outLimit   int
	node       string
	start      *amqp091.ConnectionStart
	// silentDelay is RabbitMQ's pause before closing a connection it does
	// not answer (auth.SilentCloseDelay; tests shorten it).
	silentDelay time.Duration
	startTLS    *amqp091.ConnectionStart
	// credit10 is the link credit AMQP 1.0 publishers are granted (0:
	// linkCredit; tests lower it).
	credit10 uint32
	// window10n is the session incoming-window AMQP 1.0 sessions are
	// announced (0: sessionWindow; tests lower it).
	window10n uint32
	// checks10 is what VerifyChecksums found (amqp10_checksum.go).
	checks10 checksumLog
	started  time.Time

	mu        sync.Mutex
	vhosts    map[string]*vhost
	conns     map[*conn]struct{}
	listeners []string

	mem memory
	// topo counts changes to exchanges, queues and bindings (each made
	// under its vhost's write lock); see TopologyVersion.
	topo    atomic.Uint64
	replyTo sync.Map // direct reply-to token -> *channel
	stats   counters
	closing atomic.Bool
	serveWG sync.WaitGroup
}

// counters are broker-wide totals since start.
type counters struct {
	published, delivered, acked, returned, confirmed, redelivered atomic.Uint64
	tapped                                                        atomic.Uint64 // bytes handed to the tap
}

// TapStats returns the bytes of traffic handed to the tap and, of those,
// the bytes its decoder was too far behind to take (shown as gaps, "N
// bytes not decoded: decoder behind"); both 0 without a tap.
func (b *Broker) TapStats() (handed, dropped int64) {
	if b.tap == nil {
		return 0, 0
	}
	return int64(b.stats.tapped.Load()), b.tap.Dropped()
}

// New returns a broker for cfg.
func New(cfg Config) (*Broker, error) {
	b := &Broker{
		cfg:         cfg,
		users:       cfg.Users,
		frameMax:    cfg.FrameMax,
		channelMax:  cfg.ChannelMax,
		maxMessage:  cfg.MaxMessage,
		outLimit:    cfg.OutboundLimit,
		vhosts:      make(map[string]*vhost),
		conns:       make(map[*conn]struct{}),
		started:     time.Now(),
		silentDelay: auth.SilentCloseDelay,
	}
	if b.users == nil {
		b.users = auth.NewDefaultStore()
	}
	if b.frameMax == 0 {
		b.frameMax = DefaultFrameMax
	}
	if b.frameMax < amqp091.FrameMinSize {
		return nil, errors.New("broker: frame_max below the minimum of 4096")
	}
	if b.channelMax == 0 {
		b.channelMax = DefaultChannelMax
	}
	switch {
	case cfg.Heartbeat == 0:
		b.heartbeat = uint16(DefaultHeartbeat / time.Second)
	case cfg.Heartbeat > 0:
		b.heartbeat = uint16(max(1, cfg.Heartbeat/time.Second))
	}
	if b.maxMessage <= 0 {
		b.maxMessage = DefaultMaxMessage
	}
	if b.outLimit <= 0 {
		b.outLimit = DefaultOutboundLimit
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	b.node = "wiretap@" + host
	b.mem.init(cfg.MemoryHighWatermark)
	if cfg.Tap != nil {
		b.tap = capture.NewDecoupled(cfg.Tap, cfg.TapBuffer)
	}
	for _, v := range b.users.VHosts() {
		b.addVHost(v.Name)
	}
	b.start = b.buildConnectionStart(false)
	b.startTLS = b.start
	if b.tlsClientAuth() {
		b.startTLS = b.buildConnectionStart(true)
	}
	return b, nil
}

// tlsClientAuth reports whether TLS clients present certificates (EXTERNAL
// is then offered).
func (b *Broker) tlsClientAuth() bool {
	return b.cfg.TLS != nil && b.cfg.TLS.ClientAuth >= tls.VerifyClientCertIfGiven
}

// UserStore returns the broker's users, vhosts and permissions.
func (b *Broker) UserStore() *auth.Store { return b.users }

// AddVHost creates a vhost with its default exchanges (and the vhost in the
// user store) if it does not exist.
func (b *Broker) AddVHost(name string) {
	if !b.users.VHostExists(name) {
		b.users.PutVHost(name, "", nil)
	}
	b.addVHost(name)
}

func (b *Broker) addVHost(name string) *vhost {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.vhosts[name]; ok {
		return v
	}
	v := newVHost(b, name)
	b.vhosts[name] = v
	b.topo.Add(1)
	return v
}

// TopologyVersion changes whenever anything a route depends on does: an
// exchange, queue or binding declared or deleted, a vhost added or
// removed. What is computed from the topology (RouteAnnotator's cached
// explanations) is valid while it stays the same; read it before
// computing, so that a change made meanwhile makes the result stale rather
// than wrongly current.
func (b *Broker) TopologyVersion() uint64 {
	return b.topo.Load() + b.users.Generation()<<40
}

// vhost returns the vhost named name, or nil.
func (b *Broker) vhost(name string) *vhost {
	if !b.users.VHostExists(name) {
		return nil
	}
	b.mu.Lock()
	v := b.vhosts[name]
	b.mu.Unlock()
	if v == nil {
		v = b.addVHost(name)
	}
	return v
}

func (b *Broker) addConn(c *conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cfg.MaxConnections > 0 && len(b.conns) >= b.cfg.MaxConnections {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Broker) removeConn(c *conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// Serve accepts connections on ln until ctx is done, then closes them and
// returns nil. Connections on a tls.Listener are TLS (AMQPS).
func (b *Broker) Serve(ctx context.Context, ln net.Listener) error {
	b.mu.Lock()
	b.listeners = append(b.listeners, ln.Addr().String())
	b.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	active := make(map[net.Conn]struct{})
	wg.Go(func() {
		<-ctx.Done()
		ln.Close()
	})
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				break
			}
			if b.cfg.Log != nil {
				b.cfg.Log("broker: accept: " + err.Error())
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond): // out of descriptors, say
			}
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		mu.Lock()
		active[nc] = struct{}{}
		mu.Unlock()
		wg.Go(func() {
			newConn(b, nc).serve()
			mu.Lock()
			delete(active, nc)
			mu.Unlock()
		})
	}
	mu.Lock()
	for nc := range active {
		nc.Close()
	}
	mu.Unlock()
	wg.Wait()
	return nil
}

// Close stops the tap after the connections are gone, and lets go of the
// messages still in queues (the queues stay, empty, for an export of
// definitions): call it once every Serve has returned.
func (b *Broker) Close() {
	if b.tap != nil {
		b.tap.Shutdown()
	}
	b.mu.Lock()
	vhosts := make([]*vhost, 0, len(b.vhosts))
	for _, v := range b.vhosts {
		vhosts = append(vhosts, v)
	}
	b.mu.Unlock()
	for _, v := range vhosts {
		v.mu.RLock()
		qs := make([]*queueState, 0, len(v.queues))
		for _, q := range v.queues {
			qs = append(qs, q)
		}
		v.mu.RUnlock()
		for _, q := range qs {
			q.mu.Lock()
			q.dropAll()
			q.mu.Unlock()
		}
	}
}

// MessagesHeld returns how many messages the broker holds references to
// (in queues, unacknowledged, in open transactions): 0 after Close when
// every reference taken was released.
func (b *Broker) MessagesHeld() int64 { return b.mem.messages.Load() }
