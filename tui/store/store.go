package store

import (
	"sort"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Store is the table of units. Indices (int32) are positions in output
// order; they are what every view keeps instead of copies of units.
type Store struct {
	n   int     // units appended; they are in mem (held whole or frozen)
	top *ixList // units with no parent, in order

	conns   []*decode.Conn
	connIx  map[*decode.Conn]int32
	byConn  []*ixList
	connTop []*ixList // per connection: units with no parent
	counts  []Counts
	byID    []int // connection indices ordered by Conn.ID

	kids    map[int32][]int32        // container index -> nested unit indices
	pending map[*decode.Unit][]int32 // nested units whose container has not arrived yet
	problem int                      // units with warnings or an error

	pair pairing
	mem  memory

	// types is the table of unit types frozen records refer to.
	types  []string
	typeIx map[string]uint16
	lists  int // ixLists made, for their cache keys

	dropped int // units not kept: the budget spent with nothing frozen
}

// New returns an empty store.
func New() *Store {
	s := &Store{
		connIx:  make(map[*decode.Conn]int32),
		typeIx:  make(map[string]uint16),
		kids:    make(map[int32][]int32),
		pending: make(map[*decode.Unit][]int32),
	}
	s.top = s.newList()
	return s
}

// Append adds a batch of units in output order.
func (s *Store) Append(batch []*decode.Unit) {
	m := &s.mem
	if m.err != nil && m.index+m.raw > m.budget {
		// Nothing can be frozen any more (the disk is full, say) and the
		// budget is spent: what is kept stays, what comes is counted.
		for _, u := range batch {
			if u != nil {
				s.dropped++
			}
		}
		return
	}
	m.mu.Lock()
	start := s.n
	for _, u := range batch {
		if u != nil {
			m.live = append(m.live, u)
		}
	}
	for _, u := range m.live[start-m.cold:] {
		ix := int32(s.n)
		s.n++
		ci, ok := s.connIx[u.Conn]
		if !ok && u.Conn != nil {
			ci = int32(len(s.conns))
			s.connIx[u.Conn] = ci
			s.conns = append(s.conns, u.Conn)
			s.byConn = append(s.byConn, s.newList())
			s.connTop = append(s.connTop, s.newList())
			s.counts = append(s.counts, Counts{})
			s.insertByID(int(ci))
		}
		if u.Conn != nil {
			s.byConn[ci].add(ix)
			s.counts[ci].add(u)
		}
		if len(u.Warnings()) > 0 || u.Err() != "" {
			s.problem++
		}
		if u.Parent == nil {
			s.top.add(ix)
			if u.Conn != nil {
				s.connTop[ci].add(ix)
			}
		} else if p := s.IndexOfN(u.Parent.N); p >= 0 {
			s.kids[p] = append(s.kids[p], ix)
		} else {
			s.pending[u.Parent] = append(s.pending[u.Parent], ix)
		}
		if len(s.pending) > 0 {
			if k, ok := s.pending[u]; ok {
				s.kids[ix] = append(s.kids[ix], k...)
				delete(s.pending, u)
			}
		}
		if m.budget > 0 {
			s.account(u)
		}
	}
	m.mu.Unlock()
	s.evict()
}

// fields returns unit i's field tree, its bytes read back if spilled.
func (s *Store) fields(i int32) []*decode.Field { return s.Load(i).Fields() }

// Counts are a connection's totals as the store has seen them. The TUI
// reads these rather than decode.Conn's counters, which the pipeline keeps
// updating on its own goroutine.
type Counts struct {
	Units     [2]int   // by direction, nested units included
	Bytes     [2]int64 // wire bytes by direction: nested units are inside their container's
	Warnings  int      // units with warnings
	Errors    int      // units with an error
	Checksums [3]int   // AMQP 1.0 verdicts, by decode.ChecksumStatus
	// Faults counts the faults the proxy injected ("fault" units); Event
	// is the summary of the last fault or proxy event ("proxy" units: an
	// upstream that refused, a failed TLS handshake, a reset).
	Faults int
	Event  string
}

func (c *Counts) add(u *decode.Unit) {
	switch u.Type {
	case "fault":
		c.Faults++
		c.Event = u.Summary
	case "proxy":
		c.Event = u.Summary
	}
	d := u.Dir & 1
	c.Units[d]++
	if u.Parent == nil {
		c.Bytes[d] += int64(u.Len)
	}
	if len(u.Warnings()) > 0 {
		c.Warnings++
	}
	if u.Err() != "" {
		c.Errors++
	}
	if ck := u.Checksum(); ck != nil && int(ck.Status) < len(c.Checksums) {
		c.Checksums[ck.Status]++
	}
}

// Add sums o into c.
func (c *Counts) Add(o Counts) {
	for d := range 2 {
		c.Units[d] += o.Units[d]
		c.Bytes[d] += o.Bytes[d]
	}
	c.Warnings += o.Warnings
	c.Errors += o.Errors
	c.Faults += o.Faults
	for i := range c.Checksums {
		c.Checksums[i] += o.Checksums[i]
	}
}

// ConnCounts returns connection c's totals.
func (s *Store) ConnCounts(c int) Counts { return s.counts[c] }

// Len reports how many units the store holds.
func (s *Store) Len() int { return s.n }

// Unit returns the unit at index i, for its plain fields: a pinned unit
// (see memory.go) comes without its bytes, which [Store.Load] gives. A
// frozen unit is rebuilt, so the pointer of one unit may differ between
// calls. For the UI goroutine.
func (s *Store) Unit(i int32) *decode.Unit { return s.unitAt(i) }

// Load returns unit i with its bytes (Raw), for what needs them: the
// detail and hex panes, filters on fields, pairing, export. No unit the
// store gave out is written to afterwards. For the UI goroutine.
func (s *Store) Load(i int32) *decode.Unit { return s.loadAt(i) }

// Snapshot returns a view of the units appended so far, for background
// goroutines to read while the store grows and freezes.
func (s *Store) Snapshot() View { return View{s: s, n: s.n} }

// Top returns the indices of units that no container carried, in order.
// The caller must not modify it.
func (s *Store) Top() Rows { return s.top.rows() }

// Kids returns the indices of the units nested in container i, in order.
func (s *Store) Kids(i int32) []int32 { return s.kids[i] }

// HasKids reports whether unit i is a container with nested units.
func (s *Store) HasKids(i int32) bool { _, ok := s.kids[i]; return ok }

// Parent returns the index of the container of unit i, or -1.
func (s *Store) Parent(i int32) int32 {
	if int(i) < s.mem.cold {
		if _, ok := s.mem.pin[i]; !ok {
			r, err := s.recAt(int(i))
			if err != nil || r.flags&recParent == 0 {
				return -1
			}
			return r.parent
		}
	}
	u := s.unitAt(i)
	if u.Parent == nil {
		return -1
	}
	return s.IndexOfN(u.Parent.N)
}

// Conns returns the connections in order of their first unit.
func (s *Store) Conns() []*decode.Conn { return s.conns }

// ConnUnits returns the indices of connection c's units, in order.
func (s *Store) ConnUnits(c int) Rows { return s.byConn[c].rows() }

func (s *Store) insertByID(ci int) {
	id := s.conns[ci].ID
	p := sort.Search(len(s.byID), func(i int) bool { return s.conns[s.byID[i]].ID > id })
	s.byID = append(s.byID, 0)
	copy(s.byID[p+1:], s.byID[p:])
	s.byID[p] = ci
}

// ConnsByID returns connection indices (positions in Conns) ordered by
// connection number, the order to show them in.
func (s *Store) ConnsByID() []int { return s.byID }

// ConnByID returns the index of the connection numbered id, or -1.
func (s *Store) ConnByID(id int) int {
	p := sort.Search(len(s.byID), func(i int) bool { return s.conns[s.byID[i]].ID >= id })
	if p < len(s.byID) && s.conns[s.byID[p]].ID == id {
		return s.byID[p]
	}
	return -1
}

// ConnTop returns the indices of connection c's units that no container
// carried, in order.
func (s *Store) ConnTop(c int) Rows { return s.connTop[c].rows() }

// ConnIndex returns the position of conn in Conns, or -1.
func (s *Store) ConnIndex(c *decode.Conn) int {
	if i, ok := s.connIx[c]; ok {
		return int(i)
	}
	return -1
}

// Dropped counts the units Append did not keep because the budget was
// spent and the store could freeze nothing more (see Spilled's error).
func (s *Store) Dropped() int { return s.dropped }

// Problems counts units carrying warnings or an error.
func (s *Store) Problems() int { return s.problem }

// First returns the time of the first unit (zero when empty).
func (s *Store) First() time.Time {
	if s.n == 0 {
		return time.Time{}
	}
	return s.unitAt(0).Time()
}

// IndexOfN returns the index of the unit numbered n, or -1. Units arrive
// numbered in output order, so this is a lookup, or a binary search when
// numbering has gaps.
func (s *Store) IndexOfN(n int) int32 {
	if s.n == 0 || n > s.nOf(s.n-1) {
		return -1 // a container not yet arrived: the common case for B* units
	}
	if n >= 1 && n <= s.n && s.nOf(n-1) == n {
		return int32(n - 1)
	}
	i := sort.Search(s.n, func(i int) bool { return s.nOf(i) >= n })
	if i < s.n && s.nOf(i) == n {
		return int32(i)
	}
	return -1
}

// nOf returns the number of unit i without rebuilding it.
func (s *Store) nOf(i int) int {
	if i >= s.mem.cold {
		return s.mem.live[i-s.mem.cold].N
	}
	if r, err := s.recAt(i); err == nil {
		return int(r.n)
	}
	return -1
}
