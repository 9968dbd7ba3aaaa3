package mgmt

import (
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/broker/state"
)

// writer renders one response: the encoder plus what objects refer to
// (connections by name, consumers by queue) and the rates' scratch.
type writer struct {
	encoder
	h    *handler
	now  time.Time
	node string
	// single is set while rendering one object (GET .../NAME), which
	// RabbitMQ answers with more than a list item has.
	single bool

	conns        []state.Connection // sorted by Name
	connsLoaded  bool
	consumers    []state.Consumer // sorted by VHost, Queue
	consLoaded   bool
	queues       []state.Queue // sorted by VHost, Name
	queuesLoaded bool

	vals [maxRateCount]uint64
	rts  [maxRateCount]float64
	tmp  [64]byte
}

// maxPooledBuf is the largest buffer a writer keeps between requests.
const maxPooledBuf = 4 << 20

func (h *handler) getWriter(cols *column) *writer {
	wr := h.pool.Get().(*writer)
	wr.reset(cols)
	wr.now = h.now()
	return wr
}

func (h *handler) putWriter(wr *writer) {
	// The snapshots are the request's; drop them so the pool does not
	// keep them alive.
	wr.conns, wr.consumers, wr.queues = nil, nil, nil
	wr.connsLoaded, wr.consLoaded, wr.queuesLoaded, wr.single = false, false, false, false
	wr.node = ""
	if cap(wr.buf) > maxPooledBuf {
		wr.buf = nil
	}
	h.pool.Put(wr)
}

// send writes the rendered JSON.
func (wr *writer) send(w http.ResponseWriter, status int) {
	hd := w.Header()
	hd["Content-Type"] = hdrJSON
	hd["Cache-Control"] = hdrNoCache
	hd["Content-Length"] = []string{strconv.Itoa(len(wr.buf))}
	w.WriteHeader(status)
	_, _ = w.Write(wr.buf)
}

// useConnections sets the connections objects refer to; they are sorted
// by name in place.
func (wr *writer) useConnections(cs []state.Connection) {
	slices.SortFunc(cs, func(a, b state.Connection) int { return strings.Compare(a.Name, b.Name) })
	wr.conns, wr.connsLoaded = cs, true
}

func (wr *writer) loadConnections() {
	if !wr.connsLoaded {
		wr.useConnections(wr.h.cfg.Source.Connections())
	}
}

// connNamed finds a connection objects refer to.
func (wr *writer) connNamed(name string) *state.Connection {
	wr.loadConnections()
	i, ok := slices.BinarySearchFunc(wr.conns, name, func(c state.Connection, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return nil
	}
	return &wr.conns[i]
}

func compareConsumerQueue(c state.Consumer, vhost, queue string) int {
	if r := strings.Compare(c.VHost, vhost); r != 0 {
		return r
	}
	return strings.Compare(c.Queue, queue)
}

func (wr *writer) loadConsumers() {
	if wr.consLoaded {
		return
	}
	cs := wr.h.cfg.Source.Consumers()
	slices.SortStableFunc(cs, func(a, b state.Consumer) int { return compareConsumerQueue(a, b.VHost, b.Queue) })
	wr.consumers, wr.consLoaded = cs, true
}

// queueConsumers are the consumers of one queue.
func (wr *writer) queueConsumers(vhost, queue string) []state.Consumer {
	wr.loadConsumers()
	i, _ := slices.BinarySearchFunc(wr.consumers, vhost, func(c state.Consumer, v string) int { return compareConsumerQueue(c, v, queue) })
	j := i
	for j < len(wr.consumers) && wr.consumers[j].VHost == vhost && wr.consumers[j].Queue == queue {
		j++
	}
	return wr.consumers[i:j]
}

func (wr *writer) useQueues(qs []state.Queue) {
	slices.SortFunc(qs, func(a, b state.Queue) int { return byVHostName(a.VHost, a.Name, b.VHost, b.Name) })
	wr.queues, wr.queuesLoaded = qs, true
}

// queueNamed finds a queue for consumers' activity status.
func (wr *writer) queueNamed(vhost, name string) *state.Queue {
	if !wr.queuesLoaded {
		wr.useQueues(wr.h.cfg.Source.Queues())
	}
	i, ok := slices.BinarySearchFunc(wr.queues, vhost, func(q state.Queue, v string) int { return byVHostName(q.VHost, q.Name, v, name) })
	if !ok {
		return nil
	}
	return &wr.queues[i]
}

// byVHostName is RabbitMQ's default order of lists: vhost, then name.
func byVHostName(av, an, bv, bn string) int {
	if r := strings.Compare(av, bv); r != 0 {
		return r
	}
	return strings.Compare(an, bn)
}

// addr writes an address as its text without building a string.
func (wr *writer) addr(a netip.Addr) {
	b := a.AppendTo(wr.tmp[:0])
	wr.comma()
	wr.appendString(unsafe.String(unsafe.SliceData(b), len(b)))
}

// rateDetails computes the rates of vals for the object; wr.rts holds them.
func (wr *writer) rateDetails(kind rateKind, vhost, name string, n int, counters uint) {
	wr.h.rates.rates(wr.now, kind, vhost, name, wr.vals[:n], counters, wr.rts[:n])
}

// stat writes "name": v and "name_details": {"rate": r}.
func (wr *writer) stat(name, details string, v uint64, r float64) {
	if wr.key(name) {
		wr.uint(v)
	}
	if wr.key(details) {
		wr.rate(r)
	}
}

func (wr *writer) gauge(name, details string, v int64, r float64) {
	if wr.key(name) {
		wr.int(v)
	}
	if wr.key(details) {
		wr.rate(r)
	}
}

func (wr *writer) kstr(k, v string) {
	if wr.key(k) {
		wr.str(v)
	}
}

func (wr *writer) kbool(k string, v bool) {
	if wr.key(k) {
		wr.boolean(v)
	}
}

func (wr *writer) kint(k string, v int64) {
	if wr.key(k) {
		wr.int(v)
	}
}

func (wr *writer) kuint(k string, v uint64) {
	if wr.key(k) {
		wr.uint(v)
	}
}

func (wr *writer) knull(k string) {
	if wr.key(k) {
		wr.null()
	}
}

func (wr *writer) ktable(k string, m map[string]any) {
	if wr.keyWhole(k) {
		wr.table(m)
	}
}

func (wr *writer) kempty(k string) {
	if wr.key(k) {
		wr.emptyArray()
	}
}

// Exchange types the broker has, described as RabbitMQ describes them.
var exchangeTypes = [...]struct{ name, description string }{
	{"direct", "AMQP direct exchange, as per the AMQP specification"},
	{"fanout", "AMQP fanout exchange, as per the AMQP specification"},
	{"headers", "AMQP headers exchange, as per the AMQP specification"},
	{"topic", "AMQP topic exchange, as per the AMQP specification"},
}

// Retention of samples RabbitMQ's basic rates mode keeps, in seconds;
// tools read it to label charts.
var retention = [...]struct {
	name string
	ages []int64
}{
	{"global", []int64{600, 3600, 28800, 86400}},
	{"basic", []int64{600, 3600}},
	{"detailed", []int64{600}},
}
