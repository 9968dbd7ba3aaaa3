package route

import (
	"encoding/binary"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Index is the routing index of one exchange: its bindings, and the
// structure its type routes by. An Index is not safe for concurrent use:
// the broker holds the exchange's lock around every call (a read lock is
// not enough for Route, which keeps scratch state and a cache).
type Index struct {
	kind Kind
	// The bindings in the order added, a doubly linked list so that
	// removing one costs the same however many there are.
	head, tail *binding
	n          int
	ids        map[string]*binding // by identity (see bindingID)
	dests      map[Dest]*destRec
	// gen numbers Route calls, for the marks that deduplicate
	// destinations without a set per call.
	gen uint64

	fanout  group
	direct  map[string]*group
	topic   topicIndex
	headers headersIndex

	idBuf  []byte
	fields []field
}

// binding is a Binding as the index keeps it.
type binding struct {
	prev, next   *binding // in the index, in the order added
	dprev, dnext *binding // among the bindings to the same destination
	dest         *destRec
	key          string
	args         amqp091.Table // the caller's encoding, copied
	id           string
	// Headers exchanges only: the arguments sorted and normalised, and
	// the pattern read from them.
	pattern *headerPattern
	// Topic exchanges only: the trie node the binding key ends at.
	node *topicNode
}

// destRec is one destination the index routes to, shared by all its
// bindings.
type destRec struct {
	Dest
	refs  int      // bindings to it
	first *binding // the list of them, by dprev and dnext
	mark  uint64   // the Route call (gen) that last appended it
}

// destRef counts the bindings of one group that lead to one destination.
type destRef struct {
	rec *destRec
	n   int
}

// group is a set of bindings that always route together (a fanout
// exchange's, a direct key's, a topic trie node's), kept as the
// deduplicated destinations they lead to, ready to be appended. Their
// order is not kept: a destination removed gives its place to the last.
type group struct {
	refs  []destRef
	ready []Dest
	pos   map[*destRec]int // where each is in refs, once there are many
}

// groupScan is how many destinations a group scans for one before it
// keeps their positions in a map.
const groupScan = 16

func (g *group) find(rec *destRec) int {
	if g.pos != nil {
		if i, ok := g.pos[rec]; ok {
			return i
		}
		return -1
	}
	for i := range g.refs {
		if g.refs[i].rec == rec {
			return i
		}
	}
	return -1
}

func (g *group) add(rec *destRec) {
	if i := g.find(rec); i >= 0 {
		g.refs[i].n++
		return
	}
	g.refs = append(g.refs, destRef{rec: rec, n: 1})
	g.ready = append(g.ready, rec.Dest)
	if g.pos != nil {
		g.pos[rec] = len(g.refs) - 1
	} else if len(g.refs) > groupScan {
		g.pos = make(map[*destRec]int, 2*len(g.refs))
		for i, r := range g.refs {
			g.pos[r.rec] = i
		}
	}
}

// remove drops one binding to rec; it reports whether the group is empty.
func (g *group) remove(rec *destRec) bool {
	i := g.find(rec)
	if i < 0 {
		return len(g.refs) == 0
	}
	if g.refs[i].n--; g.refs[i].n == 0 {
		last := len(g.refs) - 1
		g.refs[i], g.ready[i] = g.refs[last], g.ready[last]
		g.refs[last], g.ready[last] = destRef{}, Dest{}
		g.refs, g.ready = g.refs[:last], g.ready[:last]
		if g.pos != nil {
			delete(g.pos, rec)
			if i < last {
				g.pos[g.refs[i].rec] = i
			}
		}
	}
	return len(g.refs) == 0
}

// New returns an empty index for an exchange of kind k. An index of an
// unknown kind keeps bindings but routes nothing.
func New(k Kind) *Index {
	return &Index{
		kind:  k,
		ids:   make(map[string]*binding),
		dests: make(map[Dest]*destRec),
	}
}

// Kind returns the exchange type the index routes as.
func (ix *Index) Kind() Kind { return ix.kind }

// Len returns the number of bindings.
func (ix *Index) Len() int { return ix.n }

// bindingID appends a binding's identity to dst: destination kind, name,
// key, each length-prefixed, a validity marker and the canonical
// arguments, so that bindings RabbitMQ holds equal have equal identities
// and no others do. It also returns where the canonical arguments start
// in dst and whether they were well formed.
func (ix *Index) bindingID(dst []byte, d Dest, key string, args amqp091.Table) (id []byte, argsAt int, valid bool) {
	dst = append(dst, byte(d.Kind))
	dst = binary.AppendUvarint(dst, uint64(len(d.Name)))
	dst = append(dst, d.Name...)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	at := len(dst)
	dst = append(dst, 0) // validity marker, set below
	dst, ix.fields, valid = appendCanonical(dst, args, ix.fields)
	clear(ix.fields) // they alias the caller's bytes
	if !valid {
		dst[at] = 1
	}
	return dst, at + 1, valid
}

// Add adds a binding; it returns false, changing nothing, when an
// identical one (same destination, key and arguments) exists. The index
// keeps its own copy of b.Args.
func (ix *Index) Add(b Binding) (added bool) {
	id, argsAt, valid := ix.bindingID(ix.idBuf[:0], b.Dest, b.Key, b.Args)
	ix.idBuf = id
	if _, ok := ix.ids[string(id)]; ok {
		return false
	}
	rec := ix.dests[b.Dest]
	if rec == nil {
		rec = &destRec{Dest: b.Dest}
		ix.dests[b.Dest] = rec
	}
	rec.refs++
	nb := &binding{dest: rec, key: b.Key, id: string(id)}
	if len(b.Args) > 0 {
		nb.args = append(amqp091.Table(nil), b.Args...)
	}
	ix.ids[nb.id] = nb
	nb.prev = ix.tail
	if ix.tail != nil {
		ix.tail.next = nb
	} else {
		ix.head = nb
	}
	ix.tail = nb
	ix.n++
	nb.dnext = rec.first
	if rec.first != nil {
		rec.first.dprev = nb
	}
	rec.first = nb
	switch ix.kind {
	case Fanout:
		ix.fanout.add(rec)
	case Direct:
		if ix.direct == nil {
			ix.direct = make(map[string]*group)
		}
		g := ix.direct[b.Key]
		if g == nil {
			g = &group{}
			ix.direct[b.Key] = g
		}
		g.add(rec)
	case Topic:
		nb.node = ix.topic.add(b.Key, rec)
	case Headers:
		canon := amqp091.Table(nil)
		if valid {
			// The pattern's keys and values alias this copy.
			canon = append(canon, id[argsAt:]...)
		} else {
			canon = nb.args
		}
		nb.pattern = newHeaderPattern(nb, canon)
		ix.headers.add(nb.pattern)
	}
	return true
}

// Remove removes the binding with this destination, key and arguments
// (compared as Add compares them); it returns false when there is none.
func (ix *Index) Remove(dest Dest, key string, args amqp091.Table) (removed bool) {
	id, _, _ := ix.bindingID(ix.idBuf[:0], dest, key, args)
	ix.idBuf = id
	b := ix.ids[string(id)]
	if b == nil {
		return false
	}
	ix.unlink(b)
	return true
}

// RemoveDest removes every binding to dest, as when the queue or
// exchange is deleted, and returns how many there were.
func (ix *Index) RemoveDest(dest Dest) int {
	rec := ix.dests[dest]
	if rec == nil {
		return 0
	}
	n := rec.refs
	for rec.first != nil {
		ix.unlink(rec.first)
	}
	return n
}

// unlink takes b out of the index.
func (ix *Index) unlink(b *binding) {
	delete(ix.ids, b.id)
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		ix.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		ix.tail = b.prev
	}
	ix.n--
	rec := b.dest
	if b.dprev != nil {
		b.dprev.dnext = b.dnext
	} else {
		rec.first = b.dnext
	}
	if b.dnext != nil {
		b.dnext.dprev = b.dprev
	}
	b.prev, b.next, b.dprev, b.dnext = nil, nil, nil, nil
	switch ix.kind {
	case Fanout:
		ix.fanout.remove(rec)
	case Direct:
		if g := ix.direct[b.key]; g != nil && g.remove(rec) {
			delete(ix.direct, b.key)
		}
	case Topic:
		ix.topic.remove(b.node, rec)
	case Headers:
		ix.headers.remove(b.pattern)
	}
	rec.refs--
	if rec.refs == 0 {
		delete(ix.dests, rec.Dest)
	}
}

// Bindings appends every binding to dst in the order they were added.
// Their Args alias the index's copies: do not modify them.
func (ix *Index) Bindings(dst []Binding) []Binding {
	for b := ix.head; b != nil; b = b.next {
		dst = append(dst, Binding{Dest: b.dest.Dest, Key: b.key, Args: b.args})
	}
	return dst
}

// RouteKeys is Route for a message routed by several keys, as RabbitMQ
// routes one with CC or BCC headers (see [RoutingKeys]): a binding
// matching any key routes it, and each destination is appended once.
func (ix *Index) RouteKeys(keys [][]byte, headers amqp091.Table, dst []Dest) []Dest {
	if len(keys) == 1 {
		return ix.Route(keys[0], headers, dst)
	}
	switch ix.kind {
	case Fanout, Headers:
		return ix.Route(nil, headers, dst)
	case Direct:
		ix.gen++
		for _, k := range keys {
			if g := ix.direct[string(k)]; g != nil {
				dst = emit(g, ix.gen, dst)
			}
		}
	case Topic:
		ix.gen++
		for _, k := range keys {
			dst = ix.topic.walkKey(k, ix.gen, dst)
		}
	}
	return dst
}

// Route appends to dst the destinations of this exchange's bindings that
// match a message with this routing key and headers, each once, and
// returns the extended slice. Destinations that are exchanges are
// included, not followed (see [Resolver]). The order is unspecified.
// Only a topic exchange looks at the routing key's words, only a headers
// exchange at the headers; a direct exchange compares the whole key and
// a fanout exchange ignores both. Route does not allocate once dst has
// room and the index has seen messages of this shape.
func (ix *Index) Route(key []byte, headers amqp091.Table, dst []Dest) []Dest {
	switch ix.kind {
	case Fanout:
		return append(dst, ix.fanout.ready...)
	case Direct:
		if g := ix.direct[string(key)]; g != nil {
			return append(dst, g.ready...)
		}
		return dst
	case Topic:
		ix.gen++
		return ix.topic.route(key, ix.gen, dst)
	case Headers:
		ix.gen++
		return ix.headers.route(headers, ix.gen, dst)
	}
	return dst
}
