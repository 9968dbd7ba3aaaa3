package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goamqp "github.com/Azure/go-amqp"
	amqp091go "github.com/rabbitmq/amqp091-go"
)

// The AMQP 1.0 load generator (bench --protocol amqp1.0), in the spirit of
// Qpid's quiver: one sender and one receiver, each on its own connection
// (github.com/Azure/go-amqp), to one queue; the sender sends for -z with
// at most --inflight deliveries unsettled, the receiver grants --credit
// and accepts each message (or both run settled with -a). Every body
// starts with the time it was sent, so the receiver measures latency. The
// report is quiver's: the sender's rate (sent over the sending time), the
// receiver's rate (received over the time from its first message to its
// last), the end-to-end rate (received over the time from the first send
// to the last receive) and the latency percentiles.

// bench10Config is what bench --protocol amqp1.0 runs.
type bench10Config struct {
	uri      string
	queue    string
	address  string // "" for /queues/QUEUE
	size     int
	credit   int
	inflight int
	duration time.Duration
	settled  bool
	keep     bool
	id       string
	json     bool
}

// bench10Result is the summary of a run.
type bench10Result struct {
	ID            string         `json:"id"`
	Protocol      string         `json:"protocol"`
	Client        string         `json:"client"`
	Address       string         `json:"address"`
	Size          int            `json:"size"`
	Credit        int            `json:"credit"`
	Settled       bool           `json:"settled"`
	Sent          uint64         `json:"sent"`
	Received      uint64         `json:"received"`
	SendElapsed   time.Duration  `json:"send_elapsed_ns"`
	SendRate      float64        `json:"send_rate"`
	ReceiveRate   float64        `json:"receive_rate"`
	EndToEndRate  float64        `json:"end_to_end_rate"`
	Latency       bench10Latency `json:"latency"`
	ReceiveMisses uint64         `json:"receive_misses"`
	// CPUPerMessage is the generator's own CPU time (user and system,
	// both connections and all of go-amqp) per message received, in
	// microseconds; 0 where the platform does not say.
	CPUPerMessage float64 `json:"cpu_us_per_msg"`
}

// bench10Latency are send-to-receive latency percentiles, in microseconds.
type bench10Latency struct {
	Min    int64  `json:"min_us"`
	P50    int64  `json:"p50_us"`
	P90    int64  `json:"p90_us"`
	P99    int64  `json:"p99_us"`
	P999   int64  `json:"p999_us"`
	Max    int64  `json:"max_us"`
	Count  uint64 `json:"count"`
	Sample uint64 `json:"sampled"`
}

// latencySample bounds the latencies kept (one in every stride is kept
// once the sample is full, so memory stays bounded on long runs).
const latencySample = 1 << 20

// runBench10 runs one AMQP 1.0 benchmark and prints its progress and
// summary to out.
func runBench10(ctx context.Context, cfg bench10Config, out io.Writer) (bench10Result, error) {
	res := bench10Result{ID: cfg.id, Protocol: "amqp1.0", Client: "go-amqp", Size: cfg.size, Credit: cfg.credit, Settled: cfg.settled}
	if res.ID == "" {
		res.ID = "test-" + time.Now().Format("150405.000")
	}
	u, err := url.Parse(cfg.uri)
	if err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") {
		return res, fmt.Errorf("bench: --uri %q is not an amqp:// URI", cfg.uri)
	}
	queue := cfg.queue
	if queue == "" {
		queue = "wiretap.bench10." + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	}
	res.Address = cfg.address
	if res.Address == "" {
		res.Address = "/queues/" + url.PathEscape(queue)
	}
	// The queue is declared over 0-9-1, which both RabbitMQ and wiretap's
	// broker speak on the same port (1.0 links do not declare).
	c091, err := amqp091go.Dial(cfg.uri)
	if err != nil {
		return res, fmt.Errorf("bench: declaring the queue over AMQP 0-9-1: %w", err)
	}
	defer c091.Close()
	ch, err := c091.Channel()
	if err != nil {
		return res, fmt.Errorf("bench: %w", err)
	}
	if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
		return res, fmt.Errorf("bench: declaring queue %s: %w", queue, err)
	}
	if !cfg.keep {
		defer ch.QueueDelete(queue, false, false, false)
	}
	dial := func() (*goamqp.Conn, *goamqp.Session, error) {
		opts := &goamqp.ConnOptions{}
		if u.User != nil {
			pw, _ := u.User.Password()
			opts.SASLType = goamqp.SASLTypePlain(u.User.Username(), pw)
		}
		if v := u.Path; v != "" && v != "/" {
			vh, _ := url.PathUnescape(v[1:])
			opts.HostName = "vhost:" + vh
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = "5672"
		}
		if opts.HostName == "" {
			opts.HostName = host
		}
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, nil, fmt.Errorf("bench: amqp 1.0 connection: %w", err)
		}
		conn, err := goamqp.NewConn(ctx, newCoalescingConn(nc, 30*time.Second), opts)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: amqp 1.0 connection: %w", err)
		}
		sess, err := conn.NewSession(ctx, nil)
		if err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("bench: amqp 1.0 session: %w", err)
		}
		return conn, sess, nil
	}
	sconn, ssess, err := dial()
	if err != nil {
		return res, err
	}
	defer sconn.Close()
	rconn, rsess, err := dial()
	if err != nil {
		return res, err
	}
	defer rconn.Close()
	// The receiver's credit is managed here (Credit -1): go-amqp's own
	// management wakes its receiver's goroutine once more for every
	// message settled; here the credit a settled half of the window frees
	// is issued at once (creditStep), as go-amqp would issue it.
	sndMode, rcvOpts := goamqp.SenderSettleModeUnsettled, &goamqp.ReceiverOptions{Credit: -1}
	if cfg.settled {
		sndMode = goamqp.SenderSettleModeSettled
		rcvOpts.RequestedSenderSettleMode = goamqp.SenderSettleModeSettled.Ptr()
	}
	snd, err := ssess.NewSender(ctx, res.Address, &goamqp.SenderOptions{SettlementMode: sndMode.Ptr()})
	if err != nil {
		return res, fmt.Errorf("bench: sender link to %s: %w", res.Address, err)
	}
	rcv, err := rsess.NewReceiver(ctx, res.Address, rcvOpts)
	if err != nil {
		return res, fmt.Errorf("bench: receiver link to %s: %w", res.Address, err)
	}
	if err := rcv.IssueCredit(uint32(cfg.credit)); err != nil {
		return res, fmt.Errorf("bench: receiver credit: %w", err)
	}
	creditStep := uint32(max(cfg.credit/2, 1))
	var settledSince uint32 // messages settled since credit was last issued
	settledOne := func() error {
		if settledSince++; settledSince < creditStep {
			return nil
		}
		settledSince = 0
		return rcv.IssueCredit(creditStep)
	}

	cpu0 := processCPU()
	start := time.Now()
	var sent, received atomic.Uint64
	var sendEnd atomic.Int64
	sendErr := make(chan error, 1)
	// The sender: unsettled deliveries are pipelined, their receipts
	// waited for by a second goroutine, at most inflight at a time.
	go func() {
		var receipts chan goamqp.SendReceipt
		var wg sync.WaitGroup
		if !cfg.settled {
			receipts = make(chan goamqp.SendReceipt, cfg.inflight)
			wg.Go(func() {
				for r := range receipts {
					if st, err := r.Wait(ctx); err != nil || !isAccepted(st) {
						select {
						case sendErr <- fmt.Errorf("bench: a delivery was not accepted: %v %v", st, err):
						default:
						}
					}
				}
			})
		}
		body := make([]byte, cfg.size)
		deadline := start.Add(cfg.duration)
		var err error
		for seq := uint32(0); ctx.Err() == nil; seq++ {
			now := time.Now()
			if !now.Before(deadline) {
				break
			}
			binary.BigEndian.PutUint64(body, uint64(now.Sub(start)))
			binary.BigEndian.PutUint32(body[8:], seq)
			m := goamqp.NewMessage(slices.Clone(body))
			if cfg.settled {
				err = snd.Send(ctx, m, nil)
			} else {
				var r goamqp.SendReceipt
				if r, err = snd.SendWithReceipt(ctx, m, nil); err == nil {
					receipts <- r
				}
			}
			if err != nil {
				break
			}
			sent.Add(1)
		}
		sendEnd.Store(int64(time.Since(start)))
		if receipts != nil {
			close(receipts)
			wg.Wait()
		}
		if err != nil && ctx.Err() == nil {
			select {
			case sendErr <- fmt.Errorf("bench: sending: %w", err):
			default:
			}
		}
		close(sendErr)
	}()

	// The receiver, on this goroutine, until every message sent arrived
	// (or none came for five seconds after the sender stopped).
	// Accepting waits in go-amqp until the disposition is written, so it
	// is done beside the receiving, not in its way: the receiver goes on
	// to the next message while the last ones are being accepted.
	var accepts chan *goamqp.Message
	acceptErr := make(chan error, 1)
	var awg sync.WaitGroup
	if !cfg.settled {
		accepts = make(chan *goamqp.Message, cfg.credit)
		awg.Go(func() {
			failed := false
			for m := range accepts {
				if failed {
					continue
				}
				err := rcv.AcceptMessage(ctx, m)
				if err == nil {
					err = settledOne()
				}
				if err != nil {
					failed = true
					acceptErr <- fmt.Errorf("bench: accepting: %w", err)
				}
			}
		})
	}
	stopAccepting := func() error {
		if accepts == nil {
			return nil
		}
		close(accepts)
		accepts = nil
		awg.Wait()
		select {
		case err := <-acceptErr:
			return err
		default:
			return nil
		}
	}
	defer stopAccepting()
	lat := make([]int64, 0, 1<<16)
	stride, skip := uint64(1), uint64(0)
	var first, last time.Duration
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	var lastReported uint64
	prevAt := time.Now()
	// The receive timeout (five seconds without a message) is one context
	// renewed every few thousand messages, not a context and its timer
	// per message; when it expires sooner than five seconds after the
	// last message, it is renewed and the wait goes on.
	const silence = 5 * time.Second
	rctx, rcancel := context.WithTimeout(ctx, silence)
	defer func() { rcancel() }()
	renew := func() {
		rcancel()
		rctx, rcancel = context.WithTimeout(ctx, silence)
	}
	var lastAt time.Duration // of the last message, since start
	for {
		if se := sendEnd.Load(); se > 0 && received.Load() >= sent.Load() {
			break
		}
		m, err := rcv.Receive(rctx, nil)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				if time.Since(start)-lastAt < silence {
					renew()
					continue
				}
				if sendEnd.Load() > 0 {
					res.ReceiveMisses = sent.Load() - received.Load()
					break
				}
			}
			if ctx.Err() != nil {
				break
			}
			return res, fmt.Errorf("bench: receiving: %w", err)
		}
		now := time.Since(start)
		lastAt = now
		if accepts != nil {
			select {
			case accepts <- m:
			case err := <-acceptErr:
				return res, err
			}
		} else if err := settledOne(); err != nil {
			return res, fmt.Errorf("bench: receiver credit: %w", err)
		}
		n := received.Add(1)
		if n == 1 {
			first = now
		}
		if n%4096 == 0 {
			renew()
		}
		last = now
		if b := m.GetData(); len(b) >= 8 {
			if skip++; skip >= stride {
				skip = 0
				lat = append(lat, int64(now)-int64(binary.BigEndian.Uint64(b)))
				if len(lat) == latencySample {
					// Keep every other one and halve the rate kept.
					for i := range len(lat) / 2 {
						lat[i] = lat[2*i]
					}
					lat, stride = lat[:len(lat)/2], stride*2
				}
			}
		}
		select {
		case t := <-progress.C:
			if !cfg.json {
				r := received.Load()
				fmt.Fprintf(out, "id: %s, time %.3fs, sent %d, received %d, receive rate %.0f msg/s\n",
					res.ID, time.Since(start).Seconds(), sent.Load(), r, float64(r-lastReported)/t.Sub(prevAt).Seconds())
				lastReported, prevAt = r, t
			}
		default:
		}
	}
	if err := stopAccepting(); err != nil {
		return res, err
	}
	for err := range sendErr {
		if err != nil {
			return res, err
		}
	}
	if cpu := processCPU() - cpu0; cpu > 0 && received.Load() > 0 {
		res.CPUPerMessage = float64(cpu.Microseconds()) / float64(received.Load())
	}
	res.Sent, res.Received = sent.Load(), received.Load()
	res.SendElapsed = time.Duration(sendEnd.Load())
	if res.SendElapsed > 0 {
		res.SendRate = float64(res.Sent) / res.SendElapsed.Seconds()
	}
	if last > first {
		res.ReceiveRate = float64(res.Received) / (last - first).Seconds()
	}
	if last > 0 {
		res.EndToEndRate = float64(res.Received) / last.Seconds()
	}
	res.Latency = latencyPercentiles(lat, res.Received)
	printBench10(out, cfg.json, res)
	return res, nil
}

// isAccepted reports whether a delivery state is accepted.
func isAccepted(st goamqp.DeliveryState) bool {
	_, ok := st.(*goamqp.StateAccepted)
	return ok
}

// latencyPercentiles are the nearest-rank percentiles of a sample.
func latencyPercentiles(lat []int64, count uint64) bench10Latency {
	l := bench10Latency{Count: count, Sample: uint64(len(lat))}
	if len(lat) == 0 {
		return l
	}
	slices.Sort(lat)
	at := func(q float64) int64 {
		i := int(q*float64(len(lat))+0.5) - 1
		return lat[min(max(i, 0), len(lat)-1)] / 1000
	}
	l.Min, l.Max = lat[0]/1000, lat[len(lat)-1]/1000
	l.P50, l.P90, l.P99, l.P999 = at(0.50), at(0.90), at(0.99), at(0.999)
	return l
}

// printBench10 prints the summary: text, or one JSON line {"summary": ...}.
func printBench10(out io.Writer, asJSON bool, r bench10Result) {
	if asJSON {
		b, _ := json.Marshal(struct {
			Summary bench10Result `json:"summary"`
		}{r})
		fmt.Fprintf(out, "%s\n", b)
		return
	}
	mode := "unsettled"
	if r.Settled {
		mode = "settled"
	}
	fmt.Fprintf(out, "id: %s, amqp1.0 %s, %d-byte bodies, credit %d, to %s\n", r.ID, mode, r.Size, r.Credit, r.Address)
	fmt.Fprintf(out, "id: %s, sent %d, received %d", r.ID, r.Sent, r.Received)
	if r.ReceiveMisses > 0 {
		fmt.Fprintf(out, " (%d never arrived)", r.ReceiveMisses)
	}
	fmt.Fprintf(out, "\nid: %s, sender rate %.0f msg/s, receiver rate %.0f msg/s, end-to-end rate %.0f msg/s\n",
		r.ID, r.SendRate, r.ReceiveRate, r.EndToEndRate)
	l := r.Latency
	fmt.Fprintf(out, "id: %s, latency min/p50/p90/p99/p99.9/max %d/%d/%d/%d/%d/%d µs\n", r.ID, l.Min, l.P50, l.P90, l.P99, l.P999, l.Max)
}
