// Package state provides the read-only view of the embedded broker that
// its observers share: the management HTTP API (broker/mgmt), the TUI's
// broker panel and definitions export. The types are snapshots, copied out
// of the broker under its locks, so an observer never holds the broker's
// structures; names and meanings follow RabbitMQ's management API.
package state

import (
	"net/netip"
	"time"
)

// Overview is the broker as a whole (GET /api/overview).
type Overview struct {
	Product, Version string
	Node             string // RabbitMQ's node name; "wiretap@HOST"
	ClusterName      string
	Started          time.Time
	Connections      int
	Channels         int
	Exchanges        int
	Queues           int
	Consumers        int
	MessagesReady    int64
	MessagesUnacked  int64
	// Totals since start, for rates.
	Published, Delivered, Acked, Returned, Confirmed, Redelivered uint64
	// MemoryUsed is the bytes of message bodies and headers held;
	// MemoryLimit the high watermark (0: none). Blocked says publishers
	// are being blocked for it.
	MemoryUsed, MemoryLimit int64
	Blocked                 bool
	// Listeners are the AMQP listener addresses ("127.0.0.1:5672").
	Listeners []string
}

// Connection is one client connection (GET /api/connections).
type Connection struct {
	// Name is RabbitMQ's: "PEER -> LOCAL" ("127.0.0.1:53412 -> 127.0.0.1:5672").
	Name     string
	Flow     int // the tap's connection number (conn N in the unit list), 0 if untapped
	Peer     netip.AddrPort
	Local    netip.AddrPort
	Protocol string // "AMQP 0-9-1"
	User     string
	VHost    string
	// State is "starting", "tuning", "opening", "running", "flow" (a
	// publisher held back while a queue it publishes to drains),
	// "blocking", "blocked" or "closing", as RabbitMQ reports it.
	State            string
	Channels         int
	ChannelMax       uint16
	FrameMax         uint32
	Heartbeat        uint16 // seconds
	AuthMechanism    string
	ClientProperties map[string]any
	ConnectedAt      time.Time
	RecvOct, SendOct uint64
	RecvCnt, SendCnt uint64
	TLS              bool
}

// Channel is one channel of a connection (GET /api/channels).
type Channel struct {
	Connection     string // Connection.Name
	Number         uint16
	User, VHost    string
	Prefetch       uint16 // basic.qos global=false: per consumer
	GlobalPrefetch uint16 // basic.qos global=true: the channel as a whole
	Unacked        int
	Unconfirmed    int
	Consumers      int
	Confirm        bool
	Transactional  bool
	// State is "running", "flow" (blocked by the connection's flow
	// control) or "closing".
	State string
}

// Exchange is one exchange (GET /api/exchanges).
type Exchange struct {
	VHost, Name, Type string // Type: direct, fanout, topic, headers
	Durable           bool
	AutoDelete        bool
	Internal          bool
	Arguments         map[string]any
	PublishIn         uint64 // messages published to it
	PublishOut        uint64 // messages it routed to at least one destination
	// Latency of the messages published to it, wherever they went.
	PublishToDeliver, DeliverToAck Latency
}

// Latency is a latency histogram: how many were observed, how many fell in
// each of LatencyBuckets, and the 50th and 99th percentiles (upper bounds
// within about 12%; 0 when nothing was observed).
type Latency struct {
	Count    uint64
	Buckets  [6]uint64
	P50, P99 time.Duration
}

// LatencyBuckets name Latency.Buckets.
var LatencyBuckets = [6]string{"<=1ms", "<=5ms", "<=50ms", "<=500ms", "<=1000ms", ">1s"}

// Queue is one queue (GET /api/queues).
type Queue struct {
	VHost, Name string
	Durable     bool
	Exclusive   bool
	AutoDelete  bool
	Arguments   map[string]any
	// Owner is the Connection.Name of an exclusive queue's owner.
	Owner     string
	Ready     int   // messages ready for delivery
	Unacked   int   // delivered, not yet acknowledged
	Bytes     int64 // body bytes of ready and unacked messages
	Consumers int
	// Totals since the queue was declared, for rates.
	Published, Delivered, Acked, Redelivered uint64
	State                                    string // "running"
	// PublishToDeliver is the time from publish to first delivery;
	// DeliverToAck from delivery to basic.ack (manual acks only).
	PublishToDeliver, DeliverToAck Latency
	// SingleActiveConsumer names the consumer tag that is active, when
	// x-single-active-consumer is set.
	SingleActiveConsumer string
}

// Consumer is one consumer on a queue (GET /api/consumers).
type Consumer struct {
	VHost, Queue string
	Tag          string
	Connection   string
	Channel      uint16
	NoAck        bool
	Exclusive    bool
	Prefetch     uint16
	Priority     int
	Active       bool
	Arguments    map[string]any
}

// Binding is one binding (GET /api/bindings). Two bindings that differ
// only in Arguments are two bindings; PropertiesKey tells them apart as
// RabbitMQ's management API does.
type Binding struct {
	VHost           string
	Source          string // "" for the default exchange
	Destination     string
	DestinationType string // "queue" or "exchange"
	RoutingKey      string
	Arguments       map[string]any
	PropertiesKey   string
}

// User is one user (GET /api/users); the password only as its hash.
type User struct {
	Name             string
	PasswordHash     string // base64, RabbitMQ's format
	HashingAlgorithm string // "rabbit_password_hashing_sha256"
	Tags             []string
}

// VHost is one virtual host (GET /api/vhosts).
type VHost struct {
	Name        string
	Description string
	Tags        []string
}

// Permission is a user's permissions on a vhost (GET /api/permissions).
type Permission struct {
	User, VHost            string
	Configure, Write, Read string // regular expressions
}

// Source is what the broker offers its observers. Every method returns a
// fresh snapshot and is safe to call from any goroutine.
type Source interface {
	Overview() Overview
	Connections() []Connection
	Channels() []Channel
	Exchanges() []Exchange
	Queues() []Queue
	Consumers() []Consumer
	Bindings() []Binding
	Users() []User
	VHosts() []VHost
	Permissions() []Permission
	// CloseConnection closes the connection named name with
	// connection.close 320 CONNECTION_FORCED and reason, as RabbitMQ's
	// DELETE /api/connections/NAME does; false when there is none.
	CloseConnection(name, reason string) bool
}

// Route is a route explained: how a publish to Exchange with RoutingKey
// (and Headers) would be routed against the live topology, as route
// explain shows it.
type Route struct {
	VHost, Exchange, RoutingKey string
	// Lines say, exchange by exchange, which bindings matched and why,
	// which did not, and which alternate exchanges and
	// exchange-to-exchange bindings were followed.
	Lines []string
	// Queues are the queues it would reach, in routing order.
	Queues []string
	// Unroutable says it would reach no queue: a mandatory publish would
	// be returned (312 NO_ROUTE).
	Unroutable bool
}

// RouteExplainer explains routes; the embedded broker is one.
type RouteExplainer interface {
	// ExplainRoute explains a publish; headers are a headers exchange's
	// message headers as JSON-like values (strings, numbers, booleans).
	ExplainRoute(vhost, exchange, routingKey string, headers map[string]any) (Route, error)
}
