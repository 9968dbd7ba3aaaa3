package broker

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestExplainRoute(t *testing.T) {
	b, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"eu", "all", "pdf", "pdf-any", "lost"} {
		_, err := ch.QueueDeclare(q, false, true, false, false, nil)
		must(err)
	}
	must(ch.ExchangeDeclare("orders", "topic", false, true, false, false, amqp.Table{"alternate-exchange": "lost-x"}))
	must(ch.ExchangeDeclare("lost-x", "fanout", false, true, false, false, nil))
	must(ch.ExchangeDeclare("docs", "headers", false, true, false, false, nil))
	must(ch.QueueBind("eu", "orders.eu.*", "orders", false, nil))
	must(ch.QueueBind("all", "orders.#", "orders", false, nil))
	must(ch.QueueBind("lost", "", "lost-x", false, nil))
	// Two bindings that differ only in their arguments.
	must(ch.QueueBind("pdf", "", "docs", false, amqp.Table{"x-match": "all", "format": "pdf", "type": "report"}))
	must(ch.QueueBind("pdf-any", "", "docs", false, amqp.Table{"x-match": "any", "format": "pdf", "type": "report"}))
	must(ch.ExchangeBind("docs", "*.eu.*", "orders", false, nil)) // exchange to exchange

	r, err := b.ExplainRoute("/", "orders", "orders.eu.paris", map[string]any{"format": "pdf"})
	must(err)
	text := strings.Join(r.Lines, "\n")
	if strings.Join(r.Queues, ",") == "" || r.Unroutable {
		t.Fatalf("no queues:\n%s", text)
	}
	for _, want := range []string{"eu", "all", "pdf-any"} {
		if !strings.Contains(","+strings.Join(r.Queues, ",")+",", ","+want+",") {
			t.Errorf("queue %s not reached:\n%s", want, text)
		}
	}
	for _, bad := range []string{"pdf", "lost"} {
		for _, q := range r.Queues {
			if q == bad {
				t.Errorf("queue %s reached:\n%s", bad, text)
			}
		}
	}
	for _, want := range []string{"exchange 'orders' (topic)", "exchange 'docs' (headers), bound from 'orders'", "✓ queue 'eu' key 'orders.eu.*'", "✗ queue 'pdf'"} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}

	// Nothing matches: the alternate exchange takes it.
	r, err = b.ExplainRoute("/", "orders", "invoices.x", nil)
	must(err)
	text = strings.Join(r.Lines, "\n")
	if strings.Join(r.Queues, ",") != "lost" || !strings.Contains(text, "the alternate exchange of 'orders'") {
		t.Fatalf("want the alternate exchange's queue:\n%s\nqueues %v", text, r.Queues)
	}

	// Unroutable.
	r, err = b.ExplainRoute("/", "amq.direct", "nobody", nil)
	must(err)
	if !r.Unroutable || !strings.Contains(strings.Join(r.Lines, "\n"), "312 NO_ROUTE") {
		t.Fatalf("want unroutable: %+v", r)
	}
	if _, err := b.ExplainRoute("/", "nope", "k", nil); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Fatalf("missing exchange: %v", err)
	}
}
