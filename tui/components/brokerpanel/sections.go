package brokerpanel

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/tui/internal/text"
)

// col is a table column: its width (0: the rest of the line) and whether
// it is a number, aligned right.
type col struct {
	title string
	w     int
	num   bool
}

// table joins cells into a line of the columns' widths.
func table(cols []col, cells ...string) string {
	var b strings.Builder
	for i, c := range cols {
		s := ""
		if i < len(cells) {
			s = cells[i]
		}
		if c.w == 0 {
			b.WriteString(s)
			break
		}
		s = ansi.Truncate(s, c.w, "…")
		pad := strings.Repeat(" ", c.w-ansi.StringWidth(s))
		if c.num {
			b.WriteString(pad + s)
		} else {
			b.WriteString(s + pad)
		}
		b.WriteByte(' ')
	}
	return b.String()
}

func header(cols []col) string {
	t := make([]string, len(cols))
	for i, c := range cols {
		t[i] = c.title
	}
	return " " + table(cols, t...)
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
func name(s string) string { return text.OneLine(s) }
func flag(on bool, s string) string {
	if on {
		return s
	}
	return ""
}

func (r rate) String() string {
	if !r.ok {
		return "-"
	}
	return strconv.FormatFloat(r.perSec, 'f', 1, 64) + "/s"
}

// exchangeName is the management UI's name for the default exchange.
func exchangeName(s string) string {
	if s == "" {
		return "(AMQP default)"
	}
	return name(s)
}

// value renders a field-table value as RabbitMQ's management UI does,
// compactly: strings bare, tables as {k=v}, arrays as [a, b].
func value(v any) string {
	switch v := v.(type) {
	case nil:
		return "void"
	case string:
		return name(v)
	case []byte:
		return name(string(v))
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int8:
		return strconv.FormatInt(int64(v), 10)
	case int16:
		return strconv.FormatInt(int64(v), 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint8:
		return strconv.FormatUint(uint64(v), 10)
	case uint16:
		return strconv.FormatUint(uint64(v), 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = value(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return "{" + args(v) + "}"
	}
	return "?"
}

// args renders arguments sorted by name.
func args(a map[string]any) string {
	if len(a) == 0 {
		return ""
	}
	names := make([]string, 0, len(a))
	for k := range a {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(name(k) + "=" + value(a[k]))
	}
	return b.String()
}

// clientProduct is what a client says it is in client_properties.
func clientProduct(p map[string]any) string {
	s := value(p["product"])
	if p["product"] == nil {
		s = ""
	}
	if v, ok := p["version"]; ok {
		s = strings.TrimSpace(s + " " + value(v))
	}
	if n, ok := p["connection_name"]; ok {
		s = strings.TrimSpace(s + " (" + value(n) + ")")
	}
	return s
}

func (m *Model) overview() {
	sy, o := m.sty, m.snap.Overview
	line := func(label, v string) { m.add(sy.FieldKey.Render(pad(label, 12))+v, "", nil) }
	if !m.has {
		m.add(sy.Dim.Render("waiting for the broker…"), "", nil)
		return
	}
	product := name(o.Product + " " + o.Version)
	line("Product", product)
	node := name(o.Node)
	if o.ClusterName != "" {
		node += "   cluster " + name(o.ClusterName)
	}
	line("Node", node)
	if !o.Started.IsZero() {
		line("Uptime", m.since(o.Started))
	}
	if len(o.Listeners) == 0 {
		line("Listeners", sy.Dim.Render("none yet"))
	} else {
		line("Listeners", name(strings.Join(o.Listeners, ", ")))
	}
	line("Totals", itoa(o.Connections)+" connections  "+itoa(o.Channels)+" channels  "+itoa(o.Exchanges)+" exchanges  "+
		itoa(o.Queues)+" queues  "+itoa(o.Consumers)+" consumers")
	line("Messages", "ready "+strconv.FormatInt(o.MessagesReady, 10)+"  unacked "+strconv.FormatInt(o.MessagesUnacked, 10))
	line("Rates", "publish "+m.ovRates[0].String()+"  deliver "+m.ovRates[1].String()+"  ack "+m.ovRates[2].String())
	line("Counters", "published "+utoa(o.Published)+"  delivered "+utoa(o.Delivered)+"  acked "+utoa(o.Acked)+
		"  returned "+utoa(o.Returned)+"  confirmed "+utoa(o.Confirmed)+"  redelivered "+utoa(o.Redelivered))
	mem := decode.FormatBytes(o.MemoryUsed)
	if o.MemoryLimit > 0 {
		mem += " of " + decode.FormatBytes(o.MemoryLimit) + " (high watermark, " +
			strconv.FormatFloat(100*float64(o.MemoryUsed)/float64(o.MemoryLimit), 'f', 1, 64) + "%)"
	} else {
		mem += " (no high watermark)"
	}
	line("Memory", mem)
	if o.Blocked {
		line("Blocked", sy.Warning.Render(sy.Sym.Warning+" publishers are blocked: memory above the high watermark"))
	} else {
		line("Blocked", "no")
	}
	m.checksums(line)
}

var exchangeCols = []col{{"vhost", 8, false}, {"name", 28, false}, {"type", 8, false}, {"flags", 6, false},
	{"in", 9, true}, {"out", 9, true}, {"arguments", 0, false}}

func (m *Model) exchanges() {
	m.header = header(exchangeCols)
	if len(m.snap.Exchanges) == 0 {
		m.none("exchanges")
	}
	for _, x := range m.snap.Exchanges {
		fl := flag(x.Durable, "D") + flag(x.AutoDelete, "AD") + flag(x.Internal, "I")
		m.add(table(exchangeCols, name(x.VHost), exchangeName(x.Name), x.Type, fl, utoa(x.PublishIn), utoa(x.PublishOut), args(x.Arguments)),
			"x"+queueKey(x.VHost, x.Name), &JumpMsg{VHost: x.VHost, Exchange: x.Name, IsExchange: true})
	}
}

var queueCols = []col{{"vhost", 8, false}, {"name", 28, false}, {"ready", 8, true}, {"unacked", 8, true},
	{"consumers", 9, true}, {"bytes", 9, true}, {"publish", 9, true}, {"deliver", 9, true}, {"flags", 6, false}, {"arguments", 0, false}}

func (m *Model) queues() {
	m.header = header(queueCols)
	if len(m.snap.Queues) == 0 {
		m.none("queues")
	}
	for _, q := range m.snap.Queues {
		r := m.qRates[queueKey(q.VHost, q.Name)]
		fl := flag(q.Durable, "D") + flag(q.AutoDelete, "AD") + flag(q.Exclusive, "X")
		a := args(q.Arguments)
		if q.SingleActiveConsumer != "" {
			a = strings.TrimSpace(a + " active=" + name(q.SingleActiveConsumer))
		}
		m.add(table(queueCols, name(q.VHost), name(q.Name), itoa(q.Ready), itoa(q.Unacked), itoa(q.Consumers),
			decode.FormatBytes(q.Bytes), r.publish.String(), r.deliver.String(), fl, a),
			"q"+queueKey(q.VHost, q.Name), &JumpMsg{VHost: q.VHost, Queue: q.Name, ConsumerTags: m.tags(q.VHost, q.Name)})
	}
}

// tags are the consumer tags on a queue.
func (m *Model) tags(vhost, queue string) []string {
	var out []string
	for _, c := range m.snap.Consumers {
		if c.VHost == vhost && c.Queue == queue {
			out = append(out, c.Tag)
		}
	}
	return out
}

var bindingCols = []col{{"vhost", 8, false}, {"source", 22, false}, {"destination", 22, false}, {"type", 8, false},
	{"routing key", 22, false}, {"arguments", 0, false}}

func (m *Model) bindings() {
	m.header = header(bindingCols)
	if len(m.snap.Bindings) == 0 {
		m.none("bindings")
	}
	for _, b := range m.snap.Bindings {
		j := &JumpMsg{VHost: b.VHost, Queue: b.Destination, ConsumerTags: m.tags(b.VHost, b.Destination)}
		if b.DestinationType == "exchange" {
			j = &JumpMsg{VHost: b.VHost, Exchange: b.Destination, IsExchange: true}
		}
		m.add(table(bindingCols, name(b.VHost), exchangeName(b.Source), name(b.Destination), b.DestinationType, name(b.RoutingKey), args(b.Arguments)),
			"b"+queueKey(b.VHost, b.Source+"\x00"+b.Destination+"\x00"+b.PropertiesKey), j)
	}
}

var connectionCols = []col{{"conn", 5, true}, {"name", 36, false}, {"user", 10, false}, {"vhost", 8, false},
	{"state", 11, false}, {"channels", 8, true}, {"client", 0, false}}

// connState marks blocked and flow-controlled states with a symbol as
// well as the warning colour.
func (m *Model) connState(s string) string {
	switch s {
	case "blocked", "blocking", "flow":
		return m.sty.Warning.Render(m.sty.Sym.Warning + s)
	}
	return s
}

func (m *Model) connections() {
	m.header = header(connectionCols)
	if len(m.snap.Connections) == 0 {
		m.none("connections")
	}
	for _, c := range m.snap.Connections {
		flow := "-"
		if c.Flow > 0 {
			flow = itoa(c.Flow)
		}
		client := clientProduct(c.ClientProperties)
		if c.TLS {
			client = "TLS " + client
		}
		m.add(table(connectionCols, flow, name(c.Name), name(c.User), name(c.VHost), m.connState(c.State), itoa(c.Channels), client),
			"c"+c.Name, &JumpMsg{Flow: c.Flow, Connection: c.Name})
	}
}

// connJump is the jump to the connection named n.
func (m *Model) connJump(n string) *JumpMsg {
	for _, c := range m.snap.Connections {
		if c.Name == n {
			return &JumpMsg{Flow: c.Flow, Connection: n}
		}
	}
	return &JumpMsg{Connection: n}
}

var channelCols = []col{{"connection", 36, false}, {"ch", 5, true}, {"user", 10, false}, {"prefetch", 8, true},
	{"global", 6, true}, {"unacked", 8, true}, {"unconf", 6, true}, {"cons", 5, true}, {"mode", 8, false}, {"state", 0, false}}

func (m *Model) channels() {
	m.header = header(channelCols)
	if len(m.snap.Channels) == 0 {
		m.none("channels")
	}
	for _, c := range m.snap.Channels {
		mode := flag(c.Confirm, "confirm") + flag(c.Transactional, "tx")
		m.add(table(channelCols, name(c.Connection), strconv.Itoa(int(c.Number)), name(c.User), strconv.Itoa(int(c.Prefetch)),
			strconv.Itoa(int(c.GlobalPrefetch)), itoa(c.Unacked), itoa(c.Unconfirmed), itoa(c.Consumers), mode, m.connState(c.State)),
			"h"+c.Connection+"\x00"+strconv.Itoa(int(c.Number)), m.connJump(c.Connection))
	}
}

var consumerCols = []col{{"vhost", 8, false}, {"queue", 22, false}, {"tag", 32, false}, {"ch", 5, true},
	{"ack", 6, false}, {"prefetch", 8, true}, {"prio", 4, true}, {"flags", 8, false}, {"connection", 0, false}}

func (m *Model) consumers() {
	m.header = header(consumerCols)
	if len(m.snap.Consumers) == 0 {
		m.none("consumers")
	}
	for _, c := range m.snap.Consumers {
		ack := "manual"
		if c.NoAck {
			ack = "auto"
		}
		fl := flag(c.Exclusive, "X")
		if c.Active {
			fl += "active"
		} else {
			fl += "waiting"
		}
		m.add(table(consumerCols, name(c.VHost), name(c.Queue), name(c.Tag), strconv.Itoa(int(c.Channel)), ack,
			strconv.Itoa(int(c.Prefetch)), itoa(c.Priority), fl, name(c.Connection)),
			"u"+queueKey(c.VHost, c.Tag), m.connJump(c.Connection))
	}
}

var userCols = []col{{"user", 24, false}, {"tags", 30, false}, {"hashing", 0, false}}
var vhostCols = []col{{"vhost", 24, false}, {"tags", 30, false}, {"description", 0, false}}

func (m *Model) users() {
	m.header = header(userCols)
	if len(m.snap.Users) == 0 {
		m.none("users")
	}
	for _, u := range m.snap.Users {
		m.add(table(userCols, name(u.Name), name(strings.Join(u.Tags, ",")), name(u.HashingAlgorithm)), "u"+u.Name, nil)
	}
	m.add("", "", nil)
	m.add(m.sty.Header.Render(header(vhostCols)[1:]), "", nil)
	if len(m.snap.VHosts) == 0 {
		m.none("vhosts")
	}
	for _, v := range m.snap.VHosts {
		m.add(table(vhostCols, name(v.Name), name(strings.Join(v.Tags, ",")), name(v.Description)), "v"+v.Name, nil)
	}
}

var permissionCols = []col{{"user", 20, false}, {"vhost", 12, false}, {"configure", 16, false}, {"write", 16, false}, {"read", 0, false}}

func (m *Model) permissions() {
	m.header = header(permissionCols)
	if len(m.snap.Permissions) == 0 {
		m.none("permissions")
	}
	for _, p := range m.snap.Permissions {
		m.add(table(permissionCols, name(p.User), name(p.VHost), name(p.Configure), name(p.Write), name(p.Read)), "p"+p.User+"\x00"+p.VHost, nil)
	}
}

func (m *Model) routeLines() {
	sy := m.sty
	if m.route == nil && m.routeErr == "" {
		m.add(sy.Dim.Render("no route explained yet: type :route EXCHANGE KEY [NAME=VALUE ...] (:route -v VHOST … for another vhost)"), "", nil)
		return
	}
	m.add(sy.FieldKey.Render(":route "+name(m.routeQ)), "", nil)
	if m.routeErr != "" {
		m.add(sy.Error.Render(sy.Sym.Error+" "+name(m.routeErr)), "", nil)
		return
	}
	r := m.route
	m.add("publish to exchange "+exchangeName(r.Exchange)+" in vhost "+name(r.VHost)+" with routing key "+strconv.Quote(r.RoutingKey), "", nil)
	m.add("", "", nil)
	for _, l := range r.Lines {
		m.add("  "+name(l), "", nil)
	}
	m.add("", "", nil)
	if r.Unroutable || len(r.Queues) == 0 {
		m.add(sy.Warning.Render(sy.Sym.Warning+" unroutable: it would reach no queue; a mandatory publish would be returned (312 NO_ROUTE), any other dropped"), "", nil)
		return
	}
	qs := make([]string, len(r.Queues))
	for i, q := range r.Queues {
		qs[i] = name(q)
	}
	m.add(sy.ChecksumOK.Render(sy.Sym.ChecksumOK+" routed to "+itoa(len(qs))+" queue"+plural(len(qs))+": "+strings.Join(qs, ", ")), "", nil)
	m.add(sy.Dim.Render("  a mandatory publish would not be returned"), "", nil)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pad(s string, w int) string {
	if n := ansi.StringWidth(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

var latencyCols = []col{{"", 2, false}, {"vhost", 8, false}, {"name", 24, false}, {"latency", 16, false}, {"count", 9, true},
	{"p50", 8, true}, {"p99", 8, true}, {"<=1ms", 8, true}, {"<=5ms", 8, true}, {"<=50ms", 8, true},
	{"<=500ms", 8, true}, {"<=1000ms", 8, true}, {">1s", 8, true}}

// latency lists each queue's and exchange's histograms (q: queue, x:
// exchange), those with nothing observed left out.
func (m *Model) latency() {
	m.header = header(latencyCols)
	n := 0
	row := func(kind, vhost, nm, what string, l state.Latency, id string, j *JumpMsg) {
		if l.Count == 0 {
			return
		}
		n++
		cells := []string{kind, name(vhost), nm, what, utoa(l.Count), duration(l.P50), duration(l.P99)}
		for _, b := range l.Buckets {
			cells = append(cells, utoa(b))
		}
		m.add(table(latencyCols, cells...), id, j)
	}
	for _, q := range m.snap.Queues {
		j := &JumpMsg{VHost: q.VHost, Queue: q.Name, ConsumerTags: m.tags(q.VHost, q.Name)}
		id := "q" + queueKey(q.VHost, q.Name)
		row("q", q.VHost, name(q.Name), "publish→deliver", q.PublishToDeliver, id+"/pd", j)
		row("q", q.VHost, name(q.Name), "deliver→ack", q.DeliverToAck, id+"/da", j)
	}
	for _, x := range m.snap.Exchanges {
		j := &JumpMsg{VHost: x.VHost, Exchange: x.Name, IsExchange: true}
		id := "x" + queueKey(x.VHost, x.Name)
		row("x", x.VHost, exchangeName(x.Name), "publish→deliver", x.PublishToDeliver, id+"/pd", j)
		row("x", x.VHost, exchangeName(x.Name), "deliver→ack", x.DeliverToAck, id+"/da", j)
	}
	if n == 0 {
		m.none("latencies (nothing delivered yet)")
	}
}

// duration is a latency, short: 850µs, 12.5ms, 1.2s.
func duration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	default:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
}
