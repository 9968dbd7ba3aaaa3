package broker

import (
	"bytes"
	"strconv"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// The fields RouteAnnotator adds, for the filter language and completion.
func init() {
	decode.RegisterFieldNames(
		decode.FieldName{Name: "broker.route", Proto: decode.ProtoAMQP091, Doc: "how the embedded broker routes this publish"},
		decode.FieldName{Name: "broker.route.queues", Proto: decode.ProtoAMQP091, Doc: "number of queues the publish reaches"},
		decode.FieldName{Name: "broker.route.queue", Proto: decode.ProtoAMQP091, Doc: "a queue the publish reaches"},
		decode.FieldName{Name: "broker.route.unroutable", Proto: decode.ProtoAMQP091, Doc: "the publish reaches no queue"},
		decode.FieldName{Name: "broker.route.returned", Proto: decode.ProtoAMQP091, Doc: "mandatory and unroutable: returned with 312 NO_ROUTE"},
		decode.FieldName{Name: "broker.route.line", Proto: decode.ProtoAMQP091, Doc: "one line of the route explanation"},
		decode.FieldName{Name: "broker.route.error", Proto: decode.ProtoAMQP091, Doc: "why the publish could not be routed (no such exchange, internal)"},
	)
}

// maxHeld bounds the units a RouteAnnotator holds back while a publish
// waits for its content header; past it the oldest publish goes out
// explained without headers.
const maxHeld = 4096

// RouteAnnotator adds the broker's routing of each publish to the units of
// its own tap: a basic.publish a client sent (and the AMQP 1.0 transfer
// that completes a message a client sent, see annotate10.go) gets
// broker.route.* fields
// (queues reached, each binding matched or not and why, alternate and
// exchange-to-exchange hops, whether a mandatory publish is returned), so
// that `read`-style output shows them and a filter such as
// `broker.route.queues == 0` finds the publishes that went nowhere.
//
// It sits on the decode side, after the tap: the broker's forwarding
// never waits for it. The route is explained against the topology when
// the publish's content header is decoded, normally within milliseconds
// of the broker routing it; a binding made or removed in between shows.
// A publish is held back, with every unit after it so that order is kept,
// until its content header (whose headers a headers exchange routes on)
// has been decoded.
//
// Sink is not safe for concurrent use; the pipeline calls it from one
// goroutine. It remembers each connection's vhost until the connection's
// close-ok (a connection that vanishes without one leaves a small entry).
type RouteAnnotator struct {
	// Explain explains a publish (Broker.ExplainPublish); nil while no
	// broker runs, and then units pass unchanged.
	Explain func(vhost, exchange, routingKey string, headers amqp091.Table) (state.Route, error)
	// Next receives every unit, in order.
	Next func(*decode.Unit)
	// Version, when set, is Broker.TopologyVersion: explanations of
	// publishes without headers are then cached per vhost, exchange and
	// routing key while it stays the same, so that a steady stream of
	// publishes to one exchange costs a map look-up each rather than an
	// explanation each.
	Version func() uint64

	vhosts  map[*decode.Conn]string
	open    map[chanKey]pendingPublish
	held    []*decode.Unit
	cache   map[routeKey]explained
	cacheAt uint64
	// pub is the scratch basic.publish read from each publish's frame;
	// lastExchange and lastKey are the strings of the last publish,
	// reused while the names repeat (they usually do).
	pub                   amqp091.BasicPublish
	lastExchange, lastKey string

	// AMQP 1.0 (annotate10.go): the client publisher links, the scratch
	// performative, a connection whose scratch builds the headers a
	// headers exchange routes a 1.0 message on, the slab the
	// explanations of 1.0 publishes are carved from, and the last link
	// and route (a stream repeats them).
	links10   map[linkKey]route10
	comp10    amqp10.Composite
	scratch10 *conn10
	routed10  []routed
	last10    last10
}

// maxCachedRoutes bounds the explanations a RouteAnnotator keeps; past
// it the cache starts again empty (a stream of unique routing keys gains
// nothing from it).
const maxCachedRoutes = 4096

type routeKey struct{ vhost, exchange, routingKey string }

type explained struct {
	r   state.Route
	err error
}

type chanKey struct {
	conn    *decode.Conn
	channel uint16
}

type pendingPublish struct {
	u                    *decode.Unit
	exchange, routingKey string
	mandatory            bool
}

// Sink takes the next unit.
func (a *RouteAnnotator) Sink(u *decode.Unit) {
	if a.Explain != nil && u.Proto == decode.ProtoAMQP10 && u.Parent == nil && u.Dir == decode.DirF {
		a.sink10(u)
		return
	}
	if a.Explain == nil || u.Proto != decode.ProtoAMQP091 || u.Parent != nil {
		a.pass(u)
		return
	}
	if u.Type == "connection.close-ok" {
		delete(a.vhosts, u.Conn) // the connection's end: forget its vhost
	}
	if u.Dir != decode.DirF {
		a.pass(u)
		return
	}
	if a.vhosts == nil {
		a.vhosts = map[*decode.Conn]string{}
		a.open = map[chanKey]pendingPublish{}
	}
	key := chanKey{u.Conn, u.Channel}
	if p, ok := a.open[key]; ok {
		// The content header that follows a publish, or whatever came
		// instead (the broker then closes the connection).
		var headers amqp091.Table
		if u.Type == "content-header" {
			if payload, ok := framePayload(u.Raw); ok {
				var h amqp091.ContentHeader
				if h.DecodeFromBytes(payload) == nil {
					headers = h.Properties.Headers
				}
			}
		}
		a.annotate(key, &p, headers)
	}
	switch u.Type {
	case "connection.open":
		if m, ok := parseMethod(u.Raw).(*amqp091.ConnectionOpen); ok {
			a.vhosts[u.Conn] = string(m.VirtualHost)
		}
	case "basic.publish":
		if m := a.parsePublish(u.Raw); m != nil {
			if string(m.Exchange) != a.lastExchange {
				a.lastExchange = string(m.Exchange)
			}
			if string(m.RoutingKey) != a.lastKey {
				a.lastKey = string(m.RoutingKey)
			}
			a.open[key] = pendingPublish{u: u, exchange: a.lastExchange, routingKey: a.lastKey, mandatory: m.Mandatory}
			a.held = append(a.held, u)
			if len(a.held) > maxHeld {
				a.annotateOldest()
			}
			return
		}
	}
	a.pass(u)
}

// parsePublish reads the arguments of the basic.publish frame raw into
// a.pub (valid until the next call), or returns nil.
func (a *RouteAnnotator) parsePublish(raw []byte) *amqp091.BasicPublish {
	payload, ok := framePayload(raw)
	if !ok || len(payload) < 4 || payload[0] != 0 || payload[1] != 60 || payload[2] != 0 || payload[3] != 40 {
		return nil
	}
	if a.pub.DecodeArguments(payload[4:]) != nil {
		return nil
	}
	return &a.pub
}

// Flush sends on what is held, explaining the publishes still waiting
// for their content header without headers.
func (a *RouteAnnotator) Flush() {
	for key, p := range a.open {
		a.annotate(key, &p, nil)
	}
	a.release()
}

// pass sends u on, behind whatever is held.
func (a *RouteAnnotator) pass(u *decode.Unit) {
	if len(a.held) == 0 {
		a.Next(u)
		return
	}
	a.held = append(a.held, u)
	if len(a.held) > maxHeld {
		a.annotateOldest()
	}
	a.release()
}

// annotateOldest explains the first held publish without its headers.
func (a *RouteAnnotator) annotateOldest() {
	for key, p := range a.open {
		if p.u == a.held[0] {
			a.annotate(key, &p, nil)
			return
		}
	}
}

func (a *RouteAnnotator) annotate(key chanKey, p *pendingPublish, headers amqp091.Table) {
	delete(a.open, key)
	vhost, ok := a.vhosts[key.conn]
	if !ok {
		vhost = "/"
	}
	r, err := a.explain(vhost, p.exchange, p.routingKey, headers)
	// The tree is built when the unit's fields are asked for (a filter,
	// the detail pane, JSON), not for every publish that only prints its
	// summary.
	p.u.Dissect = (&routed{dissect: p.u.Dissect, r: r, err: err, mandatory: p.mandatory}).fields
	a.release()
}

// routed is a publish's route explanation, added to the fields its own
// dissector gives.
type routed struct {
	dissect   func(*decode.Unit) []*decode.Field
	r         state.Route
	err       error
	mandatory bool
	tree      []byte // a thawed explanation: its tree as decode.AppendFields wrote it
}

func (x *routed) fields(u *decode.Unit) []*decode.Field {
	var fs []*decode.Field
	if x.dissect != nil {
		fs = x.dissect(u)
	}
	if x.tree != nil {
		// Read afresh for each caller, as a dissector builds its tree:
		// whoever reads one may change it.
		t, _, _ := decode.ReadFields(x.tree)
		return append(fs[:len(fs):len(fs)], t...)
	}
	return append(fs[:len(fs):len(fs)], routeTree(x.r, x.err, x.mandatory))
}

// A store may freeze an explained publish (decode.RegisterDissectState):
// its own dissector, then the explanation's tree.
func init() {
	if decode.ReceiverLayout(func(p *routed) func(*decode.Unit) []*decode.Field { return p.fields }) {
		decode.RegisterDissectState((&routed{}).fields, freezeRouted, thawRouted)
	}
}

func freezeRouted(u *decode.Unit, b []byte) ([]byte, bool) {
	x := decode.Receiver[routed](u.Dissect)
	b, ok := decode.AppendDissect(b, u, x.dissect)
	if !ok {
		return b, false
	}
	if x.tree != nil {
		return append(b, x.tree...), true
	}
	return decode.AppendFields(b, []*decode.Field{routeTree(x.r, x.err, x.mandatory)})
}

func thawRouted(u *decode.Unit, b []byte) (func(*decode.Unit) []*decode.Field, error) {
	dissect, rest, err := decode.ThawDissect(u, b)
	if err != nil {
		return nil, err
	}
	// The tree is checked once here and kept as its bytes, copied: they
	// are a slice of the block the store read, which they would keep.
	if _, _, err := decode.ReadFields(rest); err != nil {
		return nil, err
	}
	return (&routed{dissect: dissect, tree: bytes.Clone(rest)}).fields, nil
}

// explain is Explain, from the cache when the publish has no headers (a
// headers table can route it: by a headers exchange, CC and BCC) and the
// topology has not changed since the explanation was made.
func (a *RouteAnnotator) explain(vhost, exchange, routingKey string, headers amqp091.Table) (state.Route, error) {
	if a.Version == nil || len(headers) > 0 {
		return a.Explain(vhost, exchange, routingKey, headers)
	}
	v := a.Version() // before explaining: a change meanwhile makes the entry stale
	if a.cache == nil || v != a.cacheAt || len(a.cache) >= maxCachedRoutes {
		if a.cache == nil {
			a.cache = map[routeKey]explained{}
		}
		clear(a.cache)
		a.cacheAt = v
	}
	k := routeKey{vhost, exchange, routingKey}
	if e, ok := a.cache[k]; ok {
		return e.r, e.err
	}
	r, err := a.Explain(vhost, exchange, routingKey, nil)
	a.cache[k] = explained{r, err}
	return r, err
}

// release sends on the held units up to the first publish still waiting.
func (a *RouteAnnotator) release() {
	n := 0
	for _, u := range a.held {
		if u.Type == "basic.publish" && u.Dir == decode.DirF {
			if p, ok := a.open[chanKey{u.Conn, u.Channel}]; ok && p.u == u {
				break
			}
		}
		a.Next(u)
		n++
	}
	if n == 0 {
		return
	}
	rest := copy(a.held, a.held[n:])
	clear(a.held[rest:])
	a.held = a.held[:rest]
}

// routeTree is the broker.route field of a publish.
func routeTree(r state.Route, err error, mandatory bool) *decode.Field {
	root := &decode.Field{Key: "broker", Name: "broker"}
	rt := root.Add(&decode.Field{Key: "route", Name: "broker.route"})
	if err != nil {
		rt.Add(&decode.Field{Key: "error", Name: "broker.route.error", Value: err.Error()})
		rt.Add(&decode.Field{Key: "queues", Name: "broker.route.queues", Value: int64(0)})
		return root
	}
	rt.Add(&decode.Field{Key: "queues", Name: "broker.route.queues", Value: int64(len(r.Queues))})
	if len(r.Queues) > 0 {
		qs := rt.Add(&decode.Field{Key: "reached", Display: strconv.Itoa(len(r.Queues))})
		for _, q := range r.Queues {
			qs.Add(&decode.Field{Key: "queue", Name: "broker.route.queue", Value: q})
		}
	}
	rt.Add(&decode.Field{Key: "unroutable", Name: "broker.route.unroutable", Value: r.Unroutable})
	rt.Add(&decode.Field{Key: "returned", Name: "broker.route.returned", Value: r.Unroutable && mandatory})
	ex := rt.Add(&decode.Field{Key: "explain"})
	for _, l := range r.Lines {
		ex.Add(&decode.Field{Key: "line", Name: "broker.route.line", Value: l})
	}
	return root
}

// framePayload is a whole frame's payload (Raw holds the frame).
func framePayload(raw []byte) ([]byte, bool) {
	if len(raw) < 8 {
		return nil, false
	}
	n := int(raw[3])<<24 | int(raw[4])<<16 | int(raw[5])<<8 | int(raw[6])
	if n != len(raw)-8 {
		return nil, false
	}
	return raw[7 : 7+n], true
}

func parseMethod(raw []byte) amqp091.Method {
	payload, ok := framePayload(raw)
	if !ok {
		return nil
	}
	m, err := amqp091.ParseMethod(payload)
	if err != nil {
		return nil
	}
	return m
}
