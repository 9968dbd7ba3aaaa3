package rabbitdiff

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Workload is one client scenario run against a broker.
type Workload struct {
	// Name is the subtest's name: client-area-case ("go-queue-exclusive").
	Name string
	// Strict keeps one ordered sequence per channel: the workload's own
	// order makes deliveries and replies deterministic.
	Strict bool
	// Timeout bounds the whole run (0: DefaultWorkloadTimeout).
	Timeout time.Duration
	// Run drives the broker through e. A returned error is recorded in the
	// transcript (it is part of what is compared) and reported.
	Run func(ctx context.Context, e *Env) error
}

// DefaultWorkloadTimeout bounds a workload's run; steps are bounded more
// tightly (5 s) by the relay's watchdog and the workloads' own waits.
const DefaultWorkloadTimeout = 30 * time.Second

// Env is what a workload gets: where to connect, names to use, a place for
// its observations.
type Env struct {
	// Addr is the relay's host:port.
	Addr string
	// Prefix starts every name the workload declares, unique to the run.
	Prefix string

	// target is the broker itself, for looking without being recorded.
	target string

	mu        sync.Mutex
	notes     []string
	queues    []string
	exchanges []string
	direct    *amqp.Connection
	directCh  *amqp.Channel
}

// Count returns a queue's message count, asked over a connection of the
// harness's own straight to the broker: polling until something
// asynchronous has happened (a dead-lettering) would otherwise put a
// varying number of answers into the transcript.
func (e *Env) Count(queue string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.direct == nil {
		c, err := amqp.DialConfig("amqp://guest:guest@"+e.target+"/", amqp.Config{Dial: amqp.DefaultDial(DefaultStepTimeout)})
		if err != nil {
			return 0, err
		}
		e.direct = c
	}
	if e.directCh == nil || e.directCh.IsClosed() {
		ch, err := e.direct.Channel()
		if err != nil {
			return 0, err
		}
		e.directCh = ch
	}
	q, err := e.directCh.QueueDeclarePassive(queue, false, false, false, false, nil)
	return q.Messages, err
}

// WaitCount polls Count until queue holds at least n messages.
func (e *Env) WaitCount(ctx context.Context, queue string, n int) error {
	deadline := time.Now().Add(DefaultStepTimeout)
	for time.Now().Before(deadline) {
		got, err := e.Count(queue)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		sleep(ctx, 20*time.Millisecond)
	}
	return errors.New("queue " + queue + " did not reach " + strconv.Itoa(n) + " messages within " + DefaultStepTimeout.String())
}

func (e *Env) closeDirect() {
	e.mu.Lock()
	c := e.direct
	e.direct, e.directCh = nil, nil
	e.mu.Unlock()
	if c != nil {
		done := make(chan struct{})
		go func() { c.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(DefaultStepTimeout):
		}
	}
}

// alarmHooks raise and clear a target's memory alarm (target -> func(on
// bool) error): rabbitmqctl set_vm_memory_high_watermark for RabbitMQ,
// SetMemoryHighWatermark for the embedded broker.
var alarmHooks sync.Map

// RegisterAlarm installs the hook Env.MemoryAlarm calls for target.
func RegisterAlarm(target string, fn func(on bool) error) { alarmHooks.Store(target, fn) }

// MemoryAlarm raises (on) or clears the memory alarm of the broker under
// test. The alarm is node-wide: only workloads run one at a time
// (AlarmWorkloads) may use it.
func (e *Env) MemoryAlarm(on bool) error {
	fn, ok := alarmHooks.Load(e.target)
	if !ok {
		return errors.New("no memory alarm hook registered for " + e.target)
	}
	return fn.(func(bool) error)(on)
}

// URL is an amqp:// URL for guest/guest on vhost "/" through the relay.
func (e *Env) URL() string { return "amqp://guest:guest@" + e.Addr + "/" }

// Queue returns the run's name for a queue and has the harness delete it
// afterwards.
func (e *Env) Queue(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queues = append(e.queues, e.Prefix+name)
	return e.Prefix + name
}

// Exchange returns the run's name for an exchange and has the harness
// delete it afterwards.
func (e *Env) Exchange(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.exchanges = append(e.exchanges, e.Prefix+name)
	return e.Prefix + name
}

// Note records an observation of the workload's in the transcript.
func (e *Env) Note(s string) {
	e.mu.Lock()
	e.notes = append(e.notes, s)
	e.mu.Unlock()
}

// Dial opens an amqp091-go connection through the relay.
func (e *Env) Dial() (*amqp.Connection, error) {
	return e.DialURL(e.URL())
}

// DialURL opens an amqp091-go connection to url, whose host must be
// e.Addr.
func (e *Env) DialURL(url string) (*amqp.Connection, error) {
	return amqp.DialConfig(url, amqp.Config{
		// A fixed name: amqp091-go's default properties are the same on
		// both sides anyway, but a stable value keeps recordings alike.
		Properties: amqp.Table{"connection_name": "rabbitdiff"},
		Dial:       amqp.DefaultDial(DefaultStepTimeout),
	})
}

// newPrefix returns a run prefix: "rd" and 8 random hex digits and a dot.
func newPrefix() string {
	var b [4]byte
	rand.Read(b[:])
	return "rd" + hex.EncodeToString(b[:]) + "."
}

// Record runs w through a fresh relay to target (host:port) and returns the
// transcript of what the broker sent. A workload failure is part of the
// transcript (the last client line) and is also returned.
func Record(ctx context.Context, target string, w Workload) (*Transcript, error) {
	relay, err := Listen(target)
	if err != nil {
		return nil, err
	}
	e := &Env{Addr: relay.Addr(), Prefix: newPrefix(), target: target}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultWorkloadTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(rctx, e) }()
	var runErr error
	select {
	case runErr = <-done:
	case <-rctx.Done():
		// Unblock whatever the workload waits on, then give it a moment.
		relay.Abort()
		select {
		case runErr = <-done:
		case <-time.After(DefaultStepTimeout):
		}
		runErr = errors.Join(errors.New("workload timed out after "+timeout.String()), runErr)
	}
	e.closeDirect()
	recs := relay.Close(2 * time.Second)
	cleanup(target, e)
	t := Build(recs, Options{Prefix: e.Prefix, Strict: w.Strict})
	e.mu.Lock()
	t.AddClient(e.notes...)
	e.mu.Unlock()
	if runErr != nil {
		t.AddClient("error: " + oneLine(runErr.Error()))
	}
	return t, runErr
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " | ") }

// cleanup deletes what the workload registered, directly on target (not
// through the relay: it is not part of the transcript). Best effort: a
// broker that cannot do it has failed the workload already.
func cleanup(target string, e *Env) {
	e.mu.Lock()
	queues, exchanges := e.queues, e.exchanges
	e.mu.Unlock()
	if len(queues) == 0 && len(exchanges) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := amqp.DialConfig("amqp://guest:guest@"+target+"/", amqp.Config{Dial: amqp.DefaultDial(DefaultStepTimeout)})
		if err != nil {
			return
		}
		defer c.Close()
		ch, err := c.Channel()
		if err != nil {
			return
		}
		for _, q := range queues {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				if ch, err = c.Channel(); err != nil {
					return
				}
			}
		}
		for _, x := range exchanges {
			if err := ch.ExchangeDelete(x, false, false); err != nil {
				if ch, err = c.Channel(); err != nil {
					return
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(2 * DefaultStepTimeout):
	}
}

// TargetFromURL returns the host:port of an amqp:// URL.
func TargetFromURL(url string) (string, error) {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return "", errors.New("rabbitdiff: " + err.Error())
	}
	return net.JoinHostPort(u.Host, strconv.Itoa(u.Port)), nil
}
