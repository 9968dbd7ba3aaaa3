package broker

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The broker is the state.Source of its observers.
var _ state.Source = (*Broker)(nil)

func tableMap(t amqp091.Table) map[string]any {
	if len(t) == 0 {
		return map[string]any{}
	}
	m, err := t.Map()
	if err != nil {
		return map[string]any{}
	}
	return m
}

func (b *Broker) vhostList() []*vhost {
	b.mu.Lock()
	vs := make([]*vhost, 0, len(b.vhosts))
	for _, v := range b.vhosts {
		vs = append(vs, v)
	}
	b.mu.Unlock()
	sort.Slice(vs, func(i, j int) bool { return vs[i].name < vs[j].name })
	return vs
}

func (b *Broker) connList() []*conn {
	b.mu.Lock()
	cs := make([]*conn, 0, len(b.conns))
	for c := range b.conns {
		cs = append(cs, c)
	}
	b.mu.Unlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].since.Before(cs[j].since) })
	return cs
}

// Overview implements state.Source.
func (b *Broker) Overview() state.Overview {
	o := state.Overview{
		Product: announcedProduct, Version: announcedVersion, Node: b.node, ClusterName: b.node,
		Started: b.started, MemoryUsed: b.mem.used.Load(), MemoryLimit: b.mem.limit.Load(), Blocked: b.mem.blocked.Load(),
		Published: b.stats.published.Load(), Delivered: b.stats.delivered.Load(), Acked: b.stats.acked.Load(),
		Returned: b.stats.returned.Load(), Confirmed: b.stats.confirmed.Load(), Redelivered: b.stats.redelivered.Load(),
	}
	b.mu.Lock()
	o.Listeners = append([]string(nil), b.listeners...)
	b.mu.Unlock()
	for _, c := range b.connList() {
		o.Connections++
		c.mu.Lock()
		o.Channels += len(c.channels)
		c.mu.Unlock()
	}
	for _, q := range b.Queues() {
		o.Queues++
		o.Consumers += q.Consumers
		o.MessagesReady += int64(q.Ready)
		o.MessagesUnacked += int64(q.Unacked)
	}
	for _, v := range b.vhostList() {
		v.mu.RLock()
		o.Exchanges += len(v.exchanges)
		v.mu.RUnlock()
	}
	return o
}

// Connections implements state.Source.
func (b *Broker) Connections() []state.Connection {
	var out []state.Connection
	for _, c := range b.connList() {
		c.mu.Lock()
		n := len(c.channels)
		c.mu.Unlock()
		sc := state.Connection{
			Name: c.name, Peer: c.peer, Local: c.local, Protocol: c.protocol(), User: c.user,
			State: c.state(), Channels: n, ChannelMax: c.channelMax, FrameMax: c.frameMax, Heartbeat: c.heartbeat,
			AuthMechanism: c.mechanism, ClientProperties: tableMap(c.clientProps), ConnectedAt: c.since,
			RecvOct: c.recvOct.Load(), SendOct: c.sendOct.Load(), RecvCnt: c.recvCnt.Load(), SendCnt: c.sendCnt.Load(),
			TLS: c.tls != nil,
		}
		if c.vh != nil {
			sc.VHost = c.vh.name
		}
		if c.flow != nil {
			sc.Flow = c.flow.Flow().ID
		}
		out = append(out, sc)
	}
	return out
}

// Channels implements state.Source.
func (b *Broker) Channels() []state.Channel {
	var out []state.Channel
	for _, c := range b.connList() {
		c.mu.Lock()
		chs := make([]*channel, 0, len(c.channels))
		for _, ch := range c.channels {
			chs = append(chs, ch)
		}
		c.mu.Unlock()
		sort.Slice(chs, func(i, j int) bool { return chs[i].id < chs[j].id })
		for _, ch := range chs {
			ch.mu.Lock()
			sc := state.Channel{
				Connection: c.name, Number: ch.id, User: c.user, Prefetch: ch.prefetch,
				GlobalPrefetch: ch.globalPrefetch, Unacked: ch.unackedLive, Consumers: len(ch.consumers),
				Confirm: ch.confirm, Transactional: ch.tx, State: channelState(c),
			}
			if ch.closing {
				sc.State = "closing"
			}
			ch.mu.Unlock()
			if c.vh != nil {
				sc.VHost = c.vh.name
			}
			out = append(out, sc)
		}
	}
	return out
}

// Exchanges implements state.Source.
func (b *Broker) Exchanges() []state.Exchange {
	var out []state.Exchange
	for _, v := range b.vhostList() {
		v.mu.RLock()
		for _, x := range v.exchanges {
			x.routeMu.Lock()
			in, o := x.publishIn, x.publishOut
			x.routeMu.Unlock()
			lat := &x.lat
			if x.name == "" {
				lat = &v.defaultLat
			}
			out = append(out, state.Exchange{
				VHost: v.name, Name: x.name, Type: x.typ, Durable: x.durable, AutoDelete: x.autoDelete,
				Internal: x.internal, Arguments: tableMap(x.args), PublishIn: in, PublishOut: o,
				PublishToDeliver: latencyOf(&lat.PublishToDeliver), DeliverToAck: latencyOf(&lat.DeliverToAck),
			})
		}
		v.mu.RUnlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].VHost != out[j].VHost {
			return out[i].VHost < out[j].VHost
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (v *vhost) queueList() []*queueState {
	v.mu.RLock()
	qs := make([]*queueState, 0, len(v.queues))
	for _, q := range v.queues {
		qs = append(qs, q)
	}
	v.mu.RUnlock()
	sort.Slice(qs, func(i, j int) bool { return qs[i].name < qs[j].name })
	return qs
}

// Queues implements state.Source.
func (b *Broker) Queues() []state.Queue {
	var out []state.Queue
	for _, v := range b.vhostList() {
		for _, q := range v.queueList() {
			q.mu.Lock()
			sq := state.Queue{
				VHost: v.name, Name: q.name, Durable: q.durable, Exclusive: q.exclusive, AutoDelete: q.autoDelete,
				Arguments: tableMap(q.args), Ready: q.store.Len(), Unacked: q.unacked, Bytes: q.store.Bytes(),
				Consumers: len(q.consumers), Published: q.published, Delivered: q.delivered, Acked: q.acked,
				Redelivered: q.redelivered, State: "running",
				PublishToDeliver: latencyOf(&q.lat.PublishToDeliver), DeliverToAck: latencyOf(&q.lat.DeliverToAck),
			}
			if q.owner != nil {
				sq.Owner = q.owner.name
			}
			if q.qa.SingleActiveConsumer && len(q.consumers) > 0 {
				sq.SingleActiveConsumer = q.consumers[0].tag
			}
			q.mu.Unlock()
			out = append(out, sq)
		}
	}
	return out
}

// Consumers implements state.Source.
func (b *Broker) Consumers() []state.Consumer {
	var out []state.Consumer
	for _, v := range b.vhostList() {
		for _, q := range v.queueList() {
			q.mu.Lock()
			for i, c := range q.consumers {
				out = append(out, state.Consumer{
					VHost: v.name, Queue: q.name, Tag: c.tag, Connection: c.ch.c.name, Channel: c.ch.id,
					NoAck: c.noAck, Exclusive: c.exclusive, Prefetch: c.prefetch, Priority: c.priority,
					Active: !q.qa.SingleActiveConsumer || i == 0, Arguments: tableMap(c.args),
				})
			}
			q.mu.Unlock()
		}
	}
	return out
}

// Bindings implements state.Source: the default exchange's implicit
// bindings first, as RabbitMQ lists them, then every exchange's.
func (b *Broker) Bindings() []state.Binding {
	var out []state.Binding
	for _, v := range b.vhostList() {
		for _, q := range v.queueList() {
			out = append(out, state.Binding{VHost: v.name, Destination: q.name, DestinationType: "queue",
				RoutingKey: q.name, Arguments: map[string]any{}, PropertiesKey: q.name})
		}
		v.mu.RLock()
		names := make([]string, 0, len(v.exchanges))
		for n := range v.exchanges {
			names = append(names, n)
		}
		sort.Strings(names)
		var bs []route.Binding
		for _, n := range names {
			x := v.exchanges[n]
			x.routeMu.Lock()
			bs = x.index.Bindings(bs[:0])
			x.routeMu.Unlock()
			for _, bd := range bs {
				out = append(out, state.Binding{
					VHost: v.name, Source: n, Destination: bd.Dest.Name, DestinationType: destKind(bd.Dest),
					RoutingKey: bd.Key, Arguments: tableMap(bd.Args), PropertiesKey: propertiesKey(bd.Key, bd.Args),
				})
			}
		}
		v.mu.RUnlock()
	}
	return out
}

// propertiesKey is the management API's name for a binding, built as
// RabbitMQ's pack_binding_props builds it: the routing key quoted as in a
// URL query ("~" too), and "~" and a hash of the arguments when there are
// any ("~" alone for an empty key without arguments). RabbitMQ's hash is
// Erlang's phash2, which is not reproduced: the hash here is another, and
// only tells bindings apart.
func propertiesKey(key string, args amqp091.Table) string {
	q := strings.ReplaceAll(url.QueryEscape(key), "~", "%7E")
	if len(args) == 0 {
		if q == "" {
			return "~"
		}
		return q
	}
	var h uint32 = 2166136261
	for _, c := range args {
		h = (h ^ uint32(c)) * 16777619
	}
	return q + "~" + base64.RawURLEncoding.EncodeToString([]byte{byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)})
}

// Users implements state.Source.
func (b *Broker) Users() []state.User { return b.users.Users() }

// VHosts implements state.Source.
func (b *Broker) VHosts() []state.VHost { return b.users.VHosts() }

// Permissions implements state.Source.
func (b *Broker) Permissions() []state.Permission { return b.users.Permissions() }

// CloseConnection implements state.Source.
func (b *Broker) CloseConnection(name, reason string) bool {
	for _, c := range b.connList() {
		if c.name == name {
			if reason == "" {
				reason = "Closed via management plugin"
			}
			c.requestClose(reason)
			return true
		}
	}
	return false
}

// requestClose asks the connection's reader to close it with 320; a
// reader waiting on the socket is woken by a short read deadline.
func (c *conn) requestClose(reason string) {
	c.closeRequested.Store(&reason)
	c.b.mem.wake()
	c.nc.SetReadDeadline(time.Now())
}

func latencyOf(h *latency.Histogram) state.Latency {
	s := h.Snapshot()
	return state.Latency{Count: s.Count, Buckets: s.Buckets, P50: s.P50, P99: s.P99}
}

// channelState is a channel's state as RabbitMQ reports it: "flow" while
// its connection is held by flow control (flow.go), "running" otherwise.
func channelState(c *conn) string {
	if c.state() == stateFlow {
		return stateFlow
	}
	return stateRunning
}
