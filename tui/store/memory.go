package store

import (
	"bufio"
	"errors"
	"os"
	"sync"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// The memory budget. The store accounts for each unit an index cost (the
// unit's struct, its summary, its entries in the store's tables) and the
// bytes of its Raw while they are resident. When the sum passes the
// budget, the oldest units' bytes are written, in order, to a spill file
// (a temporary file, removed at once where the system allows it, else at
// Close) and their Raw is released (the one write to a unit after it is
// emitted: the bytes themselves are never written); [Store.Load] and
// [View.Load] read them back, into copies of the units. Field trees are
// not kept: Dissect rebuilds them from the bytes.
//
// What is accounted as freed is freed only when nothing else holds the
// bytes: an AMQP 0-9-1 message keeps its method's and header's, and the
// decoders carve the bytes of small units from slabs shared by their
// neighbours; a large unit's bytes are its own.
//
// Eviction is first in, first out, so the spill file holds the units
// [0, evicted) back to back and one offset per unit finds them. The index
// cost is not bounded here: with every unit's bytes spilled, what is left
// above the budget is the index.

// indexCost is the accounted cost of a unit apart from its bytes: the Unit
// struct, the pointer in units, and an int32 in each of byConn, top or
// connTop, and the spill offset.
var indexCost = int64(unsafe.Sizeof(decode.Unit{})) + 8 + 3*4 + 8

type memory struct {
	// mu guards the Raw field of the store's units: the UI goroutine, the
	// only writer, takes it to release spilled units' bytes; background
	// readers (a View) hold it for reading while they look at units.
	mu sync.RWMutex

	budget  int64 // 0: no budget, nothing is spilled
	index   int64 // accounted index bytes
	raw     int64 // resident Raw bytes
	evicted int   // units [0, evicted) have their bytes in the spill file
	// off[i] is where unit i's bytes start in the spill file; off[evicted]
	// is its end.
	off   []int64
	spill *os.File
	w     *bufio.Writer
	err   error // the spill file could not be made or written: nothing more is spilled
}

// SetBudget bounds the store's accounted memory to budget bytes (0: no
// bound). It must be called before the first Append.
func (s *Store) SetBudget(budget int64) { s.mem.budget = max(budget, 0) }

// Memory reports the store's accounted bytes (index and resident unit
// bytes) and its budget (0: none).
func (s *Store) Memory() (used, budget int64) {
	return s.mem.index + s.mem.raw, s.mem.budget
}

// Spilled reports how many units have their bytes in the spill file, and
// why spilling stopped, if it did.
func (s *Store) Spilled() (int, error) { return s.mem.evicted, s.mem.err }

// Close removes the spill file.
func (s *Store) Close() error {
	if s.mem.spill == nil {
		return nil
	}
	name := s.mem.spill.Name()
	err := s.mem.spill.Close()
	os.Remove(name) // already gone where removing an open file works
	return err
}

// account adds unit u, just appended, to the accounted bytes.
func (s *Store) account(u *decode.Unit) {
	s.mem.index += indexCost + int64(len(u.Summary))
	s.mem.raw += int64(len(u.Raw))
}

// spillGrain is the most eviction asks beyond the budget: once over it,
// units are spilled until the store is an eighth of what the budget
// leaves the bytes (at most spillGrain) below it, so that a batch does not
// spill a handful of units at a time.
const spillGrain = 1 << 20

// evict spills the oldest resident units' bytes while the store is over
// its budget.
func (s *Store) evict() {
	m := &s.mem
	if m.budget == 0 || m.err != nil || m.index+m.raw <= m.budget {
		return
	}
	target := m.budget - min(spillGrain, max(0, m.budget-m.index)/8)
	if m.spill == nil {
		f, err := os.CreateTemp("", "wiretap-spill-*")
		if err != nil {
			m.err = errors.New("store: no spill file: " + err.Error())
			return
		}
		os.Remove(f.Name()) // the open file stays readable; nothing is left behind
		m.spill, m.w = f, bufio.NewWriterSize(f, 1<<20)
		m.off = []int64{0}
	}
	end := m.off[len(m.off)-1]
	from, upto := m.evicted, m.evicted
	var freed int64
	var offs []int64
	for upto < len(s.units) && m.index+m.raw-freed > target {
		raw := s.units[upto].Raw
		if _, err := m.w.Write(raw); err != nil {
			m.err = errors.New("store: spill file: " + err.Error())
			return
		}
		end += int64(len(raw))
		offs = append(offs, end)
		freed += int64(len(raw))
		upto++
	}
	if err := m.w.Flush(); err != nil {
		m.err = errors.New("store: spill file: " + err.Error())
		return
	}
	// Only now, with the bytes on file, may readers be sent there. The
	// bytes themselves are never written: what holds a slice of them (an
	// AMQP 0-9-1 message its method's and header's) keeps them.
	m.mu.Lock()
	m.off = append(m.off, offs...)
	for i := from; i < upto; i++ {
		s.units[i].Raw = nil
	}
	m.evicted = upto
	m.mu.Unlock()
	m.raw -= freed
}

// read returns the spilled bytes of units [from, upto), all evicted, in
// one read.
func (m *memory) read(from, upto int) ([]byte, error) {
	b := make([]byte, m.off[upto]-m.off[from])
	if len(b) == 0 {
		return b, nil
	}
	_, err := m.spill.ReadAt(b, m.off[from])
	return b, err
}

// loaded returns a copy of unit i with its bytes, reading them from the
// spill file when they were released. A read error leaves Raw nil. The
// caller holds mu for reading, or is the UI goroutine.
func (s *Store) loaded(i int32, buf []byte, bufFrom int) *decode.Unit {
	u := s.units[i]
	cp := *u
	if int(i) < s.mem.evicted {
		if buf != nil {
			lo, hi := s.mem.off[i]-s.mem.off[bufFrom], s.mem.off[i+1]-s.mem.off[bufFrom]
			cp.Raw = buf[lo:hi:hi]
		} else if b, err := s.mem.read(int(i), int(i)+1); err == nil {
			cp.Raw = b
		}
	}
	return &cp
}

// Load returns unit i with its bytes (Raw), for what needs them: the
// detail and hex panes, filters on fields, pairing, export. Without a
// budget it is [Store.Unit]; with one it is a copy whose Raw stays valid
// however much is spilled afterwards. For the UI goroutine.
func (s *Store) Load(i int32) *decode.Unit {
	if s.mem.budget == 0 {
		return s.units[i]
	}
	return s.loaded(i, nil, 0)
}
