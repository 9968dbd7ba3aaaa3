// Package stablecheck checks a decoder under decode.Options.StableInput:
// fed the same calls, it must emit the units it emits without it, byte
// for byte as rendered (text, and JSON with the raw bytes),
// and never write to its input. The protocols' tests and fuzz targets
// use it.
package stablecheck

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// Call is one call to make on a decoder: Feed of Data, Gap of N bytes
// (IsGap), or End.
type Call struct {
	Dir   decode.Dir
	Data  []byte
	N     int
	IsGap bool
	End   bool
}

// Split cuts a stream of each direction into calls of at most chunk bytes
// (chunks of 1 to 2*chunk bytes, from seed, when vary is set), then ends
// both directions.
func Split(streams [2][]byte, chunk int, vary bool, seed uint64) []Call {
	var calls []Call
	x := seed | 1
	for dir, s := range streams {
		for len(s) > 0 {
			n := max(chunk, 1)
			if vary {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				n = 1 + int(x%uint64(2*n))
			}
			n = min(n, len(s))
			calls = append(calls, Call{Dir: decode.Dir(dir), Data: s[:n]})
			s = s[n:]
		}
	}
	return append(calls, Call{Dir: decode.DirF, End: true}, Call{Dir: decode.DirB, End: true})
}

// Check decodes calls with a decoder fac builds, twice: as given, with
// opt less StableInput, Transient, FieldsSeldom, Defer and Arena; and with opt
// and StableInput set (the others too when the caller set them, as
// `read` does; a Defer of its own, settled as the pipeline does, when
// opt has one), the calls' bytes copied into memory that cannot be
// written (a write kills the process: a decoder must not write to its
// input). With an Arena in opt, the second run has one of its own,
// whose slabs hold four units, and renders and releases each unit as it
// is emitted (read's writer may release a unit while the decoder is
// still in the call that emitted it): a unit, or bytes it owned, that
// the decoder reads or writes after that is cleared, poisoned or reused
// by then, and what is rendered after differs (see decode.Arena). It
// returns the first difference in the units.
func Check(fac decode.Factory, opt decode.Options, calls []Call) error {
	plain := opt
	plain.StableInput, plain.Transient, plain.FieldsSeldom, plain.Defer, plain.Arena = false, false, false, nil, nil
	want := run(fac, &plain, calls)
	n := 0
	for _, c := range calls {
		n += len(c.Data)
	}
	mem, err := readOnly(calls, n)
	if err != nil {
		return err
	}
	defer unix.Munmap(mem.buf)
	opt.StableInput = true
	got := run(fac, &opt, mem.calls)
	if len(got) != len(want) {
		return fmt.Errorf("stablecheck: %d units with StableInput (transient %v, fields seldom %v, arena %v), %d without", len(got), opt.Transient, opt.FieldsSeldom, opt.Arena != nil, len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			return fmt.Errorf("stablecheck: unit %d differs with StableInput (transient %v, fields seldom %v, arena %v):\n%s\nwithout:\n%s", i, opt.Transient, opt.FieldsSeldom, opt.Arena != nil, got[i], want[i])
		}
	}
	return nil
}

// FromCapture reads the capture at path and returns each connection's
// calls, as the pipeline would make them (the side that sent first is
// DirF), and each one's bytes per direction.
func FromCapture(path string) ([][]Call, [][2][]byte, error) {
	r := &recorder{calls: map[int]int{}}
	if _, err := capture.ReadFile(path, r, nil); err != nil {
		return nil, nil, err
	}
	return r.conns, r.streams, nil
}

type recorder struct {
	calls   map[int]int // flow ID -> index in conns
	conns   [][]Call
	streams [][2][]byte
}

func (r *recorder) conn(f *capture.Flow) int {
	i, ok := r.calls[f.ID]
	if !ok {
		i = len(r.conns)
		r.calls[f.ID] = i
		r.conns = append(r.conns, nil)
		r.streams = append(r.streams, [2][]byte{})
	}
	return i
}

func dirOf(fromA bool) decode.Dir {
	if fromA {
		return decode.DirF
	}
	return decode.DirB
}

func (r *recorder) Data(f *capture.Flow, fromA bool, data []byte, _ time.Time) {
	i := r.conn(f)
	r.conns[i] = append(r.conns[i], Call{Dir: dirOf(fromA), Data: bytes.Clone(data)})
	r.streams[i][dirOf(fromA)] = append(r.streams[i][dirOf(fromA)], data...)
}

func (r *recorder) Gap(f *capture.Flow, fromA bool, n int, _ time.Time) {
	i := r.conn(f)
	r.conns[i] = append(r.conns[i], Call{Dir: dirOf(fromA), N: n, IsGap: true})
}

func (r *recorder) Close(f *capture.Flow, _ time.Time) {
	i := r.conn(f)
	r.conns[i] = append(r.conns[i], Call{Dir: decode.DirF, End: true}, Call{Dir: decode.DirB, End: true})
}

type mapped struct {
	buf   []byte
	calls []Call
}

// readOnly copies the calls' bytes into a mapping it then makes
// read-only, and returns the calls over it.
func readOnly(calls []Call, n int) (*mapped, error) {
	buf, err := unix.Mmap(-1, 0, max(n, 1), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("stablecheck: %w", err)
	}
	m := &mapped{buf: buf, calls: make([]Call, len(calls))}
	off := 0
	for i, c := range calls {
		m.calls[i] = c
		if len(c.Data) > 0 {
			k := copy(buf[off:], c.Data)
			m.calls[i].Data = buf[off : off+k : off+k]
			off += k
		}
	}
	if err := unix.Mprotect(buf, unix.PROT_READ); err != nil {
		unix.Munmap(buf)
		return nil, fmt.Errorf("stablecheck: %w", err)
	}
	return m, nil
}

// Replay makes calls on d, a microsecond more apart each time from
// one second after the epoch.
func Replay(d decode.Decoder, calls []Call) {
	t := time.Unix(1, 0)
	for i, c := range calls {
		t = t.Add(time.Duration(i) * time.Microsecond)
		switch {
		case c.End:
			d.End(c.Dir, t)
		case c.IsGap:
			d.Gap(c.Dir, c.N, t)
		default:
			d.Feed(c.Dir, c.Data, t)
		}
	}
}

// run decodes calls and renders every unit once all are decoded (a unit
// that keeps the input's bytes must find them as they were); with an
// arena, as each is emitted, releasing it at once.
func run(fac decode.Factory, opt *decode.Options, calls []Call) [][]byte {
	var units []*decode.Unit
	if opt.Defer != nil || opt.Arena != nil {
		o := *opt
		if o.Defer != nil {
			o.Defer = new(decode.Deferred)
		}
		if o.Arena != nil {
			o.Arena = decode.NewArena(4)
			o.Arena.Poison = true
		}
		opt = &o
	}
	var out [][]byte
	var first time.Time
	release := make([]*decode.Unit, 1)
	d := fac(&decode.Conn{ID: 1}, opt, func(u *decode.Unit) {
		opt.Defer.Settle() // as the pipeline does before numbering
		if opt.Arena == nil {
			units = append(units, u)
			return
		}
		if len(out) == 0 {
			first = u.Time()
		}
		out = append(out, render(u, first))
		release[0] = u
		opt.Arena.Release(release)
	})
	Replay(d, calls)
	opt.Defer.Settle()
	if opt.Arena != nil {
		return out
	}
	out = make([][]byte, len(units))
	if len(units) > 0 {
		first = units[0].Time()
	}
	for i, u := range units {
		out[i] = render(u, first)
	}
	return out
}

// render is a unit as Check compares it: the text line, and the JSON
// object with the raw bytes in hex, its fields rendered from them (as
// the tree would be: the protocols' tests hold the two equal), its
// message and its parent's number.
func render(u *decode.Unit, first time.Time) []byte {
	b := output.AppendText(nil, u, first)
	b = output.AppendJSON(b, u, output.JSONOptions{Raw: true})
	return append(b, '\n')
}

// Captures runs Check on every connection of the captures the globs name
// (gzip-compressed ones too), as they were captured and cut anew into
// chunks of several sizes, with decoders fac builds; streams of over
// maxStream bytes in all are left out, to keep a test quick.
func Captures(t testing.TB, fac decode.Factory, opt decode.Options, maxStream int, globs ...string) {
	t.Helper()
	var paths []string
	for _, g := range globs {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Fatalf("no capture in %v", globs)
	}
	conns := 0
	for _, path := range paths {
		calls, streams, err := FromCapture(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := range calls {
			if len(streams[i][0])+len(streams[i][1]) > maxStream {
				continue
			}
			conns++
			if err := Check(fac, opt, calls[i]); err != nil {
				t.Fatalf("%s, connection %d as captured: %v", path, i+1, err)
			}
			for _, chunk := range []int{1, 5, 64, 1460, 16384} {
				if chunk == 1 && len(streams[i][0])+len(streams[i][1]) > 64<<10 {
					continue
				}
				for _, vary := range []bool{false, true} {
					if err := Check(fac, opt, Split(streams[i], chunk, vary, uint64(chunk))); err != nil {
						t.Fatalf("%s, connection %d in chunks of %d (vary %v): %v", path, i+1, chunk, vary, err)
					}
				}
			}
		}
	}
	if conns == 0 {
		t.Fatalf("no connection checked in %v", paths)
	}
}

// Allocs returns the allocations per Feed of data in direction dir by a
// decoder of fac, without StableInput and with it (see AllocsPerFeed).
func Allocs(fac decode.Factory, setup []byte, dir decode.Dir, data []byte) (copied, stable float64) {
	var allocs [2]float64
	for i, st := range []bool{false, true} {
		opt := decode.DefaultOptions()
		opt.StableInput = st
		allocs[i] = AllocsPerFeed(fac, opt, setup, dir, data)
	}
	return allocs[0], allocs[1]
}

// TransientAllocs returns the allocations per Feed of data in direction
// dir, on stable input, by a decoder of fac without
// decode.Options.Transient and with it (see AllocsPerFeed).
func TransientAllocs(fac decode.Factory, setup []byte, dir decode.Dir, data []byte) (kept, transient float64) {
	opt := decode.DefaultOptions()
	opt.StableInput = true
	kept = AllocsPerFeed(fac, opt, setup, dir, data)
	opt.Transient = true
	return kept, AllocsPerFeed(fac, opt, setup, dir, data)
}

// AllocsPerFeed returns the allocations per Feed of data in direction dir
// by a decoder of fac with options opt. The decoder is first fed setup
// (direction F; nil: nothing), then data eight times, so that its slabs
// have grown to their size.
func AllocsPerFeed(fac decode.Factory, opt *decode.Options, setup []byte, dir decode.Dir, data []byte) float64 {
	d := fac(&decode.Conn{ID: 1}, opt, func(*decode.Unit) {})
	if setup != nil {
		d.Feed(decode.DirF, setup, time.Time{})
	}
	for range 8 {
		d.Feed(dir, data, time.Time{})
	}
	return testing.AllocsPerRun(50, func() { d.Feed(dir, data, time.Time{}) })
}
