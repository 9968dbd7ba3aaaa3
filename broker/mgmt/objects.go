package mgmt

import (
	"net/http"
	"net/netip"
	"strconv"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// The renderers below write one object each, keys in the alphabetical
// order RabbitMQ 3.10's lists come out in. They write only what the
// snapshots know: Erlang's own figures (reductions, garbage_collection,
// memory, backing_queue_status) and figures the broker does not keep
// (idle_since, consumer_utilisation, per-channel message_stats) are left
// out rather than made up; compare_test.go lists them.

// overview renders GET /api/overview.
func (wr *writer) overview(o *state.Overview, r *http.Request) {
	wr.vals = [maxRateCount]uint64{o.Published, o.Confirmed, o.Delivered, o.Acked, o.Redelivered, o.Returned}
	wr.rateDetails(kindOverview, "", "message_stats", 6, 0b111111)
	stats := wr.rts
	wr.vals = [maxRateCount]uint64{uint64(o.MessagesReady + o.MessagesUnacked), uint64(o.MessagesReady), uint64(o.MessagesUnacked)}
	wr.rateDetails(kindOverview, "", "queue_totals", 3, 0)
	totals := wr.rts

	wr.beginObject()
	wr.kstr("cluster_name", o.ClusterName)
	if wr.key("contexts") {
		// The web context this request came through.
		wr.beginArray()
		if ap, ok := httpListener(r); ok {
			wr.elem()
			wr.beginObject()
			wr.kstr("description", "RabbitMQ Management")
			wr.kstr("node", o.Node)
			wr.kstr("path", "/")
			if wr.key("port") {
				// A string, as RabbitMQ writes it.
				wr.comma()
				wr.buf = append(wr.buf, '"')
				wr.buf = strconv.AppendUint(wr.buf, uint64(ap.Port()), 10)
				wr.buf = append(wr.buf, '"')
			}
			if r.TLS == nil {
				wr.kempty("ssl_opts")
			}
			wr.endObject()
		}
		wr.endArray()
	}
	wr.kbool("disable_stats", false)
	wr.kbool("enable_queue_totals", false)
	if wr.key("exchange_types") {
		wr.beginArray()
		for _, t := range exchangeTypes {
			wr.elem()
			wr.beginObject()
			wr.kstr("description", t.description)
			wr.kbool("enabled", true)
			wr.kstr("name", t.name)
			wr.endObject()
		}
		wr.endArray()
	}
	if wr.key("listeners") {
		wr.beginArray()
		for _, l := range o.Listeners {
			ap, err := netip.ParseAddrPort(l)
			if err != nil {
				continue
			}
			wr.elem()
			wr.listener("amqp", ap.Addr(), int64(ap.Port()))
		}
		if ap, ok := httpListener(r); ok {
			wr.elem()
			wr.listener("http", ap.Addr(), int64(ap.Port()))
		}
		wr.endArray()
	}
	wr.kstr("management_version", o.Version)
	if wr.keyWhole("message_stats") {
		wr.beginObject()
		wr.stat("ack", "ack_details", o.Acked, stats[3])
		wr.stat("confirm", "confirm_details", o.Confirmed, stats[1])
		wr.stat("deliver_get", "deliver_get_details", o.Delivered, stats[2])
		wr.stat("publish", "publish_details", o.Published, stats[0])
		wr.stat("redeliver", "redeliver_details", o.Redelivered, stats[4])
		wr.stat("return_unroutable", "return_unroutable_details", o.Returned, stats[5])
		wr.endObject()
	}
	wr.kstr("node", o.Node)
	if wr.keyWhole("object_totals") {
		wr.beginObject()
		wr.kint("channels", int64(o.Channels))
		wr.kint("connections", int64(o.Connections))
		wr.kint("consumers", int64(o.Consumers))
		wr.kint("exchanges", int64(o.Exchanges))
		wr.kint("queues", int64(o.Queues))
		wr.endObject()
	}
	wr.kstr("product_name", o.Product)
	wr.kstr("product_version", o.Version)
	if wr.keyWhole("queue_totals") {
		wr.beginObject()
		wr.gauge("messages", "messages_details", o.MessagesReady+o.MessagesUnacked, totals[0])
		wr.gauge("messages_ready", "messages_ready_details", o.MessagesReady, totals[1])
		wr.gauge("messages_unacknowledged", "messages_unacknowledged_details", o.MessagesUnacked, totals[2])
		wr.endObject()
	}
	wr.kstr("rabbitmq_version", o.Version)
	wr.kstr("rates_mode", "basic")
	if wr.key("sample_retention_policies") {
		wr.beginObject()
		for _, p := range retention {
			if wr.key(p.name) {
				wr.beginArray()
				for _, a := range p.ages {
					wr.elem()
					wr.int(a)
				}
				wr.endArray()
			}
		}
		wr.endObject()
	}
	wr.kint("statistics_db_event_queue", 0)
	wr.endObject()
}

func (wr *writer) listener(protocol string, ip netip.Addr, port int64) {
	wr.beginObject()
	if wr.key("ip_address") {
		wr.addr(ip)
	}
	wr.kstr("node", wr.node)
	wr.kint("port", port)
	wr.kstr("protocol", protocol)
	if wr.key("socket_opts") {
		wr.emptyObject()
	}
	wr.endObject()
}

// tlsUnknown writes a TLS detail the snapshot does not have: RabbitMQ
// writes these as null in lists and "" for one connection.
func (wr *writer) tlsUnknown(k string) {
	if wr.key(k) {
		if wr.single {
			wr.str("")
		} else {
			wr.null()
		}
	}
}

// connection renders one connection (GET /api/connections).
func (wr *writer) connection(c *state.Connection) {
	wr.vals[0], wr.vals[1] = c.RecvOct, c.SendOct
	wr.rateDetails(kindConn, "", c.Name, 2, 0b11)
	recvRate, sendRate := wr.rts[0], wr.rts[1]
	wr.beginObject()
	wr.kstr("auth_mechanism", c.AuthMechanism)
	wr.kint("channel_max", int64(c.ChannelMax))
	wr.kint("channels", int64(c.Channels))
	wr.ktable("client_properties", c.ClientProperties)
	wr.kint("connected_at", c.ConnectedAt.UnixMilli())
	wr.kint("frame_max", int64(c.FrameMax))
	if wr.key("host") {
		wr.addr(c.Local.Addr())
	}
	wr.kstr("name", c.Name)
	wr.kstr("node", wr.node)
	wr.tlsUnknown("peer_cert_issuer")
	wr.tlsUnknown("peer_cert_subject")
	wr.tlsUnknown("peer_cert_validity")
	if wr.key("peer_host") {
		wr.addr(c.Peer.Addr())
	}
	wr.kint("peer_port", int64(c.Peer.Port()))
	wr.kint("port", int64(c.Local.Port()))
	wr.kstr("protocol", c.Protocol)
	wr.kuint("recv_cnt", c.RecvCnt)
	wr.stat("recv_oct", "recv_oct_details", c.RecvOct, recvRate)
	wr.kuint("send_cnt", c.SendCnt)
	wr.stat("send_oct", "send_oct_details", c.SendOct, sendRate)
	wr.kbool("ssl", c.TLS)
	wr.tlsUnknown("ssl_cipher")
	wr.tlsUnknown("ssl_hash")
	wr.tlsUnknown("ssl_key_exchange")
	wr.tlsUnknown("ssl_protocol")
	wr.kstr("state", c.State)
	wr.kint("timeout", int64(c.Heartbeat))
	wr.kstr("type", "network")
	wr.kstr("user", c.User)
	// RabbitMQ shows a client's connection_name as user_provided_name.
	if n, ok := c.ClientProperties["connection_name"].(string); ok {
		wr.kstr("user_provided_name", n)
	}
	wr.kstr("user_who_performed_action", c.User)
	wr.kstr("vhost", c.VHost)
	wr.endObject()
}

// channelName writes RabbitMQ's name of a channel: its connection's name
// and its number, "127.0.0.1:53412 -> 127.0.0.1:5672 (1)".
func (wr *writer) channelName(conn string, number uint16) {
	wr.comma()
	wr.appendString(conn)
	// The suffix needs no escaping: put it inside the closing quote.
	wr.buf = append(wr.buf[:len(wr.buf)-1], " ("...)
	wr.buf = strconv.AppendUint(wr.buf, uint64(number), 10)
	wr.buf = append(wr.buf, ')', '"')
}

// connectionDetails writes {name, peer_host, peer_port} of a connection.
func (wr *writer) connectionDetails(name string) {
	wr.beginObject()
	wr.kstr("name", name)
	if c := wr.connNamed(name); c != nil {
		if wr.key("peer_host") {
			wr.addr(c.Peer.Addr())
		}
		wr.kint("peer_port", int64(c.Peer.Port()))
	}
	wr.endObject()
}

// channel renders one channel (GET /api/channels).
func (wr *writer) channel(ch *state.Channel) {
	wr.beginObject()
	wr.kbool("confirm", ch.Confirm)
	if wr.key("connection_details") {
		wr.connectionDetails(ch.Connection)
	}
	wr.kint("consumer_count", int64(ch.Consumers))
	if wr.single && wr.key("consumer_details") {
		wr.beginArray()
		wr.loadConsumers()
		for i := range wr.consumers {
			c := &wr.consumers[i]
			if c.Connection == ch.Connection && c.Channel == ch.Number {
				wr.elem()
				wr.consumer(c)
			}
		}
		wr.endArray()
	}
	if wr.single {
		wr.kempty("deliveries")
	}
	wr.kint("global_prefetch_count", int64(ch.GlobalPrefetch))
	wr.kint("messages_unacknowledged", int64(ch.Unacked))
	wr.kint("messages_unconfirmed", int64(ch.Unconfirmed))
	if wr.key("name") {
		wr.channelName(ch.Connection, ch.Number)
	}
	wr.kstr("node", wr.node)
	wr.kint("number", int64(ch.Number))
	// There are no quorum queues, so never a raft command pending.
	wr.kint("pending_raft_commands", 0)
	wr.kint("prefetch_count", int64(ch.Prefetch))
	if wr.single {
		wr.kempty("publishes")
	}
	wr.kstr("state", ch.State)
	wr.kbool("transactional", ch.Transactional)
	wr.kstr("user", ch.User)
	wr.kstr("user_who_performed_action", ch.User)
	wr.kstr("vhost", ch.VHost)
	wr.endObject()
}

// consumer renders one consumer (GET /api/consumers).
func (wr *writer) consumer(c *state.Consumer) {
	wr.beginObject()
	wr.kbool("ack_required", !c.NoAck)
	wr.kbool("active", c.Active)
	if wr.key("activity_status") {
		switch {
		case !c.Active:
			wr.str("waiting")
		case wr.singleActive(c):
			wr.str("single_active")
		default:
			wr.str("up")
		}
	}
	wr.ktable("arguments", c.Arguments)
	if wr.key("channel_details") {
		wr.beginObject()
		wr.kstr("connection_name", c.Connection)
		if wr.key("name") {
			wr.channelName(c.Connection, c.Channel)
		}
		wr.kstr("node", wr.node)
		wr.kint("number", int64(c.Channel))
		if conn := wr.connNamed(c.Connection); conn != nil {
			if wr.key("peer_host") {
				wr.addr(conn.Peer.Addr())
			}
			wr.kint("peer_port", int64(conn.Peer.Port()))
			wr.kstr("user", conn.User)
		}
		wr.endObject()
	}
	wr.kstr("consumer_tag", c.Tag)
	wr.kbool("exclusive", c.Exclusive)
	wr.kint("prefetch_count", int64(c.Prefetch))
	if wr.key("queue") {
		wr.beginObject()
		wr.kstr("name", c.Queue)
		wr.kstr("vhost", c.VHost)
		wr.endObject()
	}
	wr.endObject()
}

// singleActive says whether c is the active consumer of a queue with
// x-single-active-consumer, which RabbitMQ shows as "single_active".
func (wr *writer) singleActive(c *state.Consumer) bool {
	q := wr.queueNamed(c.VHost, c.Queue)
	return q != nil && q.SingleActiveConsumer != "" && q.SingleActiveConsumer == c.Tag
}

// exchange renders one exchange (GET /api/exchanges).
func (wr *writer) exchange(x *state.Exchange) {
	wr.vals[0], wr.vals[1] = x.PublishIn, x.PublishOut
	wr.rateDetails(kindExchange, x.VHost, x.Name, 2, 0b11)
	wr.beginObject()
	wr.ktable("arguments", x.Arguments)
	wr.kbool("auto_delete", x.AutoDelete)
	wr.kbool("durable", x.Durable)
	if wr.single {
		wr.kempty("incoming")
	}
	wr.kbool("internal", x.Internal)
	// RabbitMQ has message_stats only once something was published.
	if (x.PublishIn > 0 || x.PublishOut > 0) && wr.key("message_stats") {
		wr.beginObject()
		wr.stat("publish_in", "publish_in_details", x.PublishIn, wr.rts[0])
		wr.stat("publish_out", "publish_out_details", x.PublishOut, wr.rts[1])
		wr.endObject()
	}
	wr.kstr("name", x.Name)
	if wr.single {
		wr.kempty("outgoing")
	}
	wr.kstr("type", x.Type)
	wr.kstr("vhost", x.VHost)
	wr.endObject()
}

// queue renders one queue (GET /api/queues).
func (wr *writer) queue(q *state.Queue) {
	messages := int64(q.Ready) + int64(q.Unacked)
	wr.vals = [maxRateCount]uint64{q.Published, q.Delivered, q.Acked, q.Redelivered,
		uint64(messages), uint64(q.Ready), uint64(q.Unacked)}
	wr.rateDetails(kindQueue, q.VHost, q.Name, 7, 0b1111)
	r := wr.rts
	consumers := wr.queueConsumers(q.VHost, q.Name)
	wr.beginObject()
	wr.ktable("arguments", q.Arguments)
	wr.kbool("auto_delete", q.AutoDelete)
	if wr.single && wr.key("consumer_details") {
		wr.beginArray()
		for i := range consumers {
			wr.elem()
			wr.consumer(&consumers[i])
		}
		wr.endArray()
	}
	wr.kint("consumers", int64(q.Consumers))
	if wr.single {
		wr.kempty("deliveries")
	}
	wr.kbool("durable", q.Durable)
	if wr.keyWhole("effective_policy_definition") {
		wr.emptyObject() // there are no policies
	}
	wr.kbool("exclusive", q.Exclusive)
	if wr.key("exclusive_consumer_tag") {
		tag := ""
		for i := range consumers {
			if consumers[i].Exclusive {
				tag = consumers[i].Tag
				break
			}
		}
		wr.strOrNull(tag)
	}
	if wr.single {
		wr.kempty("incoming")
	}
	wr.kint("message_bytes", q.Bytes)
	if (q.Published > 0 || q.Delivered > 0 || q.Acked > 0 || q.Redelivered > 0) && wr.key("message_stats") {
		wr.beginObject()
		wr.stat("ack", "ack_details", q.Acked, r[2])
		wr.stat("deliver_get", "deliver_get_details", q.Delivered, r[1])
		wr.stat("publish", "publish_details", q.Published, r[0])
		wr.stat("redeliver", "redeliver_details", q.Redelivered, r[3])
		wr.endObject()
	}
	wr.gauge("messages", "messages_details", messages, r[4])
	wr.gauge("messages_ready", "messages_ready_details", int64(q.Ready), r[5])
	wr.gauge("messages_unacknowledged", "messages_unacknowledged_details", int64(q.Unacked), r[6])
	wr.kstr("name", q.Name)
	wr.kstr("node", wr.node)
	wr.knull("operator_policy")
	// 3.10 names an exclusive queue's owner only for the one queue.
	if wr.single && q.Exclusive && q.Owner != "" && wr.key("owner_pid_details") {
		wr.connectionDetails(q.Owner)
	}
	wr.knull("policy")
	wr.knull("recoverable_slaves")
	if wr.key("single_active_consumer_tag") {
		wr.strOrNull(q.SingleActiveConsumer)
	}
	wr.kstr("state", q.State)
	wr.kstr("type", "classic")
	wr.kstr("vhost", q.VHost)
	wr.endObject()
}

// binding renders one binding (GET /api/bindings), keys in RabbitMQ's
// order for bindings.
func (wr *writer) binding(b *state.Binding) {
	wr.beginObject()
	wr.kstr("source", b.Source)
	wr.kstr("vhost", b.VHost)
	wr.kstr("destination", b.Destination)
	wr.kstr("destination_type", b.DestinationType)
	wr.kstr("routing_key", b.RoutingKey)
	wr.ktable("arguments", b.Arguments)
	if wr.key("properties_key") {
		if b.PropertiesKey != "" {
			wr.str(b.PropertiesKey)
		} else {
			wr.propertiesKey(b.RoutingKey)
		}
	}
	wr.endObject()
}

// propertiesKey is RabbitMQ's name for a binding without arguments, for
// a broker that gave none: the routing key URL-escaped, "~" when empty.
func (wr *writer) propertiesKey(key string) {
	if key == "" {
		wr.str("~")
		return
	}
	wr.comma()
	wr.buf = append(wr.buf, '"')
	for i := 0; i < len(key); i++ {
		c := key[i]
		if isUnreserved(c) {
			wr.buf = append(wr.buf, c)
			continue
		}
		wr.buf = append(wr.buf, '%', upperHex[c>>4], upperHex[c&0xf])
	}
	wr.buf = append(wr.buf, '"')
}

const upperHex = "0123456789ABCDEF"

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// user renders one user (GET /api/users), keys in RabbitMQ's order.
func (wr *writer) user(u *state.User) {
	wr.beginObject()
	wr.kstr("name", u.Name)
	wr.kstr("password_hash", u.PasswordHash)
	wr.kstr("hashing_algorithm", u.HashingAlgorithm)
	if wr.key("tags") {
		wr.strings(u.Tags)
	}
	if wr.keyWhole("limits") {
		wr.emptyObject()
	}
	wr.endObject()
}

// vhostTotals are a vhost's sums over its queues and connections.
type vhostTotals struct {
	ready, unacked   int64
	recvOct, sendOct uint64
}

// vhost renders one vhost (GET /api/vhosts).
func (wr *writer) vhost(v *state.VHost, t *vhostTotals) {
	wr.vals = [maxRateCount]uint64{t.recvOct, t.sendOct, uint64(t.ready + t.unacked), uint64(t.ready), uint64(t.unacked)}
	wr.rateDetails(kindVHost, "", v.Name, 5, 0b11)
	r := wr.rts
	wr.beginObject()
	if wr.key("cluster_state") {
		wr.beginObject()
		if wr.node != "" && wr.tableKey(wr.node) {
			wr.str("running")
		}
		wr.endObject()
	}
	wr.kstr("default_queue_type", "undefined")
	wr.kstr("description", v.Description)
	wr.gauge("messages", "messages_details", t.ready+t.unacked, r[2])
	wr.gauge("messages_ready", "messages_ready_details", t.ready, r[3])
	wr.gauge("messages_unacknowledged", "messages_unacknowledged_details", t.unacked, r[4])
	if wr.keyWhole("metadata") {
		wr.beginObject()
		wr.kstr("description", v.Description)
		if wr.key("tags") {
			wr.strings(v.Tags)
		}
		wr.endObject()
	}
	wr.kstr("name", v.Name)
	wr.stat("recv_oct", "recv_oct_details", t.recvOct, r[0])
	wr.stat("send_oct", "send_oct_details", t.sendOct, r[1])
	if wr.key("tags") {
		wr.strings(v.Tags)
	}
	wr.kbool("tracing", false)
	wr.endObject()
}

// permission renders one permission (GET /api/permissions).
func (wr *writer) permission(p *state.Permission) {
	wr.beginObject()
	wr.kstr("user", p.User)
	wr.kstr("vhost", p.VHost)
	wr.kstr("configure", p.Configure)
	wr.kstr("write", p.Write)
	wr.kstr("read", p.Read)
	wr.endObject()
}
