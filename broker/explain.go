package broker

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/wiretap-dev/wiretap/broker/definitions"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/broker/state"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The broker explains routes for the TUI.
var _ state.RouteExplainer = (*Broker)(nil)

// ExplainRoute says how a publish to exchange with routingKey and headers
// would be routed now: exchange by exchange, every binding with whether
// and why it matched, the alternate exchanges and exchange-to-exchange
// bindings followed, the queues reached, and whether a mandatory publish
// would come back. It routes nothing.
func (b *Broker) ExplainRoute(vhostName, exchange, routingKey string, headers map[string]any) (state.Route, error) {
	hdrs, err := definitions.ToTable(headers)
	if err != nil {
		return state.Route{VHost: vhostName, Exchange: exchange, RoutingKey: routingKey}, errors.New("broker: headers: " + err.Error())
	}
	return b.explain(vhostName, exchange, routingKey, hdrs, false)
}

// ExplainPublish is ExplainRoute for a publish as it passed, with its own
// headers table (CC and BCC included), and brief: of each exchange's
// bindings it lists those that lead to where the message went, and counts
// the others, so that it stays cheap on a large topology (RouteAnnotator
// calls it for every publish; see BenchmarkExplainPublish).
func (b *Broker) ExplainPublish(vhostName, exchange, routingKey string, hdrs amqp091.Table) (state.Route, error) {
	return b.explain(vhostName, exchange, routingKey, hdrs, true)
}

func (b *Broker) explain(vhostName, exchange, routingKey string, hdrs amqp091.Table, brief bool) (state.Route, error) {
	r := state.Route{VHost: vhostName, Exchange: exchange, RoutingKey: routingKey}
	v := b.vhost(vhostName)
	if v == nil {
		return r, errors.New("broker: no vhost '" + vhostName + "'")
	}
	keys, err := route.RoutingKeys([]byte(routingKey), hdrs, nil)
	if err != nil {
		return r, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if exchange == "" {
		// The default exchange binds every queue by its name.
		for _, k := range keys {
			if _, ok := v.queues[string(k)]; ok {
				r.Lines = append(r.Lines, "default exchange: queue '"+string(k)+"' is named by the routing key")
				r.Queues = append(r.Queues, string(k))
			} else {
				r.Lines = append(r.Lines, "default exchange: no queue is named '"+string(k)+"'")
			}
		}
		r.Unroutable = len(r.Queues) == 0
		return r, nil
	}
	x, ok := v.exchanges[exchange]
	if !ok {
		return r, errors.New("NOT_FOUND - no " + rsExchange(exchange, vhostName))
	}
	if x.internal {
		return r, errors.New("ACCESS_REFUSED - cannot publish to internal " + rsExchange(exchange, vhostName))
	}
	res := route.Resolver{
		Lookup: func(name string) (*route.Index, string, bool) {
			x, ok := v.exchanges[name]
			if !ok {
				return nil, "", false
			}
			x.routeMu.Lock()
			return x.index, x.alternate, true
		},
		Release:    func(name string) { v.exchanges[name].routeMu.Unlock() },
		RoutedOnly: brief,
	}
	queues, hops := res.ExplainKeys(exchange, keys, hdrs)
	for _, h := range hops {
		r.Lines = append(r.Lines, hopLine(h))
		for _, m := range h.Matches {
			mark := "✗"
			if m.Matched {
				mark = "✓"
			}
			line := "  " + mark + " " + m.Binding.Dest.String() + bindingText(h.Kind, m.Binding)
			if m.Why != "" {
				line += ": " + m.Why
			}
			r.Lines = append(r.Lines, line)
		}
		switch {
		case h.Unexplained > 0:
			r.Lines = append(r.Lines, "  ("+plural(h.Unexplained, "other binding")+" matched nothing)")
		case len(h.Matches) == 0 && !h.Missing && !h.Repeated:
			r.Lines = append(r.Lines, "  (no bindings)")
		}
	}
	for _, q := range queues {
		r.Queues = append(r.Queues, q.Name)
	}
	r.Unroutable = len(r.Queues) == 0
	if r.Unroutable {
		r.Lines = append(r.Lines, "unroutable: a mandatory publish would be returned (312 NO_ROUTE); otherwise dropped")
	} else {
		r.Lines = append(r.Lines, "→ "+plural(len(r.Queues), "queue")+": "+strings.Join(r.Queues, ", "))
	}
	return r, nil
}

func hopLine(h route.Hop) string {
	s := "exchange '" + h.Exchange + "' (" + h.Kind.String() + ")"
	switch {
	case h.From != "" && h.Alternate:
		s += ", the alternate exchange of '" + h.From + "', which routed nowhere"
	case h.From != "":
		s += ", bound from '" + h.From + "'"
	}
	switch {
	case h.Missing:
		s += ": does not exist, skipped"
	case h.Repeated:
		s += ": reached already, not routed through again"
	}
	return s
}

func bindingText(k route.Kind, b route.Binding) string {
	s := ""
	if k != route.Fanout && k != route.Headers {
		s = " key '" + b.Key + "'"
	}
	if len(b.Args) > 0 {
		if m, err := amqp091.Table(b.Args).Map(); err == nil {
			s += " args " + mapText(m)
		}
	}
	return s
}

func mapText(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k + "=" + anyText(m[k]))
	}
	sb.WriteByte('}')
	return sb.String()
}

func anyText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case map[string]any:
		return mapText(v)
	}
	return fmt.Sprint(v)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return itoa(n) + " " + word + "s"
}
