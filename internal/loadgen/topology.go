package loadgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// predeclared reports whether the exchange is the broker's own (amq.*),
// used as it is and never declared or deleted.
func predeclared(exchange string) bool { return strings.HasPrefix(exchange, "amq.") }

// declared is what declare made, so that teardown deletes that and nothing
// else (not an exchange of the same name that was there, of another type).
type declared struct {
	exchange bool
	queues   []string
}

// declare makes the exchange, the queues and their bindings (and the extra
// non-matching bindings) through amqp091-go, whichever client the run uses.
// What it made is recorded in d even when it fails halfway.
func declare(cfg *Config, d *declared) error {
	conn, ch, err := dialGo(cfg, "setup")
	if err != nil {
		return fmt.Errorf("loadgen: connecting to %s: %w", redact(cfg.URI), err)
	}
	defer conn.CloseDeadline(time.Now().Add(closeGrace))
	if !predeclared(cfg.Exchange) {
		if err := ch.ExchangeDeclare(cfg.Exchange, cfg.ExchangeType, false, false, false, false, nil); err != nil {
			return fmt.Errorf("loadgen: exchange.declare %q: %w", cfg.Exchange, err)
		}
		d.exchange = true
	}
	for i, q := range cfg.queues {
		if _, err := ch.QueueDeclare(q, cfg.Persistent, false, false, false, nil); err != nil {
			return fmt.Errorf("loadgen: queue.declare %q: %w", q, err)
		}
		d.queues = append(d.queues, q)
		if cfg.Exchange == "amq.default" {
			continue
		}
		if err := ch.QueueBind(q, bindingKey(cfg, i), cfg.Exchange, false, nil); err != nil {
			return fmt.Errorf("loadgen: queue.bind %q to %q: %w", q, cfg.Exchange, err)
		}
	}
	for i := range cfg.Bindings {
		key := "wiretap.other-" + strconv.Itoa(i)
		if cfg.ExchangeType == amqp.ExchangeTopic {
			key += ".*"
		}
		if err := ch.QueueBind(cfg.queues[0], key, cfg.Exchange, false, nil); err != nil {
			return fmt.Errorf("loadgen: extra binding %d: %w", i, err)
		}
	}
	return nil
}

// teardown deletes what declare made: the queues (their bindings go with
// them) and the exchange.
func teardown(cfg *Config, d *declared) {
	if !d.exchange && len(d.queues) == 0 {
		return
	}
	conn, ch, err := dialGo(cfg, "teardown")
	if err != nil {
		return
	}
	defer conn.CloseDeadline(time.Now().Add(closeGrace))
	for _, q := range d.queues {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			return // the channel is closed; nothing more can be done on it
		}
	}
	if d.exchange {
		_ = ch.ExchangeDelete(cfg.Exchange, false, false)
	}
}

// redact hides the password in a URI for messages.
func redact(uri string) string {
	u, err := amqp.ParseURI(uri)
	if err != nil {
		return "the broker"
	}
	u.Password = "xxx"
	return u.String()
}
