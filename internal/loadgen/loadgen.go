package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what a run measured, warm-up excluded.
type Result struct {
	ID     string `json:"id"`
	Client string `json:"client"`
	// Elapsed is the measured time: Config.Duration unless the run ended
	// early. Every rate is a count divided by it.
	Elapsed   time.Duration `json:"elapsed_ns"`
	WarmUp    time.Duration `json:"warm_up_ns"`
	Producers int           `json:"producers"`
	Consumers int           `json:"consumers"`
	Queues    int           `json:"queues"`
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

// worker holds one producer's or consumer's counters and latencies. Each
// worker has its own, so they never contend; the reporter takes them all
// under the worker's lock, so a count and its latencies always agree.
type worker struct {
	mu    sync.Mutex
	n     counts
	lat   *histogram // since the reporter last took it
	spare *histogram // the reporter's: swapped with lat, merged outside the lock
	_     [64]byte   // keep the next worker's lock off this cache line
}

func newWorker() *worker { return &worker{lat: new(histogram), spare: new(histogram)} }

func (w *worker) sent() {
	w.mu.Lock()
	w.n.sent++
	w.mu.Unlock()
}

func (w *worker) returned() {
	w.mu.Lock()
	w.n.returned++
	w.mu.Unlock()
}

func (w *worker) received(d time.Duration, timed bool) {
	w.mu.Lock()
	w.n.received++
	if timed {
		w.lat.record(d)
	}
	w.mu.Unlock()
}

func (w *worker) confirmed(d time.Duration, ack bool) {
	w.mu.Lock()
	if ack {
		w.n.confirmed++
	} else {
		w.n.nacked++
	}
	w.lat.record(d)
	w.mu.Unlock()
}

// counts are a snapshot of every worker's counters.
type counts struct{ sent, confirmed, nacked, returned, received uint64 }

func (c counts) add(o counts) counts {
	return counts{c.sent + o.sent, c.confirmed + o.confirmed, c.nacked + o.nacked, c.returned + o.returned, c.received + o.received}
}

func (c counts) sub(o counts) counts {
	return counts{c.sent - o.sent, c.confirmed - o.confirmed, c.nacked - o.nacked, c.returned - o.returned, c.received - o.received}
}

// run is the state of one Run.
type run struct {
	cfg       *Config
	producers []*worker
	consumers []*worker
	// interval histograms, refilled by collect; totals since measuring began.
	consumerIvl, confirmIvl     histogram
	consumerTotal, confirmTotal histogram
}

// collect sums every worker's counters and moves their latencies into the
// interval histograms and, when measuring, into the totals. It returns the
// counts and the time they were taken at: each worker is locked only to
// read its counters and swap its histogram, so the snapshot is a moment.
func (r *run) collect(measuring bool) (counts, time.Time) {
	var c counts
	for _, ws := range [2][]*worker{r.consumers, r.producers} {
		for _, w := range ws {
			w.mu.Lock()
			c = c.add(w.n)
			w.lat, w.spare = w.spare, w.lat
			w.mu.Unlock()
		}
	}
	at := time.Now()
	r.consumerIvl.reset()
	r.confirmIvl.reset()
	for _, w := range r.consumers {
		r.consumerIvl.add(w.spare)
		w.spare.reset()
	}
	for _, w := range r.producers {
		r.confirmIvl.add(w.spare)
		w.spare.reset()
	}
	if measuring {
		r.consumerTotal.add(&r.consumerIvl)
		r.confirmTotal.add(&r.confirmIvl)
	}
	return c, at
}

// Run declares the topology, runs the producers and consumers for
// cfg.WarmUp then cfg.Duration (or until ctx ends), writes progress to w
// and returns what the measured part counted. It returns an error for a
// Config that fails [Config.Validate], when the broker cannot be reached or
// the topology declared; a producer or consumer that fails midway ends the
// run early with its error. Unless cfg.Keep, the topology is deleted at
// the end.
func Run(ctx context.Context, cfg Config, w io.Writer) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	var made declared
	if !cfg.Keep {
		defer teardown(&cfg, &made)
	}
	if err := declare(&cfg, &made); err != nil {
		return Result{}, err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &run{cfg: &cfg}
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
		ended atomic.Bool // past the deadline: errors from stopping are not failures
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil && !ended.Load() && ctx.Err() == nil {
			first = err
		}
		errMu.Unlock()
		cancel()
	}
	out := &printer{w: w, cfg: &cfg}
	// Consumers first, so the first messages find someone waiting.
	subs := make([]subscriber, cfg.Consumers)
	for i := range cfg.Consumers {
		out.starting("consumer", i)
		s, err := dialSubscriber(&cfg, "consumer "+strconv.Itoa(i), cfg.queues[i%len(cfg.queues)])
		if err != nil {
			for _, s := range subs[:i] {
				s.close()
			}
			return Result{}, fmt.Errorf("loadgen: starting consumer %d: %w", i, err)
		}
		subs[i] = s
		r.consumers = append(r.consumers, newWorker())
	}
	// Producers connected before the clock starts, so a slow handshake
	// does not eat into the measured time.
	pubs := make([]*producer, cfg.Producers)
	for i := range cfg.Producers {
		out.starting("producer", i)
		w := newWorker()
		pr, err := newProducer(&cfg, w, i)
		if err != nil {
			for _, s := range subs {
				s.close()
			}
			for _, pr := range pubs[:i] {
				pr.p.close()
			}
			return Result{}, fmt.Errorf("loadgen: starting producer %d: %w", i, err)
		}
		pubs[i] = pr
		r.producers = append(r.producers, w)
	}
	start := time.Now()
	measureFrom := start.Add(cfg.WarmUp)
	deadline := measureFrom.Add(cfg.Duration)
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.close()
			if err := consume(ctx, &cfg, s, r.consumers[i]); err != nil {
				fail(fmt.Errorf("loadgen: consumer %d: %w", i, err))
			}
		}()
	}
	for i, pr := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pr.run(ctx); err != nil {
				fail(fmt.Errorf("loadgen: producer %d: %w", i, err))
			}
		}()
	}

	// Progress lines at whole intervals from the start; the last one at
	// the deadline, however short its interval. Rates are divided by the
	// time between the snapshots, read from the clock, not by the
	// schedule; time_s is the scheduled instant.
	var base, last counts
	lastAt := start
	measuring := cfg.WarmUp == 0
	measuredFrom, measuredTo := start, start
	next := start.Add(cfg.Interval)
	for done := false; !done; {
		at := earliest(next, deadline)
		if !measuring {
			at = earliest(at, measureFrom)
		}
		timer := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			timer.Stop()
			done = true
		case <-timer.C:
		}
		cur, now := r.collect(measuring)
		if done {
			at = now
		}
		// Every scheduled instant gets its line, even one the timer
		// reached late, right after the previous one.
		{
			secs := now.Sub(lastAt).Seconds()
			var rates [5]float64
			d := cur.sub(last)
			if secs > 0 {
				for i, n := range [5]uint64{d.sent, d.confirmed, d.nacked, d.returned, d.received} {
					rates[i] = float64(n) / secs
				}
			}
			out.progress(at.Sub(start)-cfg.WarmUp, !measuring, rates, r.consumerIvl.percentiles(), r.confirmIvl.percentiles())
		}
		last, lastAt, measuredTo = cur, now, now
		if !measuring && !at.Before(measureFrom) {
			// Progress lines count from the start of the measured time.
			measuring, base, next, measuredFrom = true, cur, measureFrom, now
		}
		if !at.Before(deadline) {
			done = true
		}
		for !next.After(at) {
			next = next.Add(cfg.Interval)
		}
	}
	ended.Store(true)
	cancel()
	// Stopping is not measured, and bounded: a producer stuck on a
	// flooded socket gets its connection closed under it.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(3 * closeGrace):
	}

	elapsed := measuredTo.Sub(measuredFrom)
	if !measuring {
		elapsed, base = 0, last
	}
	total := last.sub(base)
	res := Result{
		ID: cfg.ID, Client: cfg.Client, Elapsed: elapsed, WarmUp: cfg.WarmUp,
		Producers: cfg.Producers, Consumers: cfg.Consumers, Queues: len(cfg.queues),
		Sent: total.sent, Confirmed: total.confirmed, Nacked: total.nacked,
		Returned: total.returned, Received: total.received,
		ConsumerLatency: r.consumerTotal.percentiles(),
		ConfirmLatency:  r.confirmTotal.percentiles(),
	}
	if s := elapsed.Seconds(); s > 0 {
		res.SendRate = float64(res.Sent) / s
		res.ConfirmRate = float64(res.Confirmed) / s
		res.ReceiveRate = float64(res.Received) / s
	}
	out.summary(res)
	errMu.Lock()
	defer errMu.Unlock()
	return res, first
}

// window tracks a producer's unconfirmed messages: the publish time of each
// delivery tag from low to next, at most cap of them (PerfTest's confirm
// window, counted from the oldest unconfirmed message).
type window struct {
	mu      sync.Mutex
	cond    sync.Cond
	sentAt  []int64 // Unix ns by tag modulo len; 0 once confirmed
	low     uint64  // the oldest unconfirmed tag
	next    uint64  // the tag of the next publish
	stopped bool
}

func newWindow(n int) *window {
	w := &window{sentAt: make([]int64, n), low: 1, next: 1}
	w.cond.L = &w.mu
	return w
}

// add waits for room and records a publish; false when the run ended.
func (w *window) add(now int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.next-w.low >= uint64(len(w.sentAt)) && !w.stopped {
		w.cond.Wait()
	}
	if w.stopped {
		return false
	}
	w.sentAt[w.next%uint64(len(w.sentAt))] = now
	w.next++
	return true
}

// full reports whether the next add would wait.
func (w *window) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next-w.low >= uint64(len(w.sentAt))
}

// confirm settles tag (and, if multiple, every unconfirmed tag below it),
// calling settled with each one's publish time.
func (w *window) confirm(tag uint64, multiple bool, settled func(sentNs int64)) {
	w.mu.Lock()
	from := tag
	if multiple {
		from = w.low
	}
	n := uint64(len(w.sentAt))
	for t := from; t <= tag && t < w.next; t++ {
		if t < w.low {
			continue
		}
		if s := w.sentAt[t%n]; s != 0 {
			w.sentAt[t%n] = 0
			settled(s)
		}
	}
	for w.low < w.next && w.sentAt[w.low%n] == 0 {
		w.low++
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *window) stop() {
	w.mu.Lock()
	w.stopped = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// routeFor is where producer i publishes: queue i mod N's key.
func routeFor(cfg *Config, i int) route {
	ex := cfg.Exchange
	if ex == "amq.default" {
		return newRoute("", cfg.queues[i%len(cfg.queues)])
	}
	return newRoute(ex, bindingKey(cfg, i%len(cfg.queues)))
}

// bindingKey binds queue q and routes to it.
func bindingKey(cfg *Config, q int) string {
	if cfg.RoutingKey != "" {
		return cfg.RoutingKey
	}
	return cfg.queues[q]
}

// producer is one producer, connected and ready to run.
type producer struct {
	cfg *Config
	id  int
	st  *worker
	win *window // nil without confirms
	p   publisher
}

func newProducer(cfg *Config, st *worker, id int) (*producer, error) {
	pr := &producer{cfg: cfg, id: id, st: st}
	if cfg.ConfirmBatch > 0 {
		pr.win = newWindow(cfg.ConfirmBatch)
	}
	onConfirm := func(tag uint64, multiple, ack bool) {
		now := time.Now().UnixNano()
		pr.win.confirm(tag, multiple, func(sent int64) { st.confirmed(time.Duration(now-sent), ack) })
	}
	p, err := dialPublisher(cfg, "producer "+strconv.Itoa(id), onConfirm, st.returned)
	if err != nil {
		return nil, err
	}
	pr.p = p
	return pr, nil
}

// run publishes until ctx ends, then closes the connection.
func (pr *producer) run(ctx context.Context) error {
	cfg, st, win, p, id := pr.cfg, pr.st, pr.win, pr.p, pr.id
	if win != nil {
		defer win.stop()
		stop := context.AfterFunc(ctx, win.stop)
		defer stop()
	}
	stopPub := context.AfterFunc(ctx, p.interrupt) // unblocks a publish stuck on a full socket
	defer stopPub()
	defer p.close()
	rt := routeFor(cfg, id)
	body := make([]byte, cfg.maxLen)
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	clk := newCoarseClock(p)
	var (
		seq       uint32
		paceStart = time.Now() // after the dial, or the limit would be a burst to catch up
		paced     uint64       // messages sent since paceStart
	)
	for ctx.Err() == nil {
		size := cfg.Size
		if cfg.sizes != nil {
			size = cfg.sizes[rng.Uint64()&(sizeSlots-1)]
		}
		if win != nil && win.full() {
			if err := p.flush(); err != nil {
				return quiet(ctx, err)
			}
		}
		now := clk.now()
		if win != nil && !win.add(now) {
			return nil
		}
		binary.BigEndian.PutUint64(body, uint64(now))
		binary.BigEndian.PutUint32(body[8:], seq)
		seq++
		if err := p.publish(&rt, body[:size]); err != nil {
			return quiet(ctx, err)
		}
		st.sent()
		if seq&255 == 0 {
			if err := p.failed(); err != nil {
				return quiet(ctx, err)
			}
		}
		if cfg.Rate > 0 {
			paced++
			due := paceStart.Add(time.Duration(float64(paced) / cfg.Rate * 1e9))
			if ahead := time.Until(due); ahead > 0 {
				if err := p.flush(); err != nil {
					return quiet(ctx, err)
				}
				if ahead > 50*time.Microsecond {
					sleep(ctx, ahead)
				}
				clk.expire()
			} else if ahead < -time.Second {
				// Far behind (the broker held us up): do not burst to catch up.
				paceStart, paced = time.Now(), 0
			}
		}
	}
	return nil
}

// clockEvery is how many stamps a coarseClock gives from one reading.
const clockEvery = 16

// coarseClock gives the wall clock (Unix ns) for message stamps, read
// once for clockEvery stamps, and afresh whenever the connection's socket
// was read or written since the last reading (either may have blocked, and
// a read is when deliveries arrive). A reading costs 90 ns on a VM's vDSO,
// a third of the generator's CPU per 16-byte message when taken twice per
// message. A producer's stamp is thus early by at most clockEvery
// publishes' work (latency overstated by a few µs) and a consumer's by at
// most clockEvery deliveries' (understated by as much), both from the same
// clock, whichever broker is measured. Without an [ioCounter] (the
// amqp091-go client) the clock is read for every stamp.
type coarseClock struct {
	ns   int64
	left int
	io   ioCounter
	seen uint64
}

// ioCounter counts a connection's socket reads and writes made on the
// goroutine that stamps.
type ioCounter interface{ ioCount() uint64 }

func newCoarseClock(conn any) *coarseClock {
	io, _ := conn.(ioCounter)
	return &coarseClock{io: io}
}

func (c *coarseClock) now() int64 {
	if c.io == nil {
		return time.Now().UnixNano()
	}
	if n := c.io.ioCount(); n != c.seen {
		c.seen, c.left = n, 0
	}
	if c.left == 0 {
		c.ns, c.left = time.Now().UnixNano(), clockEvery
	}
	c.left--
	return c.ns
}

// expire makes the next stamp read the clock.
func (c *coarseClock) expire() { c.left = 0 }

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// quiet returns nil for the error that ending the run causes.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func consume(ctx context.Context, cfg *Config, s subscriber, st *worker) error {
	every := uint64(max(cfg.MultiAckEvery, 1))
	var unacked uint64
	clk := newCoarseClock(s)
	return s.consume(ctx, func(tag uint64, sent int64, ok bool) error {
		var d time.Duration
		if ok {
			d = time.Duration(clk.now() - sent)
		}
		st.received(d, ok)
		if cfg.AutoAck {
			return nil
		}
		if unacked++; unacked < every {
			return nil
		}
		unacked = 0
		if err := s.ack(tag, every > 1); err != nil {
			return quiet(ctx, err)
		}
		return nil
	})
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
	return fmt.Sprintf("%d/%d/%d/%d/%d/%d µs", us(p.Min), us(p.Median), us(p.P75), us(p.P95), us(p.P99), us(p.Max))
}

// rangesText is the count per latency range, "<=1ms 950, <=5ms 50, ...".
func rangesText(p Percentiles) string {
	var b strings.Builder
	for i, n := range p.Ranges {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(RangeBounds) {
			b.WriteString("<=" + strconv.FormatInt(RangeBounds[i].Milliseconds(), 10) + "ms ")
		} else {
			b.WriteString(">1s ")
		}
		b.WriteString(strconv.FormatUint(n, 10))
	}
	return b.String()
}

type progressLine struct {
	ID              string       `json:"id"`
	Time            float64      `json:"time_s"`
	WarmUp          bool         `json:"warm_up,omitempty"`
	Sent            float64      `json:"sent_rate"`
	Confirmed       float64      `json:"confirmed_rate,omitempty"`
	Nacked          float64      `json:"nacked_rate,omitempty"`
	Returned        float64      `json:"returned_rate,omitempty"`
	Received        float64      `json:"received_rate"`
	ConsumerLatency *Percentiles `json:"consumer_latency,omitempty"`
	ConfirmLatency  *Percentiles `json:"confirm_latency,omitempty"`
}

// progress writes one interval's line; at is the time since measuring
// began (negative during the warm-up). rates are sent, confirmed, nacked,
// returned, received per second.
func (p *printer) progress(at time.Duration, warmUp bool, rates [5]float64, consumer, confirm Percentiles) {
	if p.cfg.JSON {
		line := progressLine{ID: p.cfg.ID, Time: at.Seconds(), WarmUp: warmUp, Sent: rates[0], Confirmed: rates[1],
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
	s := fmt.Sprintf("id: %s, time %.3f s", p.cfg.ID, at.Seconds())
	if warmUp {
		s += " (warm-up)"
	}
	s += fmt.Sprintf(", sent: %.0f msg/s", rates[0])
	if p.cfg.ConfirmBatch > 0 {
		s += fmt.Sprintf(", confirmed: %.0f msg/s, nacked: %.0f msg/s", rates[1], rates[2])
	}
	if rates[3] > 0 {
		s += fmt.Sprintf(", returned: %.0f msg/s", rates[3])
	}
	s += fmt.Sprintf(", received: %.0f msg/s", rates[4])
	if consumer.Count > 0 {
		s += ", min/median/75th/95th/99th/max consumer latency: " + latencyText(consumer)
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
	fmt.Fprintf(p.w, "id: %s, measured %.3f s (client %s, %d queues)\n", r.ID, r.Elapsed.Seconds(), r.Client, r.Queues)
	fmt.Fprintf(p.w, "id: %s, sending rate avg: %.0f msg/s\n", r.ID, r.SendRate)
	if p.cfg.ConfirmBatch > 0 {
		fmt.Fprintf(p.w, "id: %s, confirm rate avg: %.0f msg/s\n", r.ID, r.ConfirmRate)
	}
	fmt.Fprintf(p.w, "id: %s, receiving rate avg: %.0f msg/s\n", r.ID, r.ReceiveRate)
	if r.ConsumerLatency.Count > 0 {
		fmt.Fprintf(p.w, "id: %s, consumer latency min/median/75th/95th/99th/max %s\n", r.ID, latencyText(r.ConsumerLatency))
		fmt.Fprintf(p.w, "id: %s, consumer latency ranges %s\n", r.ID, rangesText(r.ConsumerLatency))
	}
	if r.ConfirmLatency.Count > 0 {
		fmt.Fprintf(p.w, "id: %s, confirm latency min/median/75th/95th/99th/max %s\n", r.ID, latencyText(r.ConfirmLatency))
		fmt.Fprintf(p.w, "id: %s, confirm latency ranges %s\n", r.ID, rangesText(r.ConfirmLatency))
	}
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // only plain structs of numbers and strings are written
	}
	w.Write(append(b, '\n'))
}
