package broker

import (
	"strings"

	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// The AMQP 1.0 side of RouteAnnotator: a message a client publishes over
// 1.0 is explained as the broker routes it. Its exchange and routing key
// come from its link's target (/queues/NAME, /exchanges/NAME/KEY,
// /exchanges/NAME with the subject as the key, the 3.x forms too) or,
// for the anonymous terminus, from its properties.to; a headers exchange
// sees its application-properties (and x- message annotations) as the
// broker does. The fields go on the transfer that completes the message.
// 1.0 has no mandatory flag: broker.route.returned stays false, and an
// unroutable unsettled message is answered released.

// linkKey names a link by its connection, session channel and handle.
type linkKey struct {
	conn    *decode.Conn
	channel uint16
	handle  uint32
}

// route10 is where a publisher link's messages go.
type route10 struct {
	exchange, key string
	isQueue       bool
	anonymous     bool // the null target: properties.to says, message by message
}

// sink10 takes a client's AMQP 1.0 unit (Parent nil, Dir F).
func (a *RouteAnnotator) sink10(u *decode.Unit) {
	switch u.Type {
	case "transfer":
		// The completed message says its link: the performative need not
		// be read again.
		if m := amqp10.MessageOf(u); m != nil {
			k, l := linkKey{u.Conn, m.Channel, m.Handle}, &a.last10
			r, ok := l.route, l.hasLink && l.link == k
			if !ok {
				if r, ok = a.links10[k]; ok {
					l.link, l.route, l.hasLink = k, r, true
				}
			}
			if ok {
				a.annotate10(u, m, r)
			}
		}
		a.pass(u)
		return
	case "open", "attach", "detach", "close":
		a.last10.hasLink = false // links10 may change
	default:
		a.pass(u)
		return
	}
	var f amqp10.Frame
	if n, err := amqp10.ParseFrame(u.Raw, &f); err != nil || n == 0 {
		a.pass(u)
		return
	}
	b := u.Raw
	if err := amqp10.ScanComposite(b, f.BodyOffset(), &a.comp10); err != nil {
		a.pass(u)
		return
	}
	comp := &a.comp10
	if a.vhosts == nil {
		a.vhosts = map[*decode.Conn]string{}
		a.open = map[chanKey]pendingPublish{}
	}
	if a.links10 == nil {
		a.links10 = map[linkKey]route10{}
	}
	switch u.Type {
	case "open":
		host, _ := comp.Bytes(b, 1)
		name := "/"
		if h := string(host); strings.HasPrefix(h, "vhost:") {
			name = h[len("vhost:"):]
		}
		a.vhosts[u.Conn] = name
	case "close":
		delete(a.vhosts, u.Conn)
		for k := range a.links10 {
			if k.conn == u.Conn {
				delete(a.links10, k)
			}
		}
	case "attach":
		handle, ok := comp.Uint(b, 1)
		if role, _ := comp.Bool(b, 2); !ok || role != roleSender {
			break
		}
		k := linkKey{u.Conn, f.Channel, uint32(handle)}
		addr, ok := terminusAddress(b, comp, 6)
		if !ok {
			a.links10[k] = route10{anonymous: true}
			break
		}
		if r, ok := route10Of(addr); ok {
			a.links10[k] = r
		} else {
			delete(a.links10, k) // the broker refuses the link
		}
	case "detach":
		if handle, ok := comp.Uint(b, 0); ok {
			delete(a.links10, linkKey{u.Conn, f.Channel, uint32(handle)})
		}
	}
	a.pass(u)
}

// route10Of reads an address as the broker does: v2, else the 3.x forms.
func route10Of(addr string) (route10, bool) {
	x, key, isQueue, ok := parseAddress(addr)
	if !ok {
		x, key, isQueue, ok = parseAddressV1(addr)
	}
	if !ok {
		return route10{}, false
	}
	if isQueue {
		return route10{key: key, isQueue: true}, true
	}
	return route10{exchange: x, key: key}, true
}

// annotate10 adds broker.route.* to the transfer u that completes m, sent
// on a link to r.
func (a *RouteAnnotator) annotate10(u *decode.Unit, m *amqp10.CompletedMessage, r route10) {
	b := m.Bytes
	pm := &m.Message
	if r.anonymous {
		to := properties10(b, pm, propertiesTo)
		var ok bool
		if r, ok = route10Of(to); !ok {
			return // refused by the broker, which says why
		}
	}
	if !r.isQueue && r.key == "" {
		r.key = properties10(b, pm, propertiesSubject)
	}
	vhost, ok := a.vhosts[u.Conn]
	if !ok {
		vhost = "/"
	}
	var annotations *amqp10.Section
	for i := range pm.Sections {
		if pm.Sections[i].Descriptor == amqp10.DescriptorMessageAnnotations {
			annotations = &pm.Sections[i]
		}
	}
	if a.scratch10 == nil {
		a.scratch10 = &conn10{}
	}
	headers := a.scratch10.routingHeaders(b, pm, annotations)
	var route state.Route
	var err error
	if l := &a.last10; len(headers) == 0 && a.Version != nil {
		// A stream of publishes mostly repeats the last one's route:
		// compared, it costs none of the cache's hashing.
		if v := a.Version(); l.hasRoute && l.at == v && l.vhost == vhost && l.exchange == r.exchange && l.key == r.key {
			route, err = l.explained.r, l.explained.err
		} else {
			route, err = a.explain(vhost, r.exchange, r.key, headers)
			l.vhost, l.exchange, l.key, l.at, l.explained, l.hasRoute = vhost, r.exchange, r.key, v, explained{route, err}, true
		}
	} else {
		route, err = a.explain(vhost, r.exchange, r.key, headers)
	}
	if len(a.routed10) == 0 {
		// Every 1.0 publish gets one: carved from a slab, as the
		// decoder carves units.
		a.routed10 = make([]routed, routedSlab)
	}
	x := &a.routed10[0]
	a.routed10 = a.routed10[1:]
	*x = routed{dissect: u.Dissect, r: route, err: err}
	u.Dissect = x.fields
}

// last10 is the last 1.0 publisher link a transfer was on, and the last
// route explained for a 1.0 publish without headers, with the topology
// version it was explained at.
type last10 struct {
	link                 linkKey
	route                route10
	hasLink              bool
	vhost, exchange, key string
	at                   uint64
	explained            explained
	hasRoute             bool
}

// routedSlab is the number of explanations in a slab of routed10.
const routedSlab = 32

// properties10 is the string field i of message b's properties section.
func properties10(b []byte, pm *amqp10.Message, i int) string {
	if pm.Properties < 0 {
		return ""
	}
	var p amqp10.Composite
	if p.Set(b, pm.Sections[pm.Properties].Value) != nil {
		return ""
	}
	s, _ := p.Bytes(b, i)
	return string(s)
}
