package broker

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"sync"

	"github.com/wiretap-dev/wiretap/broker/latency"
	"github.com/wiretap-dev/wiretap/broker/route"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// vhost is one virtual host: its exchanges, queues and bindings. mu guards
// the maps and every exchange's binding index; routing takes it for
// reading, topology changes for writing.
type vhost struct {
	b    *Broker
	name string
	// defaultLat is the default exchange's latency.
	defaultLat latency.Pair

	mu        sync.RWMutex
	exchanges map[string]*exchange
	queues    map[string]*queueState
}

// exchange is one exchange. Its index holds the bindings it is the source
// of.
type exchange struct {
	name       string
	typ        string
	kind       route.Kind
	durable    bool
	autoDelete bool
	internal   bool
	args       amqp091.Table
	alternate  string // alternate-exchange argument, "" for none
	system     bool   // amq.* and the default exchange

	// routeMu serialises use of the index: routing may fill its caches.
	routeMu sync.Mutex
	index   *route.Index

	publishIn, publishOut uint64 // under routeMu
	lat                   latency.Pair
}

// systemExchanges are those every vhost has, as RabbitMQ declares them.
var systemExchanges = []struct {
	name, typ string
	internal  bool
}{
	{"", "direct", false},
	{"amq.direct", "direct", false},
	{"amq.fanout", "fanout", false},
	{"amq.headers", "headers", false},
	{"amq.match", "headers", false},
	{"amq.rabbitmq.trace", "topic", true},
	{"amq.topic", "topic", false},
}

func newVHost(b *Broker, name string) *vhost {
	v := &vhost{b: b, name: name, exchanges: make(map[string]*exchange), queues: make(map[string]*queueState)}
	for _, s := range systemExchanges {
		k, _ := route.ParseKind(s.typ)
		v.exchanges[s.name] = &exchange{name: s.name, typ: s.typ, kind: k, durable: true, internal: s.internal, system: true, index: route.New(k)}
	}
	return v
}

// generatedName returns RabbitMQ's form of a server-generated name:
// prefix and 22 base64url characters (16 random bytes).
func generatedName(prefix string) string {
	var r [16]byte
	rand.Read(r[:])
	return prefix + base64.RawURLEncoding.EncodeToString(r[:])
}

// reservedName reports the amq. prefix RabbitMQ keeps for itself.
func reservedName(name string) bool { return len(name) >= 4 && name[:4] == "amq." }

func boolText(b bool) string {
	if b {
		return "'true'"
	}
	return "'false'"
}

// declareExchange implements exchange.declare.
func (v *vhost) declareExchange(c *conn, m *amqp091.ExchangeDeclare) *amqpError {
	name := string(m.Exchange)
	if name == "" {
		return errorf(403, "operation not permitted on the default exchange")
	}
	if m.Passive {
		v.mu.RLock()
		_, ok := v.exchanges[name]
		v.mu.RUnlock()
		if !ok {
			return errNoExchange(name, v.name)
		}
		return nil
	}
	typ := string(m.Type)
	kind, ok := route.ParseKind(typ)
	if !ok {
		return errorf(503, "unknown exchange type '"+typ+"'")
	}
	if err := c.check(permConfigure, "exchange", name); err != nil {
		return err
	}
	var alternate string
	if ae, ok := m.Arguments.Get("alternate-exchange"); ok {
		if ae.Type != amqp091.TypeLongstr {
			return errorf(406, "invalid arg 'alternate-exchange' for "+rsExchange(name, v.name)+": {unacceptable_type,"+ae.Type.RabbitName()+"}")
		}
		alternate = string(ae.Bytes())
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.b.topo.Add(1)
	x, ok := v.exchanges[name]
	if !ok && reservedName(name) {
		// An existing amq.* exchange may be re-declared; a new one not.
		return errorf(403, "exchange name '"+name+"' contains reserved prefix 'amq.*'")
	}
	if ok {
		switch {
		case x.typ != typ:
			return errInequivalent("type", "exchange", name, v.name, "'"+typ+"'", "'"+x.typ+"'")
		case x.durable != m.Durable:
			return errInequivalent("durable", "exchange", name, v.name, boolText(m.Durable), boolText(x.durable))
		case x.autoDelete != m.AutoDelete:
			return errInequivalent("auto_delete", "exchange", name, v.name, boolText(m.AutoDelete), boolText(x.autoDelete))
		case x.internal != m.Internal:
			return errInequivalent("internal", "exchange", name, v.name, boolText(m.Internal), boolText(x.internal))
		}
		if e := argsEquivalent(x.args, m.Arguments, exchangeEquivalenceArgs, "exchange", name, v.name); e != nil {
			return e
		}
		return nil
	}
	v.exchanges[name] = &exchange{
		name: name, typ: typ, kind: kind, durable: m.Durable, autoDelete: m.AutoDelete,
		internal: m.Internal, args: cloneTable(m.Arguments), alternate: alternate, index: route.New(kind),
	}
	return nil
}

// exchangeEquivalenceArgs are the arguments RabbitMQ compares on an
// exchange re-declare.
var exchangeEquivalenceArgs = []string{"alternate-exchange"}

// queueEquivalenceArgs are those compared on a queue re-declare, in
// RabbitMQ 3.10's order.
var queueEquivalenceArgs = []string{
	"x-expires", "x-message-ttl", "x-dead-letter-exchange", "x-dead-letter-routing-key",
	"x-max-length", "x-max-length-bytes", "x-max-in-memory-length", "x-max-in-memory-bytes",
	"x-max-priority", "x-overflow", "x-queue-mode", "x-single-active-consumer", "x-queue-type",
}

func cloneTable(t amqp091.Table) amqp091.Table {
	if len(t) == 0 {
		return nil
	}
	return append(amqp091.Table(nil), t...)
}

// deleteExchange implements exchange.delete.
func (v *vhost) deleteExchange(c *conn, m *amqp091.ExchangeDelete) *amqpError {
	name := string(m.Exchange)
	if name == "" {
		return errorf(403, "operation not permitted on the default exchange")
	}
	if err := c.check(permConfigure, "exchange", name); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.b.topo.Add(1)
	x, ok := v.exchanges[name]
	if !ok {
		return nil // RabbitMQ answers delete-ok for a missing exchange
	}
	if x.system {
		return errorf(403, "deletion of system "+rsExchange(name, v.name)+" not allowed")
	}
	// if-unused looks at the bindings the exchange is the source of only.
	if m.IfUnused && x.index.Len() > 0 {
		return errorf(406, rsExchange(name, v.name)+" in use")
	}
	v.removeExchangeLocked(x)
	return nil
}

func (v *vhost) removeExchangeLocked(x *exchange) {
	delete(v.exchanges, x.name)
	v.removeDestLocked(route.Dest{Kind: route.Exchange, Name: x.name})
}

// removeDestLocked drops every binding to d, and auto-delete exchanges
// that lose their last binding.
func (v *vhost) removeDestLocked(d route.Dest) {
	var gone []*exchange
	for _, x := range v.exchanges {
		if x.index.RemoveDest(d) > 0 && x.autoDelete && x.index.Len() == 0 {
			gone = append(gone, x)
		}
	}
	for _, x := range gone {
		v.removeExchangeLocked(x)
	}
}

// bind implements queue.bind and exchange.bind.
func (v *vhost) bind(c *conn, src string, dest route.Dest, key string, args amqp091.Table) *amqpError {
	if src == "" || (dest.Kind == route.Exchange && dest.Name == "") {
		return errorf(403, "operation not permitted on the default exchange")
	}
	if err := c.check(permWrite, destKind(dest), dest.Name); err != nil {
		return err
	}
	if err := c.check(permRead, "exchange", src); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.b.topo.Add(1)
	if e := v.checkBindEnds(c, src, dest); e != nil {
		return e
	}
	x := v.exchanges[src]
	if err := route.CheckBinding(x.kind, args); err != nil {
		if ib, ok := err.(*route.InvalidBindingError); ok {
			return errorf(406, ib.Text)
		}
		return errorf(406, err.Error())
	}
	x.index.Add(route.Binding{Dest: dest, Key: key, Args: args})
	return nil
}

func destKind(d route.Dest) string {
	if d.Kind == route.Queue {
		return "queue"
	}
	return "exchange"
}

// checkBindEnds checks that both ends of a binding exist, in RabbitMQ's
// order (destination first... as rabbit_binding:add reports the source
// first when both are missing).
func (v *vhost) checkBindEnds(c *conn, src string, dest route.Dest) *amqpError {
	_, srcOK := v.exchanges[src]
	var destOK bool
	if dest.Kind == route.Queue {
		q, ok := v.queues[dest.Name]
		destOK = ok
		if ok && q.exclusiveTo(c) {
			return errLocked(dest.Name, v.name)
		}
	} else {
		_, destOK = v.exchanges[dest.Name]
	}
	switch {
	case !srcOK && !destOK:
		return errorf(404, "no "+rsExchange(src, v.name)+" and no "+destRS(dest, v.name))
	case !srcOK:
		return errNoExchange(src, v.name)
	case !destOK:
		return errorf(404, "no "+destRS(dest, v.name))
	}
	return nil
}

func destRS(d route.Dest, vhost string) string {
	if d.Kind == route.Queue {
		return rsQueue(d.Name, vhost)
	}
	return rsExchange(d.Name, vhost)
}

// unbind implements queue.unbind and exchange.unbind: unbinding what does
// not exist is no error, but the ends must exist.
func (v *vhost) unbind(c *conn, src string, dest route.Dest, key string, args amqp091.Table) *amqpError {
	if src == "" || (dest.Kind == route.Exchange && dest.Name == "") {
		return errorf(403, "operation not permitted on the default exchange")
	}
	if err := c.check(permWrite, destKind(dest), dest.Name); err != nil {
		return err
	}
	if err := c.check(permRead, "exchange", src); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.b.topo.Add(1)
	// RabbitMQ answers unbind-ok when the binding's ends are missing, but
	// refuses another connection's exclusive queue.
	if dest.Kind == route.Queue {
		if q, ok := v.queues[dest.Name]; ok && q.exclusiveTo(c) {
			return errLocked(dest.Name, v.name)
		}
	}
	x, ok := v.exchanges[src]
	if !ok {
		return nil
	}
	if x.index.Remove(dest, key, args) && x.autoDelete && x.index.Len() == 0 {
		v.removeExchangeLocked(x)
	}
	return nil
}

// routeScratch is what one publish needs to route, kept per channel so
// routing allocates nothing.
type routeScratch struct {
	keys   [][]byte
	dests  []route.Dest
	work   []string
	seen   []string
	queues []*queueState
	// via is the latency of the exchange published to, set by route.
	via *latency.Pair
}

// route resolves a publish to queues by its routing keys (the routing key,
// and CC and BCC's): the exchange's bindings, then exchange-to-exchange
// bindings and alternate exchanges (taken when an exchange routes no key
// anywhere), each exchange visited once so a cycle ends. ok is false when
// the exchange does not exist; internal when it may not be published to.
func (v *vhost) route(exchangeName string, keys [][]byte, headers amqp091.Table, s *routeScratch) (qs []*queueState, ok, internal bool) {
	s.queues = s.queues[:0]
	s.via = nil
	v.mu.RLock()
	defer v.mu.RUnlock()
	if exchangeName == "" {
		s.via = &v.defaultLat
		for _, k := range keys {
			if q, ok := v.queues[string(k)]; ok && !containsQueue(s.queues, q) {
				s.queues = append(s.queues, q)
			}
		}
		return s.queues, true, false
	}
	x, ok := v.exchanges[exchangeName]
	if !ok {
		return nil, false, false
	}
	if x.internal {
		return nil, true, true
	}
	s.via = &x.lat
	s.work = append(s.work[:0], exchangeName)
	s.seen = append(s.seen[:0], exchangeName)
	for len(s.work) > 0 {
		name := s.work[len(s.work)-1]
		s.work = s.work[:len(s.work)-1]
		x := v.exchanges[name]
		if x == nil {
			continue
		}
		x.routeMu.Lock()
		s.dests = x.index.RouteKeys(keys, headers, s.dests[:0])
		x.publishIn++
		if len(s.dests) > 0 {
			x.publishOut++
		}
		x.routeMu.Unlock()
		if len(s.dests) == 0 && x.alternate != "" {
			s.dests = append(s.dests, route.Dest{Kind: route.Exchange, Name: x.alternate})
		}
		for _, d := range s.dests {
			if d.Kind == route.Exchange {
				if !contains(s.seen, d.Name) {
					s.seen = append(s.seen, d.Name)
					s.work = append(s.work, d.Name)
				}
				continue
			}
			q := v.queues[d.Name]
			if q != nil && !containsQueue(s.queues, q) {
				s.queues = append(s.queues, q)
			}
		}
	}
	return s.queues, true, false
}

func contains(s []string, x string) bool {
	for _, e := range s {
		if e == x {
			return true
		}
	}
	return false
}

func containsQueue(s []*queueState, q *queueState) bool {
	for _, e := range s {
		if e == q {
			return true
		}
	}
	return false
}

// typeClass groups types RabbitMQ treats as one when comparing arguments.
func typeClass(t amqp091.ValueType) string {
	switch t {
	case amqp091.TypeInt8, amqp091.TypeUint8, amqp091.TypeInt16, amqp091.TypeUint16,
		amqp091.TypeInt32, amqp091.TypeUint32, amqp091.TypeInt64, amqp091.TypeUint64:
		return "int"
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return "float"
	}
	return t.RabbitName()
}

// valueText prints a value as Erlang's ~p / ~s would in RabbitMQ's texts.
func valueText(v amqp091.Value) string {
	switch typeClass(v.Type) {
	case "int":
		return strconv.FormatInt(v.Int(), 10)
	case "float":
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	switch v.Type {
	case amqp091.TypeBool:
		if v.Bool() {
			return "true"
		}
		return "false"
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return string(v.Bytes())
	}
	return v.Type.RabbitName()
}

func sameValue(a, b amqp091.Value) bool {
	if typeClass(a.Type) != typeClass(b.Type) {
		return false
	}
	switch typeClass(a.Type) {
	case "int":
		return a.Int() == b.Int()
	case "float":
		return a.Float() == b.Float()
	}
	switch a.Type {
	case amqp091.TypeBool:
		return a.Bool() == b.Bool()
	}
	return string(a.Bytes()) == string(b.Bytes()) && a.Uint() == b.Uint()
}

// argsEquivalent compares the arguments RabbitMQ compares on a re-declare
// and words a difference as rabbit_misc:assert_args_equivalence does.
func argsEquivalent(cur, req amqp091.Table, keys []string, kind, name, vhost string) *amqpError {
	for _, k := range keys {
		c, cok := cur.Get(k)
		r, rok := req.Get(k)
		switch {
		case !cok && !rok:
			continue
		case cok && rok:
			if sameValue(c, r) {
				continue
			}
			if typeClass(c.Type) == typeClass(r.Type) {
				return errInequivalent(k, kind, name, vhost, "'"+valueText(r)+"'", "'"+valueText(c)+"'")
			}
			return errInequivalent(k, kind, name, vhost, typedText(r), typedText(c))
		case cok:
			return errInequivalent(k, kind, name, vhost, "none", typedText(c))
		default:
			return errInequivalent(k, kind, name, vhost, typedText(r), "none")
		}
	}
	return nil
}

func typedText(v amqp091.Value) string {
	return "the value '" + valueText(v) + "' of type '" + v.Type.RabbitName() + "'"
}
