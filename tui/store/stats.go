package store

import (
	"math/bits"
	"slices"
	"sort"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// LatencyBounds are the upper bounds of the latency histogram's buckets;
// a last bucket holds everything slower. They are the buckets RabbitMQ
// users compare delivery latency with.
var LatencyBounds = [...]time.Duration{time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond, time.Second}

// Latency summarises request/answer delays. N, Buckets and Max are exact.
// The percentiles (nearest rank) are exact too up to [ExactLatencies]
// pairs (while StatsOf holds fewer than 2^20 delays, 8 MiB, for all its
// Latencies together); past that they come from a log-linear histogram
// and Approx is set: each is then within [LatencyError] (1/128, 0.8%) of
// the exact value, relative to it.
type Latency struct {
	N             int
	Buckets       [len(LatencyBounds) + 1]int
	P50, P90, P99 time.Duration
	Max           time.Duration
	Approx        bool // the percentiles are within LatencyError
}

// ExactLatencies is how many delays a Latency keeps to give exact
// percentiles; past it (or past exactPool delays held for all of a
// computation's Latencies together) they are counted in a histogram.
const ExactLatencies = 1 << 16

// exactPool bounds the delays StatsOf keeps for exact percentiles, over
// all its Latencies: 8 MiB.
const exactPool = 1 << 20

// LatencyError is the largest relative error of an approximated
// percentile: the histogram has 2^histBits buckets per power of two, and
// a percentile is given as the middle of its bucket.
const LatencyError = 1.0 / (2 << histBits)

// TypeCount is the number and bytes of units of one type.
type TypeCount struct {
	Proto string
	Type  string
	Units int
	Bytes int64
}

// Stats is what the statistics view shows. Everything in it is exact but
// the latency percentiles of more than [ExactLatencies] pairs (see
// [Latency]).
type Stats struct {
	Units int
	Bytes int64
	Span  time.Duration
	Types []TypeCount // most frequent first
	// Rate counts units per interval of RateStep from the first unit.
	Rate     []int
	RateStep time.Duration
	Overall  Latency
	PerConn  []Latency // indexed like Conns
}

// StatsOf computes the statistics of units (a Snapshot), for a background
// goroutine while the UI's store grows; buckets is the number of rate
// intervals wanted (the chart's width). It reads the units' heads (what a
// frozen unit's record holds: time, length, protocol, type, connection)
// in two passes, a block at a time under the store's lock as
// [View.RangeShallow] does, rebuilding no unit but those whose answer is
// named in their fields (AMQP 0-9-1 acks on confirm channels, AMQP 1.0
// transfers and dispositions), and pairs requests with answers on the way
// as the store's pairing does. What it holds apart from the result is the
// requests waiting for their answer and at most exactPool delays.
func StatsOf(units View, buckets int) Stats {
	var st Stats
	st.Units = units.Len()
	if st.Units == 0 {
		return st
	}
	buckets = max(buckets, 1)
	p := statsPass{types: map[typeKey]int{}}
	var first, last int64 // decode.NoTime, the smallest int64, comes first
	units.heads(0, units.Len(), func(i int32, h *head, src *headSrc) {
		if i == 0 {
			first, last = h.ns, h.ns
		}
		first, last = min(first, h.ns), max(last, h.ns)
		st.Bytes += int64(h.length)
		p.count(h, src)
		if h.conn >= 0 {
			p.pair(i, h, src)
		}
	})
	st.Types = p.counts
	sort.Slice(st.Types, func(i, j int) bool {
		a, b := st.Types[i], st.Types[j]
		if a.Units != b.Units {
			return a.Units > b.Units
		}
		return a.Proto+a.Type < b.Proto+b.Type
	})
	t0 := timeOf(first)
	st.Span = timeOf(last).Sub(t0)
	st.RateStep = st.Span/time.Duration(buckets) + 1
	st.Rate = make([]int, buckets)
	units.heads(0, units.Len(), func(_ int32, h *head, _ *headSrc) {
		if b := int(timeOf(h.ns).Sub(t0) / st.RateStep); b >= 0 && b < buckets {
			st.Rate[b]++
		}
	})
	st.Overall = p.overall.latency()
	st.PerConn = make([]Latency, len(p.per))
	for i := range p.per {
		st.PerConn[i] = p.per[i].latency()
	}
	return st
}

// timeOf is a head's time (the zero Time when unknown).
func timeOf(ns int64) time.Time { return head{ns: ns}.time() }

type typeKey struct {
	proto decode.Proto
	typ   string
}

// statsPass is StatsOf's first pass: the counts by type and the pairing.
type statsPass struct {
	types  map[typeKey]int // position in counts
	counts []TypeCount
	// byRec caches counts' positions (+1) by a record's type and protocol.
	byRec []int32

	conns   []*pairState // by connection
	src     *headSrc     // the unit being paired
	ns      int64        // its time
	conn    int32        // its connection
	overall latAcc
	per     []latAcc
	pool    int // delays held exact by overall and per
}

// count adds h to the counts by type.
func (p *statsPass) count(h *head, src *headSrc) {
	k := -1
	if src.r != nil && h.proto < 4 && src.pin == nil {
		k = int(src.r.typ)<<2 | int(h.proto)
		if k < len(p.byRec) && p.byRec[k] > 0 {
			tc := &p.counts[p.byRec[k]-1]
			tc.Units++
			tc.Bytes += int64(h.length)
			return
		}
	}
	key := typeKey{h.proto, h.typ}
	c, ok := p.types[key]
	if !ok {
		c = len(p.counts)
		p.types[key] = c
		p.counts = append(p.counts, TypeCount{Proto: h.proto.String(), Type: h.typ})
	}
	p.counts[c].Units++
	p.counts[c].Bytes += int64(h.length)
	if k >= 0 {
		if k >= len(p.byRec) {
			p.byRec = append(p.byRec, make([]int32, k+1-len(p.byRec))...)
		}
		p.byRec[k] = int32(c + 1)
	}
}

// pair pairs unit i, of connection h.conn.
func (p *statsPass) pair(i int32, h *head, src *headSrc) {
	for int(h.conn) >= len(p.conns) {
		p.conns = append(p.conns, nil)
		p.per = append(p.per, latAcc{})
	}
	st := p.conns[h.conn]
	if st == nil {
		st = newPairState()
		p.conns[h.conn] = st
	}
	p.src, p.ns, p.conn = src, h.ns, h.conn
	st.step(p, i, *h)
}

func (p *statsPass) fields(int32) []*decode.Field { return p.src.fields() }

func (p *statsPass) paired(req waiting, _ int32, again bool) {
	if again {
		return // a pair is counted for the request's first answer
	}
	d := max(timeOf(p.ns).Sub(timeOf(req.ns)), 0)
	p.overall.add(d, &p.pool)
	p.per[p.conn].add(d, &p.pool)
}

// latAcc gathers delays for a Latency: exactly, in a slice, until it has
// ExactLatencies of them or the pool of exact delays is spent, then in a
// histogram.
type latAcc struct {
	n       int
	buckets [len(LatencyBounds) + 1]int
	max     time.Duration
	exact   []time.Duration
	hist    *logHist
}

func (a *latAcc) add(d time.Duration, pool *int) {
	a.n++
	a.buckets[latencyBucket(d)]++
	a.max = max(a.max, d)
	if a.hist != nil {
		a.hist.add(d)
		return
	}
	if len(a.exact) < ExactLatencies && *pool < exactPool {
		a.exact = append(a.exact, d)
		*pool++
		return
	}
	a.hist = new(logHist)
	for _, e := range a.exact {
		a.hist.add(e)
	}
	*pool -= len(a.exact)
	a.exact = nil
	a.hist.add(d)
}

func (a *latAcc) latency() Latency {
	if a.hist == nil {
		return Summarise(a.exact)
	}
	l := Latency{N: a.n, Buckets: a.buckets, Max: a.max, Approx: true}
	l.P50, l.P90, l.P99 = a.hist.rank(rankOf(50, a.n), a.max), a.hist.rank(rankOf(90, a.n), a.max), a.hist.rank(rankOf(99, a.n), a.max)
	return l
}

// rankOf is the nearest rank (from 1) of percentile p of n values.
func rankOf(p, n int) int { return max(1, (p*n+99)/100) }

// latencyBucket is the position of d's bucket in Latency.Buckets.
func latencyBucket(d time.Duration) int {
	for i, bound := range LatencyBounds {
		if d <= bound {
			return i
		}
	}
	return len(LatencyBounds)
}

// histBits is log2 of the histogram's buckets per power of two.
const histBits = 6

// logHist is a log-linear histogram of durations (HDR-style): values
// below 2^histBits ns are counted exactly, larger ones in 2^histBits
// buckets per power of two, each 1/2^histBits of its lower bound wide.
// Its rows of buckets (one per power of two) are made as values reach
// them: latencies spanning microseconds to seconds take about 20 of 512
// bytes.
type logHist struct {
	rows [64 - histBits]*[1 << histBits]uint64
}

// histSlot returns the row and bucket of v ≥ 0.
func histSlot(v uint64) (row, b int) {
	if v < 1<<histBits {
		return 0, int(v)
	}
	e := bits.Len64(v) - 1 // ≥ histBits
	return e - histBits + 1, int(v>>(e-histBits)) - 1<<histBits
}

func (h *logHist) add(d time.Duration) {
	row, b := histSlot(uint64(d))
	if h.rows[row] == nil {
		h.rows[row] = new([1 << histBits]uint64)
	}
	h.rows[row][b]++
}

// rank returns the r-th smallest value (from 1) to within its bucket: the
// middle of the bucket, at most hi (the largest value counted).
func (h *logHist) rank(r int, hi time.Duration) time.Duration {
	seen := uint64(0)
	for row, bs := range h.rows {
		if bs == nil {
			continue
		}
		for b, c := range bs {
			if seen += c; seen < uint64(r) {
				continue
			}
			if row == 0 {
				return min(time.Duration(b), hi)
			}
			shift := row - 1 // bucket width is 2^shift
			lo := uint64(1<<histBits+b) << shift
			return min(time.Duration(lo+(uint64(1)<<shift-1)/2), hi)
		}
	}
	return hi
}

// Summarise builds a latency histogram and exact percentiles; it sorts ds.
func Summarise(ds []time.Duration) Latency {
	var l Latency
	l.N = len(ds)
	if l.N == 0 {
		return l
	}
	slices.Sort(ds)
	for _, d := range ds {
		l.Buckets[latencyBucket(d)]++
	}
	// Nearest-rank percentiles.
	pct := func(p int) time.Duration { return ds[rankOf(p, l.N)-1] }
	l.P50, l.P90, l.P99 = pct(50), pct(90), pct(99)
	l.Max = ds[l.N-1]
	return l
}

// headSrc is where the unit heads gives comes from, for its field tree:
// its record when frozen (and pin its pinned copy, if it is pinned), else
// the unit held whole.
type headSrc struct {
	s   *Store
	i   int32
	r   *rec
	pin *decode.Unit
	u   *decode.Unit
	// win holds the spill file's bytes from winAt, read ahead for the
	// blobs of the units that follow (they are in order in the file).
	win   []byte
	winAt int64
}

// blobWindow is how much of the spill file a headSrc reads at a time.
const blobWindow = 256 << 10

// set makes src the source of unit i: its record r, or u held whole.
func (src *headSrc) set(i int32, r *rec, u *decode.Unit) {
	src.i, src.r, src.pin, src.u = i, r, nil, u
}

// fields returns the unit's field tree, rebuilding it from its record
// and blob when frozen (nil if that cannot be read); the tree and the
// unit it was read from are good until the next call. The store's lock
// is held for reading.
func (src *headSrc) fields() []*decode.Field {
	if src.r == nil {
		return src.u.Fields()
	}
	from, to := src.r.data, blobEnd(src.r)
	if from < src.winAt || to > src.winAt+int64(len(src.win)) {
		m := &src.s.mem
		if to-from > blobWindow/4 {
			blob, err := m.read(from, to)
			if err != nil {
				return nil
			}
			return src.s.thaw(src.i, src.r, blob).Fields()
		}
		if src.win == nil {
			src.win = make([]byte, blobWindow)
		}
		n := min(int64(blobWindow), m.end-from)
		src.win = src.win[:cap(src.win)]
		if _, err := m.spill.ReadAt(src.win[:n], from); err != nil {
			src.win = src.win[:0]
			return nil
		}
		src.win, src.winAt = src.win[:n], from
	}
	return src.s.thaw(src.i, src.r, src.win[from-src.winAt:to-src.winAt]).Fields()
}

// heads calls fn, in order, with the heads of units [lo, hi) and where
// they come from (for their fields, should fn need them): a frozen unit's
// head is read from its record, through the store's page cache or, past
// it, a page of the call's own (as [View.RangeShallow] reads them),
// blocks of rangeBlock units a hold of the store's lock for reading. fn
// must not keep h or src, nor call into the store.
func (v View) heads(lo, hi int, fn func(i int32, h *head, src *headSrc)) {
	var h head
	src := &headSrc{s: v.s}
	if v.s == nil {
		conns := map[*decode.Conn]int32{}
		for i := lo; i < hi; i++ {
			u := v.units[i]
			src.set(int32(i), nil, u)
			c := int32(-1)
			if u.Conn != nil {
				var ok bool
				if c, ok = conns[u.Conn]; !ok {
					c = int32(len(conns))
					conns[u.Conn] = c
				}
			}
			h = unitHead(u, c)
			fn(int32(i), &h, src)
		}
		return
	}
	s, m := v.s, &v.s.mem
	var sh shell
	// Records that cannot be read back count as the stand-ins Range gives
	// for them.
	v.walkRecords(lo, hi, &sh, func(i int32, r *rec, _ []rec, _ int) bool {
		src.set(i, r, nil)
		if r.flags&recPinned != 0 {
			src.pin = m.pin[i]
			h = unitHead(src.pin, s.connOf(src.pin))
		} else {
			h = head{typ: s.types[r.typ], ns: r.ns, length: int(r.length), conn: r.conn, ch: r.ch,
				dir: decode.Dir(r.dir), proto: decode.Proto(r.proto), nested: r.flags&recParent != 0}
		}
		fn(i, &h, src)
		return true
	}, func(i int32, u *decode.Unit) bool {
		src.set(i, nil, u)
		h = unitHead(u, s.connOf(u))
		fn(i, &h, src)
		return true
	})
}

// connOf is the position of u's connection in Conns, -1 for none. The
// caller is the UI goroutine or holds mu for reading.
func (s *Store) connOf(u *decode.Unit) int32 {
	if c, ok := s.connIx[u.Conn]; ok && u.Conn != nil {
		return c
	}
	return -1
}

// unitHead is u's head, c the position of its connection.
func unitHead(u *decode.Unit, c int32) head {
	return head{typ: u.Type, ns: u.UnixNano(), length: u.Len, conn: c, ch: u.Channel, dir: u.Dir, proto: u.Proto, nested: u.Parent != nil}
}
