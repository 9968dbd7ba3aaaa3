package rabbitdiff

import (
	"context"
	"errors"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Helpers for the amqp091-go workloads. Each wait is bounded by
// DefaultStepTimeout; synchronous calls are bounded by the relay's
// watchdog, which closes the connection under a call that gets no reply.

// Workloads returns every workload, in a stable order.
func Workloads() []Workload {
	var all []Workload
	for _, group := range [][]Workload{
		negotiationWorkloads(),
		framingWorkloads(),
		exchangeWorkloads(),
		queueWorkloads(),
		deadLetterWorkloads(),
		publishWorkloads(),
		consumeWorkloads(),
		errorWorkloads(),
		edgeWorkloads(),
		pythonWorkloads(),
	} {
		all = append(all, group...)
	}
	return all
}

// goConn runs f on a fresh amqp091-go connection and closes it after.
func goConn(f func(ctx context.Context, e *Env, c *amqp.Connection) error) func(context.Context, *Env) error {
	return func(ctx context.Context, e *Env) error {
		c, err := e.Dial()
		if err != nil {
			return err
		}
		ferr := f(ctx, e, c)
		cerr := c.Close()
		if errors.Is(cerr, amqp.ErrClosed) {
			cerr = nil // the workload closed it, or the server did on purpose
		}
		return errors.Join(ferr, cerr)
	}
}

// pubCh is a channel in confirm mode whose publishes wait for their
// confirm, so the message is in its queues before the next step.
type pubCh struct {
	*amqp.Channel
	confirms chan amqp.Confirmation
}

func confirmChannel(c *amqp.Connection) (*pubCh, error) {
	ch, err := c.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		return nil, err
	}
	return &pubCh{Channel: ch, confirms: ch.NotifyPublish(make(chan amqp.Confirmation, 64))}, nil
}

// send publishes and waits for the confirm; a nack is not an error (the
// transcript shows it).
func (p *pubCh) send(exchange, key string, msg amqp.Publishing) error {
	return p.sendFlags(exchange, key, false, msg)
}

func (p *pubCh) sendFlags(exchange, key string, mandatory bool, msg amqp.Publishing) error {
	if err := p.Publish(exchange, key, mandatory, false, msg); err != nil {
		return err
	}
	select {
	case _, ok := <-p.confirms:
		if !ok {
			return errors.New("channel closed before the confirm")
		}
		return nil
	case <-time.After(DefaultStepTimeout):
		return errors.New("no confirm within " + DefaultStepTimeout.String())
	}
}

// text is a plain message with a body.
func text(body string) amqp.Publishing {
	return amqp.Publishing{ContentType: "text/plain", Body: []byte(body)}
}

// next waits for one delivery.
func next(d <-chan amqp.Delivery) (amqp.Delivery, error) {
	select {
	case m, ok := <-d:
		if !ok {
			return m, errors.New("deliveries ended")
		}
		return m, nil
	case <-time.After(DefaultStepTimeout):
		return amqp.Delivery{}, errors.New("no delivery within " + DefaultStepTimeout.String())
	}
}

// nextN waits for n deliveries.
func nextN(d <-chan amqp.Delivery, n int) ([]amqp.Delivery, error) {
	var out []amqp.Delivery
	for range n {
		m, err := next(d)
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
	return out, nil
}

// quiet waits for d and fails if a delivery arrives meanwhile.
func quiet(ds <-chan amqp.Delivery, d time.Duration) error {
	select {
	case m, ok := <-ds:
		if ok {
			return errors.New("unexpected delivery of " + strconv.Quote(string(m.Body)))
		}
	case <-time.After(d):
	}
	return nil
}

// declare is a queue.declare with the workload's common defaults: not
// durable, not exclusive, not auto-delete.
func declare(ch *amqp.Channel, name string, args amqp.Table) error {
	_, err := ch.QueueDeclare(name, false, false, false, false, args)
	return err
}

// waitCancel waits for a server-sent basic.cancel.
func waitCancel(c <-chan string) (string, error) {
	select {
	case tag := <-c:
		return tag, nil
	case <-time.After(DefaultStepTimeout):
		return "", errors.New("no basic.cancel within " + DefaultStepTimeout.String())
	}
}

// codeOf is the AMQP reply code of err, 0 if it carries none.
func codeOf(err error) int {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// scene is a connection with a confirm-mode publishing channel (channel 1)
// and a plain channel (channel 2) for everything else.
type scene struct {
	ctx context.Context
	e   *Env
	c   *amqp.Connection
	p   *pubCh
	ch  *amqp.Channel
}

// goScene runs f on a fresh scene.
func goScene(f func(s *scene) error) func(context.Context, *Env) error {
	return goConn(func(ctx context.Context, e *Env, c *amqp.Connection) error {
		p, err := confirmChannel(c)
		if err != nil {
			return err
		}
		ch, err := c.Channel()
		if err != nil {
			return err
		}
		return f(&scene{ctx: ctx, e: e, c: c, p: p, ch: ch})
	})
}

// reopen replaces the plain channel, after the server closed it.
func (s *scene) reopen() error {
	ch, err := s.c.Channel()
	if err != nil {
		return err
	}
	s.ch = ch
	return nil
}

// expectClosed runs a call that must fail with a channel error and opens
// a fresh plain channel after it. A call that succeeds is noted, not
// failed: the transcript shows the difference.
func (s *scene) expectClosed(what string, err error) error {
	if err == nil {
		s.e.Note(what + ": succeeded")
		return nil
	}
	return s.reopen()
}

// send publishes through the confirm channel and waits for the confirm.
func (s *scene) send(exchange, key string, msg amqp.Publishing) error {
	return s.p.send(exchange, key, msg)
}

// sendText publishes a text/plain body.
func (s *scene) sendText(exchange, key, body string) error {
	return s.p.send(exchange, key, text(body))
}

// drain runs basic.get (no-ack) on queue until it is empty, at most 50
// times; the transcript shows what came back.
func (s *scene) drain(queue string) error {
	for range 50 {
		_, ok, err := s.ch.Get(queue, true)
		if err != nil || !ok {
			return err
		}
	}
	return errors.New("queue " + queue + " did not empty in 50 gets")
}

// queue declares a non-durable queue under the run's prefix.
func (s *scene) queue(name string, args amqp.Table) (string, error) {
	q := s.e.Queue(name)
	return q, declare(s.ch, q, args)
}

// exchange declares a non-durable exchange under the run's prefix.
func (s *scene) exchange(name, kind string, args amqp.Table) (string, error) {
	x := s.e.Exchange(name)
	return x, s.ch.ExchangeDeclare(x, kind, false, false, false, false, args)
}

// consume starts a consumer with an explicit tag (amqp091-go's generated
// tags name the test binary and a process-wide counter).
func (s *scene) consume(ch *amqp.Channel, queue, tag string, autoAck bool, args amqp.Table) (<-chan amqp.Delivery, error) {
	return ch.Consume(queue, tag, autoAck, false, false, false, args)
}

// waitClose waits for the server to close ch and returns its error.
func waitClose(ch *amqp.Channel) (*amqp.Error, error) {
	c := ch.NotifyClose(make(chan *amqp.Error, 1))
	select {
	case err := <-c:
		return err, nil
	case <-time.After(DefaultStepTimeout):
		return nil, errors.New("channel not closed within " + DefaultStepTimeout.String())
	}
}
