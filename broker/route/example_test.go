package route_test

import (
	"fmt"

	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// A broker keeps one Index per exchange and one Resolver per channel.
func ExampleResolver() {
	orders := route.New(route.Topic)
	orders.Add(route.Binding{Dest: route.Dest{Kind: route.Queue, Name: "eu-orders"}, Key: "orders.eu.#"})
	orders.Add(route.Binding{Dest: route.Dest{Kind: route.Exchange, Name: "audit"}, Key: "orders.#"})
	audit := route.New(route.Fanout)
	audit.Add(route.Binding{Dest: route.Dest{Kind: route.Queue, Name: "audit-log"}})
	lost := route.New(route.Fanout)
	lost.Add(route.Binding{Dest: route.Dest{Kind: route.Queue, Name: "unrouted"}})

	exchanges := map[string]struct {
		ix        *route.Index
		alternate string
	}{"orders": {orders, "lost"}, "audit": {audit, ""}, "lost": {lost, ""}}
	r := &route.Resolver{Lookup: func(name string) (*route.Index, string, bool) {
		x, ok := exchanges[name]
		return x.ix, x.alternate, ok
	}}
	var queues []route.Dest
	for _, key := range []string{"orders.eu.created", "orders.us.created", "invoices.eu"} {
		queues = r.Resolve("orders", []byte(key), nil, queues[:0])
		fmt.Println(key, queues)
	}
	// Output:
	// orders.eu.created [queue 'eu-orders' queue 'audit-log']
	// orders.us.created [queue 'audit-log']
	// invoices.eu [queue 'unrouted']
}

func ExampleIndex_Explain() {
	ix := route.New(route.Headers)
	args := amqp091.Table(nil).
		Append("x-match", amqp091.StringValue("any")).
		Append("format", amqp091.StringValue("pdf")).
		Append("size", amqp091.Int32Value(10))
	ix.Add(route.Binding{Dest: route.Dest{Name: "reports"}, Args: args})
	headers := amqp091.Table(nil).
		Append("format", amqp091.StringValue("doc")).
		Append("size", amqp091.Int8Value(10))
	for _, m := range ix.Explain(nil, headers) {
		fmt.Println(m.Binding.Dest, m.Matched)
		fmt.Println(m.Why)
	}
	// Output:
	// queue 'reports' true
	// x-match=any: "format" is "doc", not "pdf", "size" = 10: matched
}
