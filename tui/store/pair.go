package store

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	"github.com/wiretap-dev/wiretap/decode"
)

// Request/answer pairing. It runs lazily, per connection, from where it
// last stopped, the first time someone asks for an answer or for latency
// statistics, so loading a capture costs nothing for it. What pairs with
// what:
//
//   - AMQP 0-9-1: a synchronous method (queue.declare, channel.open, ...)
//     with its -ok on the same channel in the other direction (basic.get
//     also with basic.get-empty); on a channel put in confirm mode by
//     confirm.select, each basic.publish with the basic.ack or basic.nack
//     whose delivery-tag is its sequence number (or covers it, with
//     multiple set).
//   - AMQP 1.0: a transfer with the disposition, in the other direction,
//     whose first..last range holds its delivery-id.
//   - PostgreSQL: Parse, Bind, Describe, Close, Execute with their
//     completions in order; Sync and Query with ReadyForQuery; an
//     ErrorResponse answers the oldest pending extended-protocol message and
//     the rest, skipped by the server until Sync, stay unanswered.
type pairing struct {
	answer  []int32 // request index -> answer index + 1 (0: none)
	request []int32 // answer index -> first request index + 1
	conns   []*pairState
}

// pairState is one connection's pairing: the requests waiting for their
// answer. It reads of a unit its head and, for the few whose answer is
// named in their fields (AMQP 0-9-1 acks, AMQP 1.0 transfers and
// dispositions), its fields, through a pairSink, and tells the sink of
// every pair it finds: the store's pairing keeps them, the statistics
// (StatsOf) only measure them, in one pass over the units in order.
type pairState struct {
	done int // ConnUnits entries processed (the store's pairing)

	okWait  map[okKey][]waiting
	confirm map[uint16]bool
	pubSeq  map[uint16]uint64
	pubWait map[uint16][]pub
	xfer    map[uint64]waiting
	pgWait  map[string][]pgWaiting
}

// waiting is a request waiting for its answer: its index and its time.
type waiting struct {
	ix int32
	ns int64
}

// pgWaiting is a PostgreSQL request waiting: query says it is a Query
// (waiting with the Syncs), answered that it was answered already and
// waits on (a Describe by ParameterDescription, a Query by ErrorResponse).
type pgWaiting struct {
	waiting
	query, answered bool
}

// pairSink is what pairing reads units' fields from and reports pairs to.
type pairSink interface {
	// fields returns unit ix's field tree (ix is the unit being paired).
	fields(ix int32) []*decode.Field
	// pair reports that ans answers req; again says req was answered
	// before (its first answer is the one that counts).
	paired(req waiting, ans int32, again bool)
}

func newPairState() *pairState {
	return &pairState{
		okWait: map[okKey][]waiting{}, confirm: map[uint16]bool{}, pubSeq: map[uint16]uint64{},
		pubWait: map[uint16][]pub{}, xfer: map[uint64]waiting{}, pgWait: map[string][]pgWaiting{},
	}
}

type okKey struct {
	ch  uint16
	dir decode.Dir
	typ string
}

type pub struct {
	seq uint64
	waiting
}

// synchronous lists the AMQP 0-9-1 methods answered by a "-ok" (AMQP
// 0-9-1 spec, the "synchronous" methods and their "response" elements).
var synchronous = map[string]bool{
	"connection.start": true, "connection.secure": true, "connection.tune": true,
	"connection.open": true, "connection.close": true, "channel.open": true,
	"channel.flow": true, "channel.close": true, "access.request": true,
	"exchange.declare": true, "exchange.delete": true, "exchange.bind": true,
	"exchange.unbind": true, "queue.declare": true, "queue.bind": true,
	"queue.purge": true, "queue.delete": true, "queue.unbind": true,
	"basic.qos": true, "basic.consume": true, "basic.cancel": true,
	"basic.recover": true, "basic.get": true, "tx.select": true,
	"tx.commit": true, "tx.rollback": true, "confirm.select": true,
}

// pgAnswer maps a PostgreSQL completion to the request kind it answers.
var pgAnswer = map[string]string{
	"ParseComplete": "Parse", "BindComplete": "Bind", "CloseComplete": "Close",
	"CommandComplete": "Execute", "EmptyQueryResponse": "Execute", "PortalSuspended": "Execute",
	"RowDescription": "Describe", "NoData": "Describe", "ParameterDescription": "Describe",
	"ReadyForQuery": "Sync",
}

// Answer returns the index of the unit answering request i, or -1.
func (s *Store) Answer(i int32) int32 {
	s.pairConn(int(s.head(i).conn))
	if int(i) < len(s.pair.answer) {
		return s.pair.answer[i] - 1
	}
	return -1
}

// Request returns the index of the request unit i answers, or -1.
func (s *Store) Request(i int32) int32 {
	s.pairConn(int(s.head(i).conn))
	if int(i) < len(s.pair.request) {
		return s.pair.request[i] - 1
	}
	return -1
}

// PairAll brings the pairing of every connection up to date.
func (s *Store) PairAll() {
	for c := range s.conns {
		s.pairConn(c)
	}
}

// Pairs calls fn for every request/answer pair found so far; call PairAll
// first for a complete picture.
func (s *Store) Pairs(fn func(req, ans int32)) {
	for i, a := range s.pair.answer {
		if a > 0 {
			fn(int32(i), a-1)
		}
	}
}

// storePairs is the store's own pairing's sink: it keeps the pairs.
type storePairs Store

func (p *storePairs) fields(ix int32) []*decode.Field { return (*Store)(p).fields(ix) }

func (p *storePairs) paired(req waiting, ans int32, _ bool) { (*Store)(p).link(req.ix, ans) }

func (s *Store) link(req, ans int32) {
	if n := s.n; len(s.pair.answer) < n {
		s.mem.index += int64(n-len(s.pair.answer)) * 8
		s.pair.answer = append(s.pair.answer, make([]int32, n-len(s.pair.answer))...)
		s.pair.request = append(s.pair.request, make([]int32, n-len(s.pair.request))...)
	}
	if s.pair.answer[req] == 0 {
		s.pair.answer[req] = ans + 1
	}
	if s.pair.request[ans] == 0 {
		s.pair.request[ans] = req + 1
	}
}

func (s *Store) pairConn(c int) {
	if c < 0 {
		return
	}
	for len(s.pair.conns) <= c {
		s.pair.conns = append(s.pair.conns, nil)
	}
	st := s.pair.conns[c]
	if st == nil {
		st = newPairState()
		s.pair.conns[c] = st
	}
	l := s.byConn[c]
	for ; st.done < l.n; st.done++ {
		ix := l.at(st.done)
		st.step((*storePairs)(s), ix, s.head(ix))
	}
}

// step pairs unit ix, of head u, the next unit of the connection.
func (st *pairState) step(sink pairSink, ix int32, u head) {
	switch u.proto {
	case decode.ProtoAMQP091:
		st.pairAMQP091(sink, ix, u)
	case decode.ProtoAMQP10:
		st.pairAMQP10(sink, ix, u)
	case decode.ProtoPgSQL:
		st.pairPg(sink, ix, u)
	}
}

func (st *pairState) pairAMQP091(s pairSink, ix int32, u head) {
	t := u.typ
	switch {
	case synchronous[t]:
		k := okKey{u.ch, u.dir, t}
		st.okWait[k] = append(st.okWait[k], waiting{ix, u.ns})
		if t == "confirm.select" {
			st.confirm[u.ch] = true
		}
	case strings.HasSuffix(t, "-ok") || t == "basic.get-empty":
		req := strings.TrimSuffix(strings.TrimSuffix(t, "-ok"), "-empty")
		k := okKey{u.ch, u.dir.Other(), req}
		if q := st.okWait[k]; len(q) > 0 {
			s.paired(q[0], ix, false)
			st.okWait[k] = q[1:]
		}
	case t == "basic.publish" && u.dir == decode.DirF && st.confirm[u.ch]:
		st.pubSeq[u.ch]++
		st.pubWait[u.ch] = append(st.pubWait[u.ch], pub{st.pubSeq[u.ch], waiting{ix, u.ns}})
	case (t == "basic.ack" || t == "basic.nack") && u.dir == decode.DirB:
		q := st.pubWait[u.ch]
		if len(q) == 0 {
			return
		}
		fs := s.fields(ix)
		tag, ok := FieldUint(fs, "deliverytag")
		if !ok {
			return
		}
		multiple, _ := FieldBool(fs, "multiple")
		// The queue is in order of sequence number: what an ack covers
		// is found by bisection, not by a walk of every publish waiting.
		if multiple {
			n := sort.Search(len(q), func(i int) bool { return q[i].seq > tag })
			for _, p := range q[:n] {
				s.paired(p.waiting, ix, false)
			}
			st.pubWait[u.ch] = q[n:]
		} else if j, ok := slices.BinarySearchFunc(q, tag, func(p pub, t uint64) int { return cmp.Compare(p.seq, t) }); ok {
			s.paired(q[j].waiting, ix, false)
			if j < len(q)/2 { // most often the first: acks come in order
				copy(q[1:j+1], q[:j])
				st.pubWait[u.ch] = q[1:]
			} else {
				st.pubWait[u.ch] = slices.Delete(q, j, j+1)
			}
		}
	}
}

func (st *pairState) pairAMQP10(s pairSink, ix int32, u head) {
	switch u.typ {
	case "transfer":
		if id, ok := FieldUint(s.fields(ix), "deliveryid"); ok {
			st.xfer[uint64(u.dir)<<32|id&0xffffffff] = waiting{ix, u.ns}
		}
	case "disposition":
		fs := s.fields(ix)
		first, ok := FieldUint(fs, "first")
		if !ok {
			return
		}
		last, ok := FieldUint(fs, "last")
		if !ok || last < first {
			last = first
		}
		dir := uint64(u.dir.Other()) << 32
		if last-first < 4096 {
			for id := first; id <= last; id++ {
				if req, ok := st.xfer[dir|id&0xffffffff]; ok {
					s.paired(req, ix, false)
					delete(st.xfer, dir|id&0xffffffff)
				}
			}
			return
		}
		for k, req := range st.xfer {
			if k>>32 == dir>>32 && k&0xffffffff >= first && k&0xffffffff <= last {
				s.paired(req, ix, false)
				delete(st.xfer, k)
			}
		}
	}
}

func (st *pairState) pairPg(s pairSink, ix int32, u head) {
	t := u.typ
	if u.dir == decode.DirF {
		switch t {
		case "Parse", "Bind", "Describe", "Close", "Execute", "Sync":
			st.pgWait[t] = append(st.pgWait[t], pgWaiting{waiting: waiting{ix, u.ns}})
		case "Query":
			st.pgWait["Sync"] = append(st.pgWait["Sync"], pgWaiting{waiting: waiting{ix, u.ns}, query: true})
		}
		return
	}
	if t == "ErrorResponse" {
		oldest, kind := int32(-1), ""
		for k, q := range st.pgWait {
			if k != "Sync" && len(q) > 0 && (oldest < 0 || q[0].ix < oldest) {
				oldest, kind = q[0].ix, k
			}
		}
		if oldest >= 0 {
			q := st.pgWait[kind]
			s.paired(q[0].waiting, ix, q[0].answered)
			st.pgWait[kind] = q[1:]
			// The server skips the rest of the extended-protocol messages
			// up to Sync; they will never be answered.
			for k := range st.pgWait {
				if k != "Sync" {
					st.pgWait[k] = st.pgWait[k][:0]
				}
			}
		} else if q := st.pgWait["Sync"]; len(q) > 0 && q[0].query {
			s.paired(q[0].waiting, ix, q[0].answered)
			q[0].answered = true
		}
		return
	}
	kind, ok := pgAnswer[t]
	if !ok {
		return
	}
	q := st.pgWait[kind]
	if len(q) == 0 {
		return
	}
	if t == "RowDescription" && q[0].answered {
		// ParameterDescription already answered this Describe of a statement.
		st.pgWait[kind] = q[1:]
		return
	}
	s.paired(q[0].waiting, ix, q[0].answered)
	if t == "ParameterDescription" {
		q[0].answered = true
		return // a RowDescription or NoData follows for the same Describe
	}
	st.pgWait[kind] = q[1:]
}

// FieldUint finds the first field whose key (or last dotted name segment),
// ignoring case, '-' and '_', is norm, and returns its value as an
// unsigned integer.
func FieldUint(fs []*decode.Field, norm string) (uint64, bool) {
	f := findNorm(fs, norm)
	if f == nil {
		return 0, false
	}
	switch v := f.Value.(type) {
	case uint64:
		return v, true
	case int64:
		if v >= 0 {
			return uint64(v), true
		}
	case int:
		if v >= 0 {
			return uint64(v), true
		}
	case uint32:
		return uint64(v), true
	}
	return 0, false
}

// FieldBool is FieldUint for booleans.
func FieldBool(fs []*decode.Field, norm string) (bool, bool) {
	f := findNorm(fs, norm)
	if f == nil {
		return false, false
	}
	b, ok := f.Value.(bool)
	return b, ok
}

func findNorm(fs []*decode.Field, norm string) *decode.Field {
	var found *decode.Field
	decode.Walk(fs, func(f *decode.Field) bool {
		if found != nil {
			return false
		}
		name := f.Name
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		if normEqual(f.Key, norm) || normEqual(name, norm) {
			found = f
			return false
		}
		return true
	})
	return found
}

// normEqual compares s with norm ignoring case, '-' and '_'.
func normEqual(s, norm string) bool {
	j := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' || c == '_' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j >= len(norm) || norm[j] != c {
			return false
		}
		j++
	}
	return j == len(norm)
}
