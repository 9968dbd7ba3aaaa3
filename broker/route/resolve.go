package route

import "github.com/wiretap-dev/wiretap/decode/amqp091"

// Resolver takes a message from the exchange it was published to, through
// exchange-to-exchange bindings and alternate exchanges, to the queues it
// ends in, as RabbitMQ 3.10's rabbit_exchange:route does: every exchange
// reached routes the message once (one already visited is not followed
// again, so a cycle ends), and an exchange whose bindings route it
// nowhere passes it to its alternate exchange. An exchange counts as
// routing somewhere when its bindings reach anything, another exchange
// included, even one that routes it nowhere in turn.
//
// The default exchange ("") has no index: the broker routes to the queue
// named by the key itself. A Resolver keeps scratch state and is not
// safe for concurrent use; keep one per connection or channel.
type Resolver struct {
	// Lookup returns the index of the exchange named name and the
	// alternate exchange it has by argument or policy ("" for none), or
	// false when there is no such exchange (it is then skipped, as
	// RabbitMQ skips it).
	Lookup func(name string) (ix *Index, alternate string, ok bool)
	// Release, when set, is called after each Route or Explain on an
	// index Lookup returned, so that Lookup may lock the exchange and
	// Release unlock it.
	Release func(name string)
	// RoutedOnly makes Explain list only the bindings to destinations
	// routed (see Index.ExplainRouted) and count the rest in
	// Hop.Unexplained: for explaining every publish as it passes.
	RoutedOnly bool

	seen    []string
	seenSet map[string]struct{} // used instead of seen past seenLinear
	useSet  bool
	work    []string
	queues  map[string]struct{}
}

// seenLinear is how many exchanges one walk visits before the Resolver
// switches from scanning a slice to a set.
const seenLinear = 16

// visit reports whether name is new to this walk, and marks it seen.
func (r *Resolver) visit(name string) bool {
	if r.useSet {
		if _, ok := r.seenSet[name]; ok {
			return false
		}
		r.seenSet[name] = struct{}{}
		return true
	}
	for _, s := range r.seen {
		if s == name {
			return false
		}
	}
	r.seen = append(r.seen, name)
	if len(r.seen) > seenLinear {
		if r.seenSet == nil {
			r.seenSet = make(map[string]struct{}, 2*seenLinear)
		}
		r.useSet = true
		for _, s := range r.seen {
			r.seenSet[s] = struct{}{}
		}
	}
	return true
}

func (r *Resolver) reset(start string) {
	clear(r.seen)
	r.seen = append(r.seen[:0], start)
	if r.useSet {
		clear(r.seenSet)
		r.useSet = false
	}
	clear(r.work)
	r.work = append(r.work[:0], start)
}

// Resolve appends to dst the queues a message published to exchange start
// with this routing key and headers ends in, each once, and returns the
// extended slice (nothing appended: unroutable, what mandatory returns).
// It does not allocate in steady state.
func (r *Resolver) Resolve(start string, key []byte, headers amqp091.Table, dst []Dest) []Dest {
	return r.resolve(start, key, nil, headers, dst)
}

// ResolveKeys is Resolve for a message routed by several keys (see
// [RoutingKeys]): every exchange on the way routes by all of them, and
// passes the message to its alternate only when none routes it anywhere.
func (r *Resolver) ResolveKeys(start string, keys [][]byte, headers amqp091.Table, dst []Dest) []Dest {
	if len(keys) == 1 {
		return r.resolve(start, keys[0], nil, headers, dst)
	}
	return r.resolve(start, nil, keys, headers, dst)
}

// resolve routes by keys, or by key when keys is nil.
func (r *Resolver) resolve(start string, key []byte, keys [][]byte, headers amqp091.Table, dst []Dest) []Dest {
	n0 := len(dst)
	r.reset(start)
	sources := 0 // exchanges that routed to queues
	for len(r.work) > 0 {
		x := r.work[len(r.work)-1]
		r.work = r.work[:len(r.work)-1]
		ix, alternate, ok := r.Lookup(x)
		if !ok {
			continue
		}
		n := len(dst)
		if keys != nil {
			dst = ix.RouteKeys(keys, headers, dst)
		} else {
			dst = ix.Route(key, headers, dst)
		}
		if r.Release != nil {
			r.Release(x)
		}
		if len(dst) == n && alternate != "" && r.visit(alternate) {
			r.work = append(r.work, alternate)
		}
		// Exchanges go to the work list, queues stay.
		q := n
		for _, d := range dst[n:] {
			if d.Kind == Exchange {
				if r.visit(d.Name) {
					r.work = append(r.work, d.Name)
				}
				continue
			}
			dst[q] = d
			q++
		}
		clear(dst[q:])
		dst = dst[:q]
		if q > n {
			sources++
		}
	}
	if sources > 1 {
		dst = r.dedup(dst, n0)
	}
	return dst
}

// dedup drops repeated queues from dst[n0:], keeping first occurrences:
// one index never repeats a queue, two can.
func (r *Resolver) dedup(dst []Dest, n0 int) []Dest {
	q := n0
	if len(dst)-n0 <= seenLinear {
	next:
		for _, d := range dst[n0:] {
			for _, e := range dst[n0:q] {
				if e.Name == d.Name {
					continue next
				}
			}
			dst[q] = d
			q++
		}
	} else {
		if r.queues == nil {
			r.queues = make(map[string]struct{})
		}
		clear(r.queues)
		for _, d := range dst[n0:] {
			if _, ok := r.queues[d.Name]; ok {
				continue
			}
			r.queues[d.Name] = struct{}{}
			dst[q] = d
			q++
		}
	}
	clear(dst[q:])
	return dst[:q]
}

// Hop is one exchange a message reached, for route explain.
type Hop struct {
	Exchange string
	Kind     Kind
	// From is the exchange that led here ("" for the first): by a
	// binding to this exchange, or, when Alternate, as its alternate
	// exchange because its bindings routed the message nowhere.
	From      string
	Alternate bool
	// Missing: there is no such exchange, so nothing was routed here.
	// Repeated: the exchange was reached already (a cycle, or two paths
	// to it); RabbitMQ does not route through it again.
	Missing, Repeated bool
	Matches           []Match // every binding of the exchange, and whether it matched (for each key, see ExplainKeys)
	// Unexplained counts the bindings left out of Matches under
	// Resolver.RoutedOnly: they lead to none of the destinations routed.
	Unexplained int
	Routed      []Dest // what its bindings routed to, queues and exchanges
}

// Explain walks as Resolve does and returns the queues and every hop,
// including the repeated and missing exchanges Resolve passes over
// silently. It allocates; it is meant for route explain.
func (r *Resolver) Explain(start string, key []byte, headers amqp091.Table) (queues []Dest, hops []Hop) {
	return r.ExplainKeys(start, [][]byte{key}, headers)
}

// ExplainKeys is Explain for a message routed by several keys (see
// [RoutingKeys]); a direct or topic exchange's Matches then hold every
// binding once for each key (see Match.RoutingKey).
func (r *Resolver) ExplainKeys(start string, keys [][]byte, headers amqp091.Table) (queues []Dest, hops []Hop) {
	type item struct {
		name, from string
		alternate  bool
	}
	seen := map[string]bool{start: true}
	work := []item{{name: start}}
	inQueues := map[string]bool{}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		h := Hop{Exchange: it.name, From: it.from, Alternate: it.alternate}
		ix, alternate, ok := r.Lookup(it.name)
		if !ok {
			h.Missing = true
			hops = append(hops, h)
			continue
		}
		h.Kind = ix.Kind()
		h.Routed = ix.RouteKeys(keys, headers, nil)
		for i, k := range keys {
			if i > 0 && (h.Kind == Fanout || h.Kind == Headers) {
				break // they route by no key
			}
			if r.RoutedOnly {
				ms := ix.ExplainRouted(k, headers, h.Routed)
				h.Matches = append(h.Matches, ms...)
				h.Unexplained += ix.Len() - len(ms)
			} else {
				h.Matches = append(h.Matches, ix.Explain(k, headers)...)
			}
		}
		if r.Release != nil {
			r.Release(it.name)
		}
		hops = append(hops, h)
		follow := func(name string, alt bool) {
			if seen[name] {
				hops = append(hops, Hop{Exchange: name, From: it.name, Alternate: alt, Repeated: true})
				return
			}
			seen[name] = true
			work = append(work, item{name: name, from: it.name, alternate: alt})
		}
		if len(h.Routed) == 0 && alternate != "" {
			follow(alternate, true)
		}
		for _, d := range h.Routed {
			if d.Kind == Exchange {
				follow(d.Name, false)
			} else if !inQueues[d.Name] {
				inQueues[d.Name] = true
				queues = append(queues, d)
			}
		}
	}
	return queues, hops
}
