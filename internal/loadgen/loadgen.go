package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Config describes one run. The zero value of each field but URI and
// Duration means its PerfTest default.
type Config struct {
	// URI is the broker, amqp://user:pass@host:port/vhost.
	URI string
	// Producers (-x) and Consumers (-y): connections, one channel each.
	// Defaults 1 and 1; a negative count means none.
	Producers, Consumers int
	// Size (-s) is the message body size in bytes; at least 12, the
	// timestamp and sequence number. Default 12.
	Size int
	// Duration (-z) bounds the run; required.
	Duration time.Duration
	// ExchangeType (-t): direct, fanout, topic or headers. Default direct.
	ExchangeType string
	// Exchange and Queue name the topology the run declares. Defaults
	// "wiretap.bench-<type>" (so runs of different exchange types never
	// collide on one name) and "wiretap.bench.<random>"; the queue is
	// deleted at the end.
	Exchange, Queue string
	// AutoAck (-a): consumers do not acknowledge.
	AutoAck bool
	// Prefetch (-q) is each consumer's basic.qos prefetch count; 0 is none.
	Prefetch int
	// ConfirmBatch (-c): with publisher confirms, at most this many
	// unconfirmed messages per producer; 0 disables confirms.
	ConfirmBatch int
	// Persistent publishes with delivery-mode 2.
	Persistent bool
	// JSON prints one JSON object per line instead of PerfTest's text.
	JSON bool
	// Interval between progress lines. Default 1s.
	Interval time.Duration
	// ID names the run in the output. Default "test-HHMMSS-mmm".
	ID string
}

func (c *Config) setDefaults() error {
	if c.URI == "" {
		return errors.New("loadgen: no broker URI")
	}
	if c.Duration <= 0 {
		return errors.New("loadgen: duration must be positive (the run must end by itself)")
	}
	if c.Producers == 0 {
		c.Producers = 1
	}
	if c.Consumers == 0 {
		c.Consumers = 1
	}
	c.Producers, c.Consumers = max(c.Producers, 0), max(c.Consumers, 0)
	if c.Producers == 0 && c.Consumers == 0 {
		return errors.New("loadgen: no producers and no consumers")
	}
	if c.Size == 0 {
		c.Size = bodyHeader
	}
	if c.Size < bodyHeader {
		return fmt.Errorf("loadgen: message size %d is under the %d bytes of timestamp and sequence", c.Size, bodyHeader)
	}
	switch c.ExchangeType {
	case "":
		c.ExchangeType = amqp.ExchangeDirect
	case amqp.ExchangeDirect, amqp.ExchangeFanout, amqp.ExchangeTopic, amqp.ExchangeHeaders:
	default:
		return fmt.Errorf("loadgen: unknown exchange type %q (want direct, fanout, topic or headers)", c.ExchangeType)
	}
	if c.Prefetch < 0 || c.ConfirmBatch < 0 {
		return errors.New("loadgen: prefetch and confirm batch cannot be negative")
	}
	if c.Exchange == "" {
		c.Exchange = "wiretap.bench-" + c.ExchangeType
	}
	if c.Queue == "" {
		c.Queue = "wiretap.bench." + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.ID == "" {
		now := time.Now()
		c.ID = fmt.Sprintf("test-%s-%03d", now.Format("150405"), now.Nanosecond()/1e6)
	}
	return nil
}

// bodyHeader is the publish time (Unix ns) and sequence number every body starts with.
const bodyHeader = 12

const routingKey = "wiretap.bench"

// Result is what a run measured.
type Result struct {
	ID        string        `json:"id"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Sent      uint64        `json:"sent"`
	Confirmed uint64        `json:"confirmed"`
	Nacked    uint64        `json:"nacked"`
	Returned  uint64        `json:"returned"`
	Received  uint64        `json:"received"`
	// Average rates over the run, messages per second.
	SendRate    float64 `json:"send_rate"`
	ConfirmRate float64 `json:"confirm_rate"`
	ReceiveRate float64 `json:"receive_rate"`
	// ConsumerLatency is publish to delivery; ConfirmLatency publish to
	// basic.ack (present with confirms).
	ConsumerLatency Percentiles `json:"consumer_latency"`
	ConfirmLatency  Percentiles `json:"confirm_latency"`
}

// stats is shared by every producer and consumer of a run.
type stats struct {
	sent, confirmed, nacked, returned, received atomic.Uint64

	mu                         sync.Mutex
	consumerIvl, consumerTotal histogram
	confirmIvl, confirmTotal   histogram
}

func (s *stats) latency(consumer bool, d time.Duration) {
	s.mu.Lock()
	if consumer {
		s.consumerIvl.record(d)
	} else {
		s.confirmIvl.record(d)
	}
	s.mu.Unlock()
}

// interval returns the percentiles since the last call and folds them into
// the totals.
func (s *stats) interval() (consumer, confirm Percentiles) {
	s.mu.Lock()
	defer s.mu.Unlock()
	consumer, confirm = s.consumerIvl.percentiles(), s.confirmIvl.percentiles()
	s.consumerTotal.add(&s.consumerIvl)
	s.confirmTotal.add(&s.confirmIvl)
	s.consumerIvl.reset()
	s.confirmIvl.reset()
	return consumer, confirm
}

// Run declares the topology, runs the producers and consumers for
// cfg.Duration (or until ctx ends), writes progress to w and returns the
// totals. It returns an error when the broker cannot be reached or the
// topology declared; a producer or consumer that fails midway ends the run
// early with its error.
func Run(ctx context.Context, cfg Config, w io.Writer) (Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return Result{}, err
	}
	if err := declare(cfg); err != nil {
		return Result{}, err
	}
	defer deleteQueue(cfg)

	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		st    stats
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil && ctx.Err() == nil {
			first = err
		}
		errMu.Unlock()
		cancel()
	}
	out := &printer{w: w, cfg: &cfg}
	// Consumers first, so the first messages find someone waiting.
	ready := make(chan error, cfg.Consumers)
	for i := range cfg.Consumers {
		out.starting("consumer", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := consume(ctx, cfg, &st, ready); err != nil {
				fail(fmt.Errorf("loadgen: consumer %d: %w", i, err))
			}
		}()
	}
	for range cfg.Consumers {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			return Result{}, fmt.Errorf("loadgen: starting consumer: %w", err)
		}
	}
	start := time.Now()
	for i := range cfg.Producers {
		out.starting("producer", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := produce(ctx, cfg, &st, i); err != nil {
				fail(fmt.Errorf("loadgen: producer %d: %w", i, err))
			}
		}()
	}

	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	var last [5]uint64
	lastAt := start
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case now := <-tick.C:
			cur := [5]uint64{st.sent.Load(), st.confirmed.Load(), st.nacked.Load(), st.returned.Load(), st.received.Load()}
			secs := now.Sub(lastAt).Seconds()
			var rates [5]float64
			for i := range cur {
				rates[i] = float64(cur[i]-last[i]) / secs
			}
			cl, fl := st.interval()
			out.progress(now.Sub(start), rates, cl, fl)
			last, lastAt = cur, now
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	st.interval()
	res := Result{
		ID: cfg.ID, Elapsed: elapsed,
		Sent: st.sent.Load(), Confirmed: st.confirmed.Load(), Nacked: st.nacked.Load(),
		Returned: st.returned.Load(), Received: st.received.Load(),
		ConsumerLatency: st.consumerTotal.percentiles(),
		ConfirmLatency:  st.confirmTotal.percentiles(),
	}
	if s := elapsed.Seconds(); s > 0 {
		res.SendRate = float64(res.Sent) / s
		res.ConfirmRate = float64(res.Confirmed) / s
		res.ReceiveRate = float64(res.Received) / s
	}
	out.summary(res)
	return res, first
}

func dial(cfg Config, name string) (*amqp.Connection, *amqp.Channel, error) {
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

func declare(cfg Config) error {
	conn, ch, err := dial(cfg, "setup")
	if err != nil {
		return fmt.Errorf("loadgen: connecting to %s: %w", redact(cfg.URI), err)
	}
	defer conn.Close()
	if err := ch.ExchangeDeclare(cfg.Exchange, cfg.ExchangeType, false, false, false, false, nil); err != nil {
		return fmt.Errorf("loadgen: exchange.declare %q: %w", cfg.Exchange, err)
	}
	if _, err := ch.QueueDeclare(cfg.Queue, cfg.Persistent, false, false, false, nil); err != nil {
		return fmt.Errorf("loadgen: queue.declare %q: %w", cfg.Queue, err)
	}
	if err := ch.QueueBind(cfg.Queue, routingKey, cfg.Exchange, false, nil); err != nil {
		return fmt.Errorf("loadgen: queue.bind: %w", err)
	}
	return nil
}

func deleteQueue(cfg Config) {
	conn, ch, err := dial(cfg, "teardown")
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = ch.QueueDelete(cfg.Queue, false, false, false)
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

func produce(ctx context.Context, cfg Config, st *stats, id int) error {
	conn, ch, err := dial(cfg, "producer "+strconv.Itoa(id))
	if err != nil {
		return err
	}
	defer conn.Close()
	returns := ch.NotifyReturn(make(chan amqp.Return, 16))
	go func() {
		for range returns {
			st.returned.Add(1)
		}
	}()
	var (
		confirms chan amqp.Confirmation
		sentAt   []time.Time // publish time by delivery tag, modulo ConfirmBatch
		pending  int
	)
	if cfg.ConfirmBatch > 0 {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		confirms = ch.NotifyPublish(make(chan amqp.Confirmation, cfg.ConfirmBatch))
		sentAt = make([]time.Time, cfg.ConfirmBatch)
	}
	confirm := func(c amqp.Confirmation) {
		pending--
		if c.Ack {
			st.confirmed.Add(1)
		} else {
			st.nacked.Add(1)
		}
		if c.DeliveryTag > 0 {
			st.latency(false, time.Since(sentAt[(c.DeliveryTag-1)%uint64(len(sentAt))]))
		}
	}
	msg := amqp.Publishing{Body: make([]byte, cfg.Size), ContentType: "application/octet-stream"}
	if cfg.Persistent {
		msg.DeliveryMode = amqp.Persistent
	}
	var seq uint32
	for tag := uint64(1); ctx.Err() == nil; tag++ {
		for confirms != nil && pending >= cfg.ConfirmBatch {
			select {
			case c, ok := <-confirms:
				if !ok {
					return errors.New("channel closed while waiting for confirms")
				}
				confirm(c)
			case <-ctx.Done():
				return nil
			}
		}
		now := time.Now()
		binary.BigEndian.PutUint64(msg.Body, uint64(now.UnixNano()))
		binary.BigEndian.PutUint32(msg.Body[8:], seq)
		seq++
		// The library writes the frames before returning, so the body can
		// be reused.
		if err := ch.PublishWithContext(ctx, cfg.Exchange, routingKey, false, false, msg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		st.sent.Add(1)
		if confirms != nil {
			sentAt[(tag-1)%uint64(len(sentAt))] = now
			pending++
		}
	}
	return nil
}

func consume(ctx context.Context, cfg Config, st *stats, ready chan<- error) error {
	conn, ch, err := dial(cfg, "consumer")
	if err != nil {
		ready <- err
		return nil
	}
	defer conn.Close()
	if cfg.Prefetch > 0 {
		if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
			ready <- err
			return nil
		}
	}
	deliveries, err := ch.Consume(cfg.Queue, "", cfg.AutoAck, false, false, false, nil)
	if err != nil {
		ready <- err
		return nil
	}
	ready <- nil
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-deliveries:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("delivery channel closed by the broker")
			}
			if len(d.Body) >= bodyHeader {
				sent := int64(binary.BigEndian.Uint64(d.Body))
				st.latency(true, time.Duration(time.Now().UnixNano()-sent))
			}
			st.received.Add(1)
			if !cfg.AutoAck {
				if err := d.Ack(false); err != nil && ctx.Err() == nil {
					return err
				}
			}
		}
	}
}

// printer writes progress in PerfTest's words, or as JSON lines.
type printer struct {
	w   io.Writer
	cfg *Config
}

func (p *printer) starting(role string, i int) {
	if !p.cfg.JSON {
		fmt.Fprintf(p.w, "id: %s, starting %s #%d\n", p.cfg.ID, role, i)
	}
}

func us(d time.Duration) int64 { return d.Microseconds() }

func latencyText(p Percentiles) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d µs", us(p.Min), us(p.Median), us(p.P75), us(p.P95), us(p.P99))
}

type progressLine struct {
	ID              string       `json:"id"`
	Time            float64      `json:"time_s"`
	Sent            float64      `json:"sent_rate"`
	Confirmed       float64      `json:"confirmed_rate,omitempty"`
	Nacked          float64      `json:"nacked_rate,omitempty"`
	Returned        float64      `json:"returned_rate,omitempty"`
	Received        float64      `json:"received_rate"`
	ConsumerLatency *Percentiles `json:"consumer_latency,omitempty"`
	ConfirmLatency  *Percentiles `json:"confirm_latency,omitempty"`
}

// rates are sent, confirmed, nacked, returned, received per second.
func (p *printer) progress(at time.Duration, rates [5]float64, consumer, confirm Percentiles) {
	if p.cfg.JSON {
		line := progressLine{ID: p.cfg.ID, Time: at.Seconds(), Sent: rates[0], Confirmed: rates[1],
			Nacked: rates[2], Returned: rates[3], Received: rates[4]}
		if consumer.Count > 0 {
			line.ConsumerLatency = &consumer
		}
		if confirm.Count > 0 {
			line.ConfirmLatency = &confirm
		}
		writeJSON(p.w, line)
		return
	}
	s := fmt.Sprintf("id: %s, time %.3f s, sent: %.0f msg/s", p.cfg.ID, at.Seconds(), rates[0])
	if p.cfg.ConfirmBatch > 0 {
		s += fmt.Sprintf(", confirmed: %.0f msg/s, nacked: %.0f msg/s", rates[1], rates[2])
	}
	if rates[3] > 0 {
		s += fmt.Sprintf(", returned: %.0f msg/s", rates[3])
	}
	s += fmt.Sprintf(", received: %.0f msg/s", rates[4])
	if consumer.Count > 0 {
		s += ", min/median/75th/95th/99th consumer latency: " + latencyText(consumer)
	}
	if confirm.Count > 0 {
		s += ", confirm latency: " + latencyText(confirm)
	}
	fmt.Fprintln(p.w, s)
}

func (p *printer) summary(r Result) {
	if p.cfg.JSON {
		writeJSON(p.w, struct {
			Summary Result `json:"summary"`
		}{r})
		return
	}
	fmt.Fprintf(p.w, "id: %s, sending rate avg: %.0f msg/s\n", r.ID, r.SendRate)
	if p.cfg.ConfirmBatch > 0 {
		fmt.Fprintf(p.w, "id: %s, confirm rate avg: %.0f msg/s\n", r.ID, r.ConfirmRate)
	}
	fmt.Fprintf(p.w, "id: %s, receiving rate avg: %.0f msg/s\n", r.ID, r.ReceiveRate)
	if r.ConsumerLatency.Count > 0 {
		fmt.Fprintf(p.w, "id: %s, consumer latency min/median/75th/95th/99th %s\n", r.ID, latencyText(r.ConsumerLatency))
	}
	if r.ConfirmLatency.Count > 0 {
		fmt.Fprintf(p.w, "id: %s, confirm latency min/median/75th/95th/99th %s\n", r.ID, latencyText(r.ConfirmLatency))
	}
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // only plain structs of numbers and strings are written
	}
	w.Write(append(b, '\n'))
}
