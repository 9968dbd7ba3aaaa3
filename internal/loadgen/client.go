package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// A route is where a producer publishes, as strings for amqp091-go and as
// bytes for wiretap's codec, made once so publishing converts nothing.
type route struct {
	exchange, key   string
	exchangeB, keyB []byte
}

func newRoute(exchange, key string) route {
	return route{exchange, key, []byte(exchange), []byte(key)}
}

// confirmFunc receives a publisher confirm: the delivery tag, whether it
// covers every tag up to it, and ack (false for basic.nack).
type confirmFunc func(tag uint64, multiple, ack bool)

// publisher is one producer's connection and channel.
type publisher interface {
	// publish sends one message; body may be reused once it returns. The
	// message may wait in a buffer until flush.
	publish(r *route, body []byte) error
	// flush writes what publish buffered.
	flush() error
	// failed returns the error that closed the channel or connection
	// from the broker's side, if any.
	failed() error
	// interrupt makes a publish or flush blocked on the socket return;
	// it may be called from any goroutine, and close must still follow.
	interrupt()
	close()
}

// delivery is what a consumer learns of a message: its tag and the
// publish time the body starts with (ok false when the body is too short).
type deliveryFunc func(tag uint64, sentNs int64, ok bool) error

// subscriber is one consumer's connection and channel.
type subscriber interface {
	// consume calls onDelivery for each message until ctx ends (then it
	// returns nil) or the broker closes the channel.
	consume(ctx context.Context, onDelivery deliveryFunc) error
	// ack acknowledges, from within onDelivery.
	ack(tag uint64, multiple bool) error
	close()
}

// closeGrace bounds how long closing a connection waits for the broker's
// close-ok, so a flooded broker cannot stretch a run past its -z.
const closeGrace = time.Second

func dialPublisher(cfg *Config, name string, onConfirm confirmFunc, onReturn func()) (publisher, error) {
	if cfg.Client == ClientAMQP091 {
		return dialGoPublisher(cfg, name, onConfirm, onReturn)
	}
	return dialWirePublisher(cfg, name, onConfirm, onReturn)
}

func dialSubscriber(cfg *Config, name, queue string) (subscriber, error) {
	if cfg.Client == ClientAMQP091 {
		return dialGoSubscriber(cfg, name, queue)
	}
	return dialWireSubscriber(cfg, name, queue)
}

func dialGo(cfg *Config, name string) (*amqp.Connection, *amqp.Channel, error) {
	conn, err := amqp.DialConfig(cfg.URI, amqp.Config{
		Properties: amqp.Table{"connection_name": "wiretap bench " + cfg.ID + " " + name},
	})
	if err != nil {
		return nil, nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, ch, nil
}

// goPublisher publishes through amqp091-go.
type goPublisher struct {
	conn   *amqp.Connection
	ch     *amqp.Channel
	msg    amqp.Publishing
	closed chan *amqp.Error
	done   chan struct{}
}

func dialGoPublisher(cfg *Config, name string, onConfirm confirmFunc, onReturn func()) (publisher, error) {
	conn, ch, err := dialGo(cfg, name)
	if err != nil {
		return nil, err
	}
	p := &goPublisher{conn: conn, ch: ch, closed: ch.NotifyClose(make(chan *amqp.Error, 1)), done: make(chan struct{})}
	p.msg = amqp.Publishing{ContentType: "application/octet-stream"}
	if cfg.Persistent {
		p.msg.DeliveryMode = amqp.Persistent
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for range returns {
			onReturn()
		}
	}()
	if cfg.ConfirmBatch > 0 {
		if err := ch.Confirm(false); err != nil {
			conn.Close()
			return nil, err
		}
		// amqp091-go hands out confirms one tag at a time, in order,
		// having split the broker's multiple acks.
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, cfg.ConfirmBatch))
		go func() {
			for c := range confirms {
				onConfirm(c.DeliveryTag, false, c.Ack)
			}
		}()
	}
	return p, nil
}

func (p *goPublisher) publish(r *route, body []byte) error {
	p.msg.Body = body
	// The library writes the frames before returning, so the body can be
	// reused.
	return p.ch.Publish(r.exchange, r.key, false, false, p.msg)
}

func (p *goPublisher) flush() error { return nil }

func (p *goPublisher) failed() error {
	select {
	case err, ok := <-p.closed:
		if ok && err != nil {
			return err
		}
		return errors.New("channel closed")
	default:
		return nil
	}
}

// interrupt closes the connection: amqp091-go is safe for that from any
// goroutine, and a publish waiting on the socket then fails.
func (p *goPublisher) interrupt() { go p.close() }

func (p *goPublisher) close() { _ = p.conn.CloseDeadline(time.Now().Add(closeGrace)) }

// goSubscriber consumes through amqp091-go.
type goSubscriber struct {
	conn       *amqp.Connection
	ch         *amqp.Channel
	deliveries <-chan amqp.Delivery
}

func dialGoSubscriber(cfg *Config, name, queue string) (subscriber, error) {
	conn, ch, err := dialGo(cfg, name)
	if err != nil {
		return nil, err
	}
	if cfg.Prefetch > 0 {
		if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
			conn.Close()
			return nil, err
		}
	}
	deliveries, err := ch.Consume(queue, "", cfg.AutoAck, false, false, false, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &goSubscriber{conn: conn, ch: ch, deliveries: deliveries}, nil
}

func (s *goSubscriber) consume(ctx context.Context, onDelivery deliveryFunc) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-s.deliveries:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("delivery channel closed by the broker")
			}
			var sent int64
			long := len(d.Body) >= bodyHeader
			if long {
				sent = int64(binary.BigEndian.Uint64(d.Body))
			}
			if err := onDelivery(d.DeliveryTag, sent, long); err != nil {
				return err
			}
		}
	}
}

func (s *goSubscriber) ack(tag uint64, multiple bool) error { return s.ch.Ack(tag, multiple) }

func (s *goSubscriber) close() { _ = s.conn.CloseDeadline(time.Now().Add(closeGrace)) }
