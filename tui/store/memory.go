package store

import (
	"bufio"
	"errors"
	"math"
	"os"
	"runtime/metrics"
	"sync"
	"time"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// The memory budget. The store accounts for each unit it holds whole an
// index cost (the unit's struct, its summary, its entries in the store's
// tables) and its bytes. When the sum passes the budget, the oldest units
// are frozen, in order: each becomes a fixed-size record (the unit's
// plain fields, 64 bytes) and a blob in the spill file (its summary, what
// decode.Unit.AppendFrozen writes of its dissector and notes, its bytes),
// and the store lets go of the unit. Records fill pages of recPage, and
// full pages go to an index file; what stays in memory per frozen unit is
// its entries in the store's int32 tables. [Store.Unit], [Store.Load] and
// a [View] rebuild a frozen unit from its record and blob when it is
// looked at (as Wireshark dissects a frame again when it is selected);
// the last pages and units rebuilt are cached.
//
// A unit that cannot be frozen (its dissector has state no package
// registered, such as the broker's route annotations) is pinned instead:
// a copy of it without its bytes stays in memory, and its bytes go to the
// spill file.
//
// Both files are temporary: removed at once where the system allows it,
// else at Close. The units the store holds whole are a suffix of its
// units: [cold, Len), and freezing moves cold forward. The index cost of
// frozen units (about 12 bytes each, more once answers are paired) is not
// bounded: it is what is left above the budget once everything else is
// frozen.

// indexCost is the accounted cost of a unit held whole apart from its
// summary, its bytes and its entries in the store's lists (4 bytes each,
// accounted while their page is in memory): the Unit struct and its
// pointer.
var indexCost = int64(unsafe.Sizeof(decode.Unit{})) + 8

// frozenCost is what a frozen unit still costs apart from its list
// entries: nothing until answers are paired (8 bytes a unit then).
const frozenCost = 0

// pinnedCost is the extra cost of a pinned unit: its map entry.
const pinnedCost = 48

// rec is a frozen unit's record. It holds no pointers: pages of records
// are written to the index file as they are in memory.
type rec struct {
	n      int64
	ns     int64 // decode.NoTime when unknown
	offset int64
	data   int64 // where the unit's blob starts in the spill file
	length int32
	conn   int32 // position in Conns, -1 for none
	parent int32 // index of the container, -1 for none
	sumLen uint32
	extLen uint32
	rawLen uint32
	typ    uint16 // position in the store's type table
	ch     uint16
	dir    uint8
	proto  uint8
	flags  uint8
}

const (
	recChannel = 1 << iota
	recSecret
	recParent
	recPinned
)

const recSize = int(unsafe.Sizeof(rec{}))

// recPage is how many records make a page of the index file.
const recPage = 4096

// cachedPages is how many pages of records are kept in memory, and
// thawCache how many rebuilt units (or thawBytes of their bytes).
const (
	cachedPages = 24
	thawCache   = 2048
	thawBytes   = 8 << 20
)

type memory struct {
	// mu guards what readers of other goroutines (a View) look at: live,
	// cold, tail, pagesOut, pinned, the store's conns and types. The UI
	// goroutine, the only writer, reads them without it and takes it to
	// change them.
	mu sync.RWMutex

	budget int64 // 0: no budget, nothing is frozen
	index  int64 // accounted index bytes
	raw    int64 // bytes of units held whole

	cold int            // units [0, cold) are frozen or pinned
	live []*decode.Unit // units [cold, Len), held whole
	pin  map[int32]*decode.Unit
	// tail holds the records [pagesOut*recPage, cold); full pages are in
	// the index file.
	tail     []rec
	pagesOut int

	spill, idx *os.File
	w          *bufio.Writer
	end        int64 // bytes written to the spill file
	err        error // the files could not be made or written: nothing more is frozen
	scratch    []byte

	pages pageCache[int, rec]
	thaws thawed

	fullLists []fullPage // list pages in memory, oldest first
	listCache pageCache[listKey, int32]

	// disk bounds the spill and index files (0: no bound of the
	// caller's); reserve is the free space the store leaves on their
	// filesystem whatever disk says, checked every diskCheck bytes
	// written (next).
	disk, reserve int64
	next          int64

	// heapBound: see SetHeapBound. shrink is what the budget is lowered
	// by, from the live heap the collector last measured; gcs is the cycle
	// it was measured at.
	heapBound bool
	shrink    int64
	gcs       uint64
	heapProbe []metrics.Sample
	appends   int
}

// SetDiskLimit bounds what the store's temporary files may take on disk:
// the spill file's bytes and the index file's records together. Past it
// (or once its filesystem has less than [diskReserve] free, whatever the
// limit) the store stops freezing, as when the disk is full: the error
// says which bound was met, the units held stay, and once the memory
// budget is spent new units are counted and not kept ([Store.Dropped]).
// 0 means no limit but the reserve.
func (s *Store) SetDiskLimit(limit int64) { s.mem.disk = max(limit, 0) }

// diskReserve is the free space the store leaves on the filesystem of its
// temporary files: the larger of 1 GiB and a twentieth of the filesystem,
// so that a session left running does not fill the machine's disk.
func diskReserve(fsSize int64) int64 { return max(1<<30, fsSize/20) }

// freeSpaceOf is freeSpace; tests replace it.
var freeSpaceOf = freeSpace

// diskCheck is how many bytes are written to the store's files between two
// looks at the free space of their filesystem (a variable for tests).
var diskCheck int64 = 64 << 20

// onDisk is what the store's files hold.
func (m *memory) onDisk() int64 {
	return m.end + int64(m.pagesOut)*int64(recPage*recSize)
}

// roomOnDisk reports, before a freeze, whether the files may grow: within
// the limit set, and with the reserve free on their filesystem.
func (m *memory) roomOnDisk() error {
	used := m.onDisk()
	if m.disk > 0 && used >= m.disk {
		return errors.New("store: the temporary files reached the disk limit (--disk " + decode.FormatSize(m.disk) + "): nothing more is frozen")
	}
	if used < m.next {
		return nil
	}
	m.next = used + diskCheck
	free, size, err := freeSpaceOf(m.spill)
	if err != nil {
		return nil // not knowable here: only the limit set applies
	}
	if m.reserve == 0 {
		m.reserve = diskReserve(size)
	}
	if free < m.reserve {
		return errors.New("store: " + decode.FormatBytes(free) + " left free on the temporary files' filesystem, under the " + decode.FormatBytes(m.reserve) + " kept free: nothing more is frozen")
	}
	return nil
}

// SetHeapBound has the store keep the process's live heap, as the garbage
// collector last measured it, within the budget too. What the store
// accounts for a unit is less than it takes (allocation rounding, the
// slabs decoders share between units, an AMQP 0-9-1 message's hold on its
// method's and header's bytes), and the rest of the process takes its
// share: for the store that owns most of the process's memory (the TUI's),
// the budget is lowered by what the live heap is over it, and raised again
// as it falls below. For the UI goroutine, before the first Append.
func (s *Store) SetHeapBound(on bool) { s.mem.heapBound = on }

// heapLimit returns what the store's accounted bytes are held to.
func (m *memory) heapLimit() int64 {
	if !m.heapBound {
		return m.budget
	}
	if m.appends++; m.appends%16 == 0 {
		if m.heapProbe == nil {
			m.heapProbe = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
		}
		metrics.Read(m.heapProbe)
		live, cyc := m.heapProbe[0].Value, m.heapProbe[1].Value
		if live.Kind() == metrics.KindUint64 && cyc.Kind() == metrics.KindUint64 && cyc.Uint64() != m.gcs {
			m.gcs = cyc.Uint64()
			switch over := int64(live.Uint64()) - m.budget; {
			case over > 0:
				m.shrink = min(m.shrink+over, m.budget*7/8)
			case over < -m.budget/8:
				m.shrink = max(0, m.shrink-m.budget/32)
			}
		}
	}
	return m.budget - m.shrink
}

// SetBudget bounds the store's accounted memory to budget bytes (0: no
// bound). It must be called before the first Append.
func (s *Store) SetBudget(budget int64) { s.mem.budget = max(budget, 0) }

// Memory reports the store's accounted bytes (index and the bytes of
// units held whole) and its budget (0: none).
func (s *Store) Memory() (used, budget int64) {
	return s.mem.index + s.mem.raw, s.mem.budget
}

// Spilled reports how many units have their bytes in the spill file (the
// frozen and the pinned), and why freezing stopped, if it did.
func (s *Store) Spilled() (int, error) { return s.mem.cold, s.mem.err }

// Close removes the spill and index files.
func (s *Store) Close() error {
	var err error
	for _, f := range []*os.File{s.mem.spill, s.mem.idx} {
		if f == nil {
			continue
		}
		name := f.Name()
		if e := f.Close(); e != nil && err == nil {
			err = e
		}
		os.Remove(name) // already gone where removing an open file works
	}
	return err
}

// account adds unit u, just appended, to the accounted bytes.
func (s *Store) account(u *decode.Unit) {
	s.mem.index += indexCost + int64(len(u.Summary))
	s.mem.raw += int64(len(u.Raw))
}

// spillGrain is the most freezing asks beyond the budget: once over it,
// units are frozen until the store is an eighth of what the budget
// leaves the bytes (at most spillGrain) below it, so that a batch does not
// freeze a handful of units at a time.
const spillGrain = 1 << 20

func (m *memory) open() error {
	f, err := os.CreateTemp("", "wiretap-spill-*")
	if err != nil {
		return errors.New("store: no spill file: " + err.Error())
	}
	os.Remove(f.Name()) // the open file stays readable; nothing is left behind
	x, err := os.CreateTemp("", "wiretap-index-*")
	if err != nil {
		f.Close()
		return errors.New("store: no index file: " + err.Error())
	}
	os.Remove(x.Name())
	m.spill, m.idx, m.w = f, x, bufio.NewWriterSize(f, 1<<20)
	m.tail = make([]rec, 0, recPage)
	m.pin = map[int32]*decode.Unit{}
	m.pages.max, m.listCache.max = cachedPages, cachedListPages
	return nil
}

// evict freezes the oldest units held whole while the store is over its
// budget.
func (s *Store) evict() {
	m := &s.mem
	if m.budget == 0 || m.err != nil {
		return
	}
	limit := m.heapLimit()
	if m.index+m.raw <= limit {
		return
	}
	target := limit - min(spillGrain, max(0, limit-m.index)/8)
	if m.spill == nil {
		if m.err = m.open(); m.err != nil {
			return
		}
	}
	if m.err = m.roomOnDisk(); m.err != nil {
		return
	}
	k := 0
	var freedIndex, freedRaw int64
	type pinnedUnit struct {
		i int32
		u *decode.Unit
	}
	var pinned []pinnedUnit
	end, tail := m.end, m.tail
	var full [][]rec // pages completed by this batch, to write
	listFree := int64(len(m.fullLists)) * listPage * 4
	for k < len(m.live) && m.index+m.raw-listFree-freedIndex-freedRaw > target {
		u := m.live[k]
		i := int32(m.cold + k)
		r, ok := s.record(i, u)
		var blob []byte
		if ok {
			m.scratch = append(m.scratch[:0], u.Summary...)
			m.scratch, ok = u.AppendFrozen(m.scratch)
			if ok {
				r.sumLen, r.extLen, r.rawLen = uint32(len(u.Summary)), uint32(len(m.scratch)-len(u.Summary)), uint32(len(u.Raw))
				blob = m.scratch
				freedIndex += indexCost + int64(len(u.Summary)) - frozenCost
			}
		}
		if !ok {
			// Pinned: a copy without its bytes stays; the unit itself is
			// never written to, for whoever holds it.
			r.flags |= recPinned
			r.sumLen, r.extLen, r.rawLen = 0, 0, uint32(len(u.Raw))
			cp := *u
			cp.Raw = nil
			pinned = append(pinned, pinnedUnit{i, &cp})
			freedIndex -= pinnedCost
		}
		r.data = end
		_, err := m.w.Write(blob)
		if err == nil {
			_, err = m.w.Write(u.Raw)
		}
		if err != nil {
			m.err = errors.New("store: spill file: " + err.Error())
			return
		}
		end += int64(len(blob) + len(u.Raw))
		freedRaw += int64(len(u.Raw))
		tail = append(tail, r)
		if len(tail) == recPage {
			full = append(full, tail)
			tail = make([]rec, 0, recPage)
		}
		k++
	}
	lists, listOffs, end, err := s.spillLists(end)
	if err != nil {
		m.err = err
		return
	}
	if err := m.w.Flush(); err != nil {
		m.err = errors.New("store: spill file: " + err.Error())
		return
	}
	for p, page := range full {
		if _, err := m.idx.WriteAt(recBytes(page), int64(m.pagesOut+p)*int64(recPage*recSize)); err != nil {
			m.err = errors.New("store: index file: " + err.Error())
			return
		}
	}
	// Only now, with records and bytes on file, may readers be sent there.
	// The records appended to tail went past what readers look at.
	m.mu.Lock()
	for _, p := range pinned {
		m.pin[p.i] = p.u
	}
	clear(m.live[:k])
	m.live = m.live[k:]
	m.cold += k
	for p, page := range full {
		m.pages.put(m.pagesOut+p, page)
	}
	m.pagesOut += len(full)
	m.tail, m.end = tail, end
	for j, fp := range lists {
		fp.l.pages[fp.p], fp.l.offs[fp.p] = nil, listOffs[j]
	}
	m.fullLists = m.fullLists[:copy(m.fullLists, m.fullLists[len(lists):])]
	m.mu.Unlock()
	m.index -= freedIndex + int64(len(lists))*listPage*4
	m.raw -= freedRaw
}

// record builds unit u's record, all but its blob's place and lengths. It
// reports false when the unit cannot have one and must be pinned.
func (s *Store) record(i int32, u *decode.Unit) (rec, bool) {
	r := rec{n: int64(u.N), ns: u.UnixNano(), offset: u.Offset, conn: -1, parent: -1,
		ch: u.Channel, dir: uint8(u.Dir), proto: uint8(u.Proto)}
	if u.HasChannel {
		r.flags |= recChannel
	}
	if u.Secret {
		r.flags |= recSecret
	}
	if u.Conn != nil {
		c, ok := s.connIx[u.Conn]
		if !ok {
			return r, false
		}
		r.conn = c
	}
	if u.Parent != nil {
		p := s.Parent(i)
		if p < 0 {
			return r, false // its container has not arrived: kept whole
		}
		r.parent, r.flags = p, r.flags|recParent
	}
	if u.Len < 0 || u.Len > math.MaxInt32 || len(u.Raw) > math.MaxUint32 || len(u.Summary) > math.MaxUint32 {
		return r, false
	}
	r.length = int32(u.Len)
	t, ok := s.typeIx[u.Type]
	if !ok {
		if len(s.types) > math.MaxUint16 {
			return r, false
		}
		t = uint16(len(s.types))
		s.mem.mu.Lock()
		s.types = append(s.types, u.Type)
		s.mem.mu.Unlock()
		s.typeIx[u.Type] = t
	}
	r.typ = t
	return r, true
}

func recBytes(rs []rec) []byte {
	if len(rs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&rs[0])), len(rs)*recSize)
}

// recAt returns unit i's record; i < cold. The caller is the UI goroutine
// or holds mu for reading.
func (s *Store) recAt(i int) (*rec, error) {
	m := &s.mem
	p := i / recPage
	if p >= m.pagesOut {
		return &m.tail[i-p*recPage], nil
	}
	page, err := m.pages.get(p, recPage, m.idx, int64(p)*int64(recPage*recSize), "index file")
	if err != nil {
		return nil, err
	}
	return &page[i%recPage], nil
}

// pageCache keeps the last pages read or written of a file of pages
// (records, lists), first in, first out; safe from any goroutine.
type pageCache[K comparable, T any] struct {
	mu    sync.Mutex
	max   int
	pages map[K][]T
	order []K
}

func (c *pageCache[K, T]) put(k K, page []T) {
	c.mu.Lock()
	c.putLocked(k, page)
	c.mu.Unlock()
}

func (c *pageCache[K, T]) putLocked(k K, page []T) {
	if c.pages == nil {
		c.pages = map[K][]T{}
	}
	if _, ok := c.pages[k]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.pages, c.order[0])
		c.order = append(c.order[:0], c.order[1:]...)
	}
	c.pages[k] = page
	c.order = append(c.order, k)
}

// lookup returns page k if it is cached.
func (c *pageCache[K, T]) lookup(k K) ([]T, bool) {
	c.mu.Lock()
	page, ok := c.pages[k]
	c.mu.Unlock()
	return page, ok
}

// get returns page k, read with n entries from f at off when not cached.
func (c *pageCache[K, T]) get(k K, n int, f *os.File, off int64, what string) ([]T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if page, ok := c.pages[k]; ok {
		return page, nil
	}
	page := make([]T, n)
	if err := readPage(page, f, off, what); err != nil {
		return nil, err
	}
	c.putLocked(k, page)
	return page, nil
}

// readPage fills page from f at off (pages hold no pointers: they are
// written as they are in memory); what names the file in the error.
func readPage[T any](page []T, f *os.File, off int64, what string) error {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&page[0])), len(page)*int(unsafe.Sizeof(page[0])))
	if _, err := f.ReadAt(b, off); err != nil {
		return errors.New("store: " + what + ": " + err.Error())
	}
	return nil
}

// thawed caches the units last rebuilt from their records, so that the
// rows on screen are not rebuilt at every frame.
type thawed struct {
	mu    sync.Mutex
	units map[int32]*decode.Unit
	bytes int
}

func (t *thawed) get(i int32) *decode.Unit {
	t.mu.Lock()
	u := t.units[i]
	t.mu.Unlock()
	return u
}

func (t *thawed) put(i int32, u *decode.Unit) {
	t.mu.Lock()
	if t.units == nil || len(t.units) >= thawCache || t.bytes+len(u.Raw) > thawBytes {
		t.units, t.bytes = make(map[int32]*decode.Unit, 64), 0
	}
	t.units[i] = u
	t.bytes += len(u.Raw)
	t.mu.Unlock()
}

// read returns the spill file's bytes [from, to).
func (m *memory) read(from, to int64) ([]byte, error) {
	b := make([]byte, to-from)
	if len(b) == 0 {
		return b, nil
	}
	if _, err := m.spill.ReadAt(b, from); err != nil {
		return nil, errors.New("store: spill file: " + err.Error())
	}
	return b, nil
}

// blobEnd is where the blob of record r ends.
func blobEnd(r *rec) int64 {
	return r.data + int64(r.sumLen) + int64(r.extLen) + int64(r.rawLen)
}

// thaw rebuilds frozen unit i from its record and blob (a slice of the
// spill file starting at r.data). A pinned unit comes back as its copy
// with its bytes. The caller is the UI goroutine or holds mu for reading.
func (s *Store) thaw(i int32, r *rec, blob []byte) *decode.Unit {
	m := &s.mem
	if r.flags&recPinned != 0 {
		cp := *m.pin[i]
		cp.Raw = blob[:r.rawLen:r.rawLen]
		return &cp
	}
	sum, ext := blob[:r.sumLen], blob[r.sumLen:r.sumLen+r.extLen]
	raw := blob[r.sumLen+r.extLen : r.sumLen+r.extLen+r.rawLen : r.sumLen+r.extLen+r.rawLen]
	u := &decode.Unit{N: int(r.n), Offset: r.offset, Len: int(r.length), Raw: raw,
		Type: s.types[r.typ], Summary: string(sum), Channel: r.ch, Dir: decode.Dir(r.dir),
		Proto: decode.Proto(r.proto), HasChannel: r.flags&recChannel != 0, Secret: r.flags&recSecret != 0}
	u.SetUnixNano(r.ns)
	if r.conn >= 0 {
		u.Conn = s.conns[r.conn]
	}
	if r.flags&recParent != 0 {
		if p := s.unitAt(r.parent); p != nil {
			u.Parent = p
		} else {
			u.Parent = &decode.Unit{N: -1}
		}
	}
	if err := u.Thaw(ext); err != nil {
		u.SetErr("store: this unit could not be rebuilt from the spill file: " + err.Error())
	}
	return u
}

// unitAt returns unit i: held whole, pinned (without its bytes), or
// rebuilt. Nil only when a frozen unit cannot be read back. The caller is
// the UI goroutine or holds mu for reading.
func (s *Store) unitAt(i int32) *decode.Unit {
	m := &s.mem
	if int(i) >= m.cold {
		return m.live[int(i)-m.cold]
	}
	if u, ok := m.pin[i]; ok {
		return u
	}
	return s.loadCold(i)
}

// loadAt is unitAt with the bytes of pinned units read back.
func (s *Store) loadAt(i int32) *decode.Unit {
	m := &s.mem
	if int(i) >= m.cold {
		return m.live[int(i)-m.cold]
	}
	return s.loadCold(i)
}

// loadCold rebuilds unit i < cold, through the cache.
func (s *Store) loadCold(i int32) *decode.Unit {
	m := &s.mem
	if u := m.thaws.get(i); u != nil {
		return u
	}
	u, err := s.loadRange(int(i), int(i)+1, func(_ int32, u *decode.Unit) bool { return true })
	if err != nil || u == nil {
		return s.unreadable(i, err)
	}
	m.thaws.put(i, u)
	return u
}

// unreadable stands in for a unit whose record or bytes could not be read.
func (s *Store) unreadable(i int32, err error) *decode.Unit {
	u := &decode.Unit{N: -1, Type: "warning", Summary: "unit lost: the store could not read it back"}
	if p, ok := s.mem.pin[i]; ok {
		cp := *p
		u = &cp
	}
	if err != nil {
		u.SetErr(err.Error())
	}
	return u
}

// loadRange rebuilds units [lo, hi), all below cold, reading their blobs
// in one read, and calls fn with each until it returns false; it returns
// the last unit rebuilt. The caller is the UI goroutine or holds mu for
// reading.
func (s *Store) loadRange(lo, hi int, fn func(i int32, u *decode.Unit) bool) (*decode.Unit, error) {
	first, err := s.recAt(lo)
	if err != nil {
		return nil, err
	}
	last, err := s.recAt(hi - 1)
	if err != nil {
		return nil, err
	}
	from, to := first.data, blobEnd(last)
	buf, err := s.mem.read(from, to)
	if err != nil {
		return nil, err
	}
	var u *decode.Unit
	for i := lo; i < hi; i++ {
		r, err := s.recAt(i)
		if err != nil {
			return nil, err
		}
		if r.data < from || blobEnd(r) > to {
			return nil, errors.New("store: index file: record out of place")
		}
		u = s.thaw(int32(i), r, buf[r.data-from:blobEnd(r)-from])
		if !fn(int32(i), u) {
			break
		}
	}
	return u, nil
}

// head is what pairing and statistics read of a unit: what its record
// holds, so that frozen units need not be rebuilt for it.
type head struct {
	typ    string
	ns     int64
	length int
	conn   int32 // -1 for none
	ch     uint16
	dir    decode.Dir
	proto  decode.Proto
	nested bool
}

// head returns unit i's head. For the UI goroutine.
func (s *Store) head(i int32) head {
	m := &s.mem
	if int(i) >= m.cold || m.pin[i] != nil {
		u := s.unitAt(i)
		c := int32(-1)
		if u.Conn != nil {
			c = int32(s.ConnIndex(u.Conn))
		}
		return head{typ: u.Type, ns: u.UnixNano(), length: u.Len, conn: c, ch: u.Channel, dir: u.Dir, proto: u.Proto, nested: u.Parent != nil}
	}
	r, err := s.recAt(int(i))
	if err != nil {
		return head{conn: -1, ns: decode.NoTime}
	}
	return head{typ: s.types[r.typ], ns: r.ns, length: int(r.length), conn: r.conn, ch: r.ch,
		dir: decode.Dir(r.dir), proto: decode.Proto(r.proto), nested: r.flags&recParent != 0}
}

// time returns the head's time (the zero Time when unknown).
func (h head) time() time.Time {
	if h.ns == decode.NoTime {
		return time.Time{}
	}
	return time.Unix(0, h.ns)
}
