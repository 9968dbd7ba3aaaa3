//go:build linux

package capture

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A capture file is mapped private and read-only: nothing may write to
// its bytes (a write faults), and pages given back with MADV_DONTNEED are
// read again from the file when touched again (madvise(2): for a private
// mapping of a file, "repopulate the memory contents from the up-to-date
// contents of the underlying mapped file"), so bytes kept by reference
// stay valid while only the part near the read position stays resident.
//
// On a VM with shadow paging (this project's build machine: PVM), the
// first touch of each 4 KiB page of a mapping costs the touching thread
// about 2 us (measured: 92 MB touched one byte a page, 40-60 ms, whether
// the page tables were populated or not, huge pages or not; a second
// touch, from any CPU, 0.2-0.7 ms). A goroutine of the mapping's own
// touches the pages a little ahead of the reader, so that this cost is
// paid beside the decoding rather than in it.
const (
	// mapAhead is how far ahead of the read position pages are touched
	// (and their page tables populated, one MADV_POPULATE_READ a chunk,
	// where touching them took a fault every 64 KiB).
	mapAhead = 4 << 20
	// mapChunk is what the toucher populates and touches at a time,
	// and how far the reader moves between two wake-ups of it.
	mapChunk = 1 << 20
	// mapKeep is how much of the mapping behind the read position stays
	// resident: units just decoded are rendered a little later, from
	// their bytes in the mapping (a few MiB of them in flight at most).
	mapKeep = 8 << 20
	// mapRelease is how far the read position moves between two
	// releases of what is behind it.
	mapRelease = 8 << 20
	// mapSweep is how far it moves between two releases of everything
	// behind it, pages touched again (a long message's pieces, rendered
	// after its last frame) among them; in between, only the part
	// passed since the last release is released.
	mapSweep = 1 << 30
)

// mapping is a regular file mapped in memory for reading.
type mapping struct {
	mem []byte
	// next is the read position at which advance has work to do (the
	// reader's). released is the end of what was released, swept where
	// everything behind was last released: the toucher's when there is
	// one, else the reader's.
	released, swept int
	next            int64
	// The toucher's (see touch): pos is the read position as last told,
	// wake wakes it, stop stops it, done says it stopped.
	pos     atomic.Int64
	wake    chan struct{}
	stop    atomic.Bool
	done    chan struct{}
	touched int
	// sum keeps the toucher's reads from being optimised away.
	sum byte
}

// mapFile maps f when it is a regular file that is not empty, or returns
// nil (the file is then read through a buffer).
func mapFile(f *os.File) *mapping {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= 0 || fi.Size() != int64(int(fi.Size())) {
		return nil
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	// Read front to back: the kernel reads ahead further and drops what
	// is behind first.
	_ = unix.Madvise(mem, unix.MADV_SEQUENTIAL)
	m := &mapping{mem: mem}
	if len(mem) > mapAhead {
		m.wake, m.done = make(chan struct{}, 1), make(chan struct{})
		go m.touch()
	}
	m.move(0)
	return m
}

// advance is told the read position, off: it wakes the toucher and
// releases the pages behind when it is time to.
func (m *mapping) advance(off int64) {
	if off >= m.next {
		m.move(int(off))
	}
}

func (m *mapping) move(pos int) {
	if m.wake != nil {
		// The toucher releases what is behind too: an 8 MiB release
		// costs its caller 0.6-1.2 ms (page tables torn down, other
		// CPUs' TLBs flushed), some 10% of the time to decode a COPY
		// when the reader paid it.
		m.pos.Store(int64(pos))
		select {
		case m.wake <- struct{}{}:
		default:
		}
		m.next = int64(pos + mapChunk)
		return
	}
	m.release(pos)
	m.next = int64(m.released + mapKeep + mapRelease)
}

// release gives back what lies more than mapKeep behind the read
// position pos, once that is mapRelease more than last time.
func (m *mapping) release(pos int) {
	if pos-m.released < mapKeep+mapRelease {
		return
	}
	from := m.released
	if pos-m.swept >= mapSweep {
		from, m.swept = 0, pos
	}
	if to := (pos - mapKeep) &^ (os.Getpagesize() - 1); to > from {
		_ = unix.Madvise(m.mem[from:to], unix.MADV_DONTNEED)
		m.released = to
	}
}

// touch runs on a goroutine of its own: it keeps the pages up to mapAhead
// past the read position populated and touched, and releases those
// behind it (see release).
func (m *mapping) touch() {
	defer close(m.done)
	page := os.Getpagesize()
	populate := true
	for range m.wake {
		for !m.stop.Load() {
			end := min(int(m.pos.Load())+mapAhead, len(m.mem))
			if m.touched >= end {
				break
			}
			end = min(m.touched+mapChunk, end)
			if populate && unix.Madvise(m.mem[m.touched&^(page-1):end], unix.MADV_POPULATE_READ) != nil {
				populate = false // before Linux 5.14: the touches fault them in
			}
			var sum byte
			for i := m.touched; i < end; i += page {
				sum += m.mem[i]
			}
			m.sum += sum
			m.touched = end
		}
		m.release(int(m.pos.Load()))
		if m.stop.Load() {
			return
		}
	}
}

// rewind makes the mapping ready to be read again from its start.
func (m *mapping) rewind() {
	m.stopTouching()
	m.released, m.swept, m.next, m.touched = 0, 0, 0, 0
	m.pos.Store(0)
	if m.wake != nil {
		m.stop.Store(false)
		m.done = make(chan struct{})
		go m.touch()
	}
	m.move(0)
}

func (m *mapping) stopTouching() {
	if m.wake != nil {
		m.stop.Store(true)
		select {
		case m.wake <- struct{}{}:
		default:
		}
		<-m.done
	}
}

func (m *mapping) close() {
	if m.mem != nil {
		m.stopTouching()
		m.wake = nil
		_ = unix.Munmap(m.mem)
		m.mem = nil
	}
}
