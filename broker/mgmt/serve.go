package mgmt

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// Lists, with RabbitMQ 3.10's choice of which paginate.
var (
	connectionList = list[state.Connection]{render: (*writer).connection, name: func(c *state.Connection) string { return c.Name }, paginate: true}
	channelList    = list[state.Channel]{render: (*writer).channel, name: channelDisplayName, paginate: true}
	exchangeList   = list[state.Exchange]{render: (*writer).exchange, name: func(x *state.Exchange) string { return x.Name }, paginate: true}
	queueList      = list[state.Queue]{render: (*writer).queue, name: func(q *state.Queue) string { return q.Name }, paginate: true}
	bindingList    = list[state.Binding]{render: (*writer).binding}
	consumerList   = list[state.Consumer]{render: (*writer).consumer}
	userList       = list[state.User]{render: (*writer).user}
	permissionList = list[state.Permission]{render: (*writer).permission}
)

func channelDisplayName(ch *state.Channel) string {
	return ch.Connection + " (" + strconv.Itoa(int(ch.Number)) + ")"
}

// node is the broker's node name, read once: it does not change while the
// broker runs, and Overview is not free.
func (h *handler) node() string {
	if p := h.nodeName.Load(); p != nil {
		return *p
	}
	n := h.cfg.Source.Overview().Node
	if n != "" {
		h.nodeName.Store(&n)
	}
	return n
}

func (h *handler) notFound(w http.ResponseWriter) {
	writeRaw(w, http.StatusNotFound, bodyNotFound)
}

// serve answers an authenticated request for the route.
func (rt route) serve(h *handler, rq *request) {
	if rt.ep == epDefinitions {
		h.definitions(rq)
		return
	}
	src := h.cfg.Source
	wr := h.getWriter(rq.q.cols)
	defer h.putWriter(wr)
	wr.node = h.node()
	who := &rq.who
	vhost, byVHost := rq.vhostParam()
	if byVHost && !h.vhostExists(vhost) {
		h.notFound(rq.w)
		return
	}
	p := &rq.params
	switch rt.ep {
	case epOverview:
		o := src.Overview()
		wr.node = o.Node
		wr.overview(&o, rq.r)
		wr.send(rq.w, http.StatusOK)

	case epClusterName:
		wr.beginObject()
		wr.kstr("name", src.Overview().ClusterName)
		wr.endObject()
		wr.send(rq.w, http.StatusOK)

	case epWhoami:
		wr.beginObject()
		wr.kstr("name", who.user)
		if wr.key("tags") {
			wr.strings(who.tags)
		}
		wr.endObject()
		wr.send(rq.w, http.StatusOK)

	case epConnections:
		cs := slices.DeleteFunc(src.Connections(), func(c state.Connection) bool {
			return byVHost && c.VHost != vhost || !who.seesUser(c.User)
		})
		slices.SortStableFunc(cs, func(a, b state.Connection) int { return byVHostName(a.VHost, a.Name, b.VHost, b.Name) })
		connectionList.write(h, rq, wr, cs)

	case epConnection:
		cs := src.Connections()
		i := slices.IndexFunc(cs, func(c state.Connection) bool { return c.Name == p[0] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		c := &cs[i]
		if rq.r.Method == http.MethodDelete {
			if !who.mayClose(c.User) {
				h.refuse(rq, reasonNotObject)
				return
			}
			reason := rq.r.Header.Get("X-Reason")
			if reason == "" {
				reason = "Closed via management plugin"
			}
			if !src.CloseConnection(c.Name, reason) {
				h.notFound(rq.w)
				return
			}
			h.logf("closing connection ", c.Name, " on request of user '", who.user, "': ", reason)
			rq.w.WriteHeader(http.StatusNoContent)
			return
		}
		if !who.seesUser(c.User) {
			h.refuse(rq, reasonNotObject)
			return
		}
		wr.single = true
		wr.connection(c)
		wr.send(rq.w, http.StatusOK)

	case epConnChannels:
		cs := src.Connections()
		i := slices.IndexFunc(cs, func(c state.Connection) bool { return c.Name == p[0] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		if !who.seesUser(cs[i].User) {
			h.refuse(rq, reasonNotObject)
			return
		}
		wr.useConnections(cs)
		chs := slices.DeleteFunc(src.Channels(), func(ch state.Channel) bool { return ch.Connection != p[0] })
		sortChannels(chs)
		channelList.write(h, rq, wr, chs)

	case epChannels:
		chs := slices.DeleteFunc(src.Channels(), func(ch state.Channel) bool {
			return byVHost && ch.VHost != vhost || !who.seesUser(ch.User)
		})
		sortChannels(chs)
		channelList.write(h, rq, wr, chs)

	case epChannel:
		conn, num, ok := parseChannelName(p[0])
		if !ok {
			h.notFound(rq.w)
			return
		}
		chs := src.Channels()
		i := slices.IndexFunc(chs, func(ch state.Channel) bool { return ch.Connection == conn && ch.Number == num })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		if !who.seesUser(chs[i].User) {
			h.refuse(rq, reasonNotObject)
			return
		}
		wr.single = true
		wr.channel(&chs[i])
		wr.send(rq.w, http.StatusOK)

	case epExchanges:
		xs := slices.DeleteFunc(src.Exchanges(), func(x state.Exchange) bool {
			return byVHost && x.VHost != vhost || !who.seesVHost(x.VHost)
		})
		slices.SortStableFunc(xs, func(a, b state.Exchange) int { return byVHostName(a.VHost, a.Name, b.VHost, b.Name) })
		exchangeList.write(h, rq, wr, xs)

	case epExchange:
		xs := src.Exchanges()
		i := slices.IndexFunc(xs, func(x state.Exchange) bool { return x.VHost == vhost && x.Name == p[1] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		wr.single = true
		wr.exchange(&xs[i])
		wr.send(rq.w, http.StatusOK)

	case epExchangeSource, epExchangeDest:
		// A missing exchange has no bindings: 200 [], as in RabbitMQ.
		bs := slices.DeleteFunc(src.Bindings(), func(b state.Binding) bool {
			if b.VHost != vhost {
				return true
			}
			if rt.ep == epExchangeSource {
				return b.Source != p[1]
			}
			return b.Destination != p[1] || b.DestinationType != "exchange"
		})
		bindingList.write(h, rq, wr, bs)

	case epQueues:
		qs := slices.DeleteFunc(src.Queues(), func(q state.Queue) bool {
			return byVHost && q.VHost != vhost || !who.seesVHost(q.VHost)
		})
		slices.SortStableFunc(qs, func(a, b state.Queue) int { return byVHostName(a.VHost, a.Name, b.VHost, b.Name) })
		queueList.write(h, rq, wr, qs)

	case epQueue:
		qs := src.Queues()
		i := slices.IndexFunc(qs, func(q state.Queue) bool { return q.VHost == vhost && q.Name == p[1] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		wr.single = true
		wr.queue(&qs[i])
		wr.send(rq.w, http.StatusOK)

	case epQueueBindings:
		bs := slices.DeleteFunc(src.Bindings(), func(b state.Binding) bool {
			return b.VHost != vhost || b.Destination != p[1] || b.DestinationType != "queue"
		})
		bindingList.write(h, rq, wr, bs)

	case epBindings:
		bs := slices.DeleteFunc(src.Bindings(), func(b state.Binding) bool {
			return byVHost && b.VHost != vhost || !who.seesVHost(b.VHost)
		})
		bindingList.write(h, rq, wr, bs)

	case epConsumers:
		cs := slices.DeleteFunc(src.Consumers(), func(c state.Consumer) bool {
			return byVHost && c.VHost != vhost || !who.seesVHost(c.VHost)
		})
		consumerList.write(h, rq, wr, cs)

	case epUsers:
		us := src.Users()
		slices.SortStableFunc(us, func(a, b state.User) int { return strings.Compare(a.Name, b.Name) })
		userList.write(h, rq, wr, us)

	case epUser, epUserPermissions:
		us := src.Users()
		i := slices.IndexFunc(us, func(u state.User) bool { return u.Name == p[0] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		if rt.ep == epUser {
			wr.user(&us[i])
			wr.send(rq.w, http.StatusOK)
			return
		}
		ps := slices.DeleteFunc(src.Permissions(), func(pm state.Permission) bool { return pm.User != p[0] })
		sortPermissions(ps)
		permissionList.write(h, rq, wr, ps)

	case epVHosts, epVHost:
		vs := slices.DeleteFunc(src.VHosts(), func(v state.VHost) bool {
			return byVHost && v.Name != vhost || !who.knowsVHost(v.Name)
		})
		slices.SortStableFunc(vs, func(a, b state.VHost) int { return strings.Compare(a.Name, b.Name) })
		h.vhosts(rq, wr, vs, rt.ep == epVHost)

	case epVHostPermissions:
		ps := slices.DeleteFunc(src.Permissions(), func(pm state.Permission) bool { return pm.VHost != vhost })
		sortPermissions(ps)
		permissionList.write(h, rq, wr, ps)

	case epPermissions:
		ps := src.Permissions()
		sortPermissions(ps)
		permissionList.write(h, rq, wr, ps)

	case epPermission:
		ps := src.Permissions()
		i := slices.IndexFunc(ps, func(pm state.Permission) bool { return pm.VHost == vhost && pm.User == p[1] })
		if i < 0 {
			h.notFound(rq.w)
			return
		}
		wr.permission(&ps[i])
		wr.send(rq.w, http.StatusOK)

	default:
		h.notFound(rq.w)
	}
}

// vhosts answers /api/vhosts and /api/vhosts/V, with each vhost's message
// counts summed over its queues and its bytes over its connections.
func (h *handler) vhosts(rq *request, wr *writer, vs []state.VHost, single bool) {
	totals := make([]vhostTotals, len(vs))
	find := func(name string) *vhostTotals {
		i, ok := slices.BinarySearchFunc(vs, name, func(v state.VHost, n string) int { return strings.Compare(v.Name, n) })
		if !ok {
			return nil
		}
		return &totals[i]
	}
	for _, q := range h.cfg.Source.Queues() {
		if t := find(q.VHost); t != nil {
			t.ready += int64(q.Ready)
			t.unacked += int64(q.Unacked)
		}
	}
	for _, c := range h.cfg.Source.Connections() {
		if t := find(c.VHost); t != nil {
			t.recvOct += c.RecvOct
			t.sendOct += c.SendOct
		}
	}
	if single {
		if len(vs) == 0 {
			h.notFound(rq.w)
			return
		}
		wr.vhost(&vs[0], &totals[0])
		wr.send(rq.w, http.StatusOK)
		return
	}
	// Render through an index so sorting and paging move the totals too.
	type item struct {
		v *state.VHost
		t *vhostTotals
	}
	items := make([]item, len(vs))
	for i := range vs {
		items[i] = item{&vs[i], &totals[i]}
	}
	list[item]{
		render:   func(wr *writer, it *item) { wr.vhost(it.v, it.t) },
		name:     func(it *item) string { return it.v.Name },
		paginate: true,
	}.write(h, rq, wr, items)
}

func sortChannels(chs []state.Channel) {
	slices.SortStableFunc(chs, func(a, b state.Channel) int {
		if r := byVHostName(a.VHost, a.Connection, b.VHost, b.Connection); r != 0 {
			return r
		}
		return int(a.Number) - int(b.Number)
	})
}

// sortPermissions is RabbitMQ's order of permissions: vhost, then user.
func sortPermissions(ps []state.Permission) {
	slices.SortStableFunc(ps, func(a, b state.Permission) int { return byVHostName(a.VHost, a.User, b.VHost, b.User) })
}

// parseChannelName splits "CONNECTION (N)".
func parseChannelName(s string) (conn string, number uint16, ok bool) {
	i := strings.LastIndex(s, " (")
	if i < 0 || !strings.HasSuffix(s, ")") {
		return "", 0, false
	}
	n, err := strconv.ParseUint(s[i+2:len(s)-1], 10, 16)
	if err != nil {
		return "", 0, false
	}
	return s[:i], uint16(n), true
}
