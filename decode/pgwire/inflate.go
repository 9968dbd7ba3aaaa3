package pgwire

import (
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"strconv"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

var errStopped = errors.New("pgsql: decompression context closed")

// zstdInflater runs klauspost's streaming zstd decoder as a coroutine
// (iter.Pull): the decoder reads from feedReader, which hands it the
// current container's payload and, once that is used up, yields control
// back to write. A frame flushed with ZSTD_e_flush is complete up to its
// last block, so everything it can produce has been produced by the time
// it asks for more input. Nothing is buffered beyond one container's
// payload and one decoded block.
type zstdInflater struct {
	next func() (zevent, bool)
	stop func()
	in   []byte
	err  error
}

type zevent struct {
	out     []byte
	err     error
	starved bool
}

type feedReader struct {
	z     *zstdInflater
	yield func(zevent) bool
}

func (r *feedReader) Read(p []byte) (int, error) {
	for len(r.z.in) == 0 {
		if !r.yield(zevent{starved: true}) {
			return 0, errStopped
		}
	}
	n := copy(p, r.z.in)
	r.z.in = r.z.in[n:]
	return n, nil
}

// maxZstdWindow bounds the window a frame may ask for: a frame header
// claiming more is rejected rather than allocated.
const maxZstdWindow = 64 << 20

// newZstdReader is the streaming decoder both inflaters run: one
// goroutine, no window past what the budget allows.
func newZstdReader(r io.Reader, window uint64) (*zstd.Decoder, error) {
	return zstd.NewReader(r,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(window),
		zstd.WithDecoderMaxMemory(window))
}

// maxWindow (at most maxZstdWindow) is the window the memory budget
// allows this connection.
func newZstdInflater(maxWindow int) *zstdInflater {
	z := &zstdInflater{}
	window := uint64(min(maxWindow, maxZstdWindow))
	seq := func(yield func(zevent) bool) {
		dec, err := newZstdReader(&feedReader{z: z, yield: yield}, window)
		if err != nil {
			yield(zevent{err: err})
			return
		}
		defer dec.Close()
		buf := make([]byte, zstdRead)
		for {
			n, err := dec.Read(buf)
			if n > 0 && !yield(zevent{out: buf[:n]}) {
				return
			}
			if err != nil {
				yield(zevent{err: err})
				return
			}
		}
	}
	z.next, z.stop = iter.Pull(seq)
	return z
}

func (z *zstdInflater) write(p []byte, out func([]byte) error) error {
	if z.err != nil {
		return z.err
	}
	z.in = p
	for {
		ev, ok := z.next()
		switch {
		case !ok:
			z.err = errStopped
		case ev.starved:
			return nil
		case ev.err != nil:
			z.err = ev.err
		default:
			if err := out(ev.out); err != nil {
				z.err = err
			}
		}
		if z.err != nil {
			z.in = nil
			z.stop()
			return z.err
		}
	}
}

func (z *zstdInflater) close() {
	z.in = nil
	z.stop()
}

// lz4Inflater decodes the LZ4 frame format (lz4_Frame_format.md)
// incrementally: it keeps the partial header or block it has seen and
// decodes each block as soon as it is whole, with the previous 64 KiB of
// output as dictionary when blocks are linked. Checksums are skipped, not
// verified.
type lz4Inflater struct {
	state    lz4State
	need     int    // bytes wanted for the current state
	part     []byte // partial header/block
	flg, bd  byte
	blockMax int
	blockCk  bool
	content  bool // content checksum present
	linked   bool
	blockLen int
	raw      bool // current block stored uncompressed
	skip     int  // skippable frame bytes left
	out      []byte
	hist     []byte
	err      error
}

type lz4State uint8

const (
	lz4FrameMagic lz4State = iota
	lz4Descriptor
	lz4HeaderRest
	lz4BlockSize
	lz4Block
	lz4ContentChecksum
	lz4SkipSize
	lz4Skippable
)

func newLZ4Inflater() *lz4Inflater { return &lz4Inflater{state: lz4FrameMagic, need: 4} }

func (z *lz4Inflater) close() { z.part, z.out, z.hist = nil, nil, nil }

func (z *lz4Inflater) fail(msg string) error {
	z.err = errors.New("lz4: " + msg)
	return z.err
}

func (z *lz4Inflater) write(p []byte, out func([]byte) error) error {
	if z.err != nil {
		return z.err
	}
	for len(p) > 0 {
		if z.state == lz4Skippable {
			n := min(z.skip, len(p))
			z.skip -= n
			p = p[n:]
			if z.skip == 0 {
				z.state, z.need = lz4FrameMagic, 4
			}
			continue
		}
		// Gather z.need bytes, without copying when p holds them all.
		var b []byte
		if len(z.part) == 0 && len(p) >= z.need {
			b, p = p[:z.need], p[z.need:]
		} else {
			n := min(z.need-len(z.part), len(p))
			z.part = append(z.part, p[:n]...)
			p = p[n:]
			if len(z.part) < z.need {
				return nil
			}
			b = z.part
		}
		err := z.step(b, out)
		z.part = z.part[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// step consumes exactly z.need bytes in b and sets the next state.
func (z *lz4Inflater) step(b []byte, out func([]byte) error) error {
	switch z.state {
	case lz4FrameMagic:
		m := binary.LittleEndian.Uint32(b)
		switch {
		case m == 0x184D2204:
			z.state, z.need = lz4Descriptor, 2
		case m&0xFFFFFFF0 == 0x184D2A50:
			z.state, z.need = lz4SkipSize, 4
		default:
			return z.fail("bad frame magic 0x" + strconv.FormatUint(uint64(m), 16))
		}
	case lz4Descriptor:
		z.flg, z.bd = b[0], b[1]
		if z.flg>>6 != 1 {
			return z.fail("unsupported frame version " + strconv.Itoa(int(z.flg>>6)))
		}
		switch (z.bd >> 4) & 7 {
		case 4:
			z.blockMax = 64 << 10
		case 5:
			z.blockMax = 256 << 10
		case 6:
			z.blockMax = 1 << 20
		case 7:
			z.blockMax = 4 << 20
		default:
			return z.fail("bad block maximum size code " + strconv.Itoa(int((z.bd>>4)&7)))
		}
		z.linked = z.flg&0x20 == 0
		z.blockCk = z.flg&0x10 != 0
		z.content = z.flg&0x04 != 0
		z.hist = z.hist[:0]
		z.need = 1 // header checksum
		if z.flg&0x08 != 0 {
			z.need += 8 // content size
		}
		if z.flg&0x01 != 0 {
			z.need += 4 // dictionary ID
		}
		z.state = lz4HeaderRest
	case lz4HeaderRest:
		z.state, z.need = lz4BlockSize, 4
	case lz4BlockSize:
		v := binary.LittleEndian.Uint32(b)
		if v == 0 {
			if z.content {
				z.state, z.need = lz4ContentChecksum, 4
			} else {
				z.state, z.need = lz4FrameMagic, 4
			}
			return nil
		}
		z.raw = v&0x80000000 != 0
		z.blockLen = int(v & 0x7fffffff)
		if z.blockLen > z.blockMax {
			return z.fail("block of " + strconv.Itoa(z.blockLen) + " bytes exceeds the frame's maximum " + strconv.Itoa(z.blockMax))
		}
		z.state, z.need = lz4Block, z.blockLen
		if z.blockCk {
			z.need += 4
		}
	case lz4Block:
		src := b[:z.blockLen]
		var dec []byte
		if z.raw {
			dec = src
		} else {
			if cap(z.out) < z.blockMax {
				z.out = make([]byte, z.blockMax)
			}
			var dict []byte
			if z.linked {
				dict = z.hist
			}
			n, err := lz4.UncompressBlockWithDict(src, z.out[:z.blockMax], dict)
			if err != nil {
				return z.fail("corrupt block: " + err.Error())
			}
			dec = z.out[:n]
		}
		if z.linked {
			z.hist = appendHistory(z.hist, dec)
		}
		z.state, z.need = lz4BlockSize, 4
		if err := out(dec); err != nil {
			z.err = err
			return err
		}
	case lz4ContentChecksum:
		z.state, z.need = lz4FrameMagic, 4
	case lz4SkipSize:
		z.skip = int(binary.LittleEndian.Uint32(b))
		z.state = lz4Skippable
		if z.skip == 0 {
			z.state, z.need = lz4FrameMagic, 4
		}
	}
	return nil
}

// appendHistory keeps the last 64 KiB of output, the window of a linked
// LZ4 block.
func appendHistory(h, b []byte) []byte {
	const window = 64 << 10
	if len(b) >= window {
		return append(h[:0], b[len(b)-window:]...)
	}
	if len(h)+len(b) > 2*window {
		keep := window - len(b)
		h = append(h[:0], h[len(h)-keep:]...)
	}
	return append(h, b...)
}

// asyncZstd runs klauspost's streaming zstd decoder on a goroutine of
// its own, so that a container's payload inflates while the decoding
// goroutine does other work: submit hands it a payload, collect takes
// that payload's output, in order. `read` lets containers wait so
// (decode.Options.Defer): later containers' payloads are submitted
// before the earlier ones' output is collected and cut into messages
// (see compression.container), and inflating overlaps that cutting.
//
// The goroutine decodes into chunks of zstdChunk bytes it never writes
// again once handed over, so the messages cut from them keep them as
// their bytes, uncopied (chunks are the garbage collector's to free).
// Like the synchronous inflater it reads zstdRead bytes at a time and
// hands each read's output over as one piece, so that collect gives the
// same pieces to the same callback: where a piece ends decides what is
// counted when decoding stops in the middle of a payload (a corrupt
// stream, --max-decompressed). Pieces go over a few at a time, the last
// of a payload marked; the goroutine runs at most maxWaiting+8 sends
// ahead of collect, so its memory is bounded by that and by its window,
// which the connection's budget charges as for the synchronous inflater.
// Like that one it produces, for each payload, exactly what the decoder
// produced before asking for the next: a frame flushed at a container's
// end is complete up to its last block.
type asyncZstd struct {
	jobs chan []byte
	outs chan zchunk
	quit chan struct{}
	// main side
	err     error
	stopped bool
	// goroutine side
	in   []byte
	out  []byte // the chunk being written
	next zchunk // pieces not yet sent
	fed  bool
}

// zchunk is pieces of one payload's output, each one read's; end says
// they are the payload's last, and err, then, that decoding failed there.
type zchunk struct {
	b   [4][]byte
	n   int
	err error
	end bool
}

const (
	// zstdRead is what one read of the decoder may produce.
	zstdRead = 32 << 10
	// zstdChunk is the chunk the asynchronous inflater reads into; a
	// read that would not fit in what is left starts a new one.
	zstdChunk = 128 << 10
)

func newAsyncZstd(maxWindow int) *asyncZstd {
	// Room for every payload that may be submitted and not collected,
	// and for their output: at least one piece each (each ends in a
	// piece of its own), so that the inflater never waits for collect
	// while the decoder waits to submit; a few more so that it may run
	// ahead on large ones.
	z := &asyncZstd{
		jobs: make(chan []byte, maxWaiting+1),
		outs: make(chan zchunk, maxWaiting+8),
		quit: make(chan struct{}),
	}
	go z.run(uint64(min(maxWindow, maxZstdWindow)))
	return z
}

// send hands a piece to collect; false when the inflater was closed.
func (z *asyncZstd) send(c zchunk) bool {
	select {
	case z.outs <- c:
		return true
	case <-z.quit:
		return false
	}
}

// flush hands over the pieces not yet sent.
func (z *asyncZstd) flush(end bool, err error) bool {
	c := z.next
	z.next = zchunk{}
	c.end, c.err = end, err
	return z.send(c)
}

func (z *asyncZstd) run(window uint64) {
	dec, err := newZstdReader(z, window)
	if err != nil {
		z.fail(err)
		return
	}
	defer dec.Close()
	for {
		if cap(z.out)-len(z.out) < zstdRead {
			z.out = make([]byte, 0, zstdChunk)
		}
		// Read asks for input (Read below) only once everything decoded
		// so far has been returned: the decoder writes nowhere else.
		l := len(z.out)
		n, err := dec.Read(z.out[l : l+zstdRead])
		if n > 0 {
			z.out = z.out[:l+n]
			if z.next.n == len(z.next.b) && !z.flush(false, nil) {
				return
			}
			z.next.b[z.next.n] = z.out[l : l+n : l+n]
			z.next.n++
		}
		if err != nil {
			if err != errStopped {
				z.fail(err)
			}
			return
		}
	}
}

// fail ends the payload being decoded with err, and every later one at
// once (collect is not asked for them: the context is lost).
func (z *asyncZstd) fail(err error) {
	if !z.flush(true, err) {
		return
	}
	for {
		select {
		case <-z.jobs:
			if !z.send(zchunk{err: errStopped, end: true}) {
				return
			}
		case <-z.quit:
			return
		}
	}
}

// Read is the decoder's input, on the inflater's goroutine: the current
// payload, and when it is used up (everything it produced has been
// returned by then), the end of its output, then the next payload.
func (z *asyncZstd) Read(p []byte) (int, error) {
	for len(z.in) == 0 {
		if z.fed && !z.flush(true, nil) {
			return 0, errStopped
		}
		select {
		case in := <-z.jobs:
			z.in, z.fed = in, true
		case <-z.quit:
			return 0, errStopped
		}
	}
	n := copy(p, z.in)
	z.in = z.in[n:]
	return n, nil
}

// submit queues a payload; it stays untouched until its output is
// collected.
func (z *asyncZstd) submit(p []byte) {
	if z.err != nil {
		return
	}
	select {
	case z.jobs <- p:
	case <-z.quit:
	}
}

// collect gives out, in order, the output of the oldest payload not yet
// collected, in pieces that stay as they are (a message may keep its
// bytes there); out's error, or the decoder's, stops the inflater for
// good.
func (z *asyncZstd) collect(out func([]byte) error) error {
	if z.err != nil {
		return z.err
	}
	for {
		c := <-z.outs
		var err error
		for _, b := range c.b[:c.n] {
			if err = out(b); err != nil {
				break
			}
		}
		if err == nil {
			err = c.err
		}
		if err != nil {
			z.err = err
			z.close()
			return err
		}
		if c.end {
			return nil
		}
	}
}

func (z *asyncZstd) write(p []byte, out func([]byte) error) error {
	z.submit(p)
	return z.collect(out)
}

func (z *asyncZstd) close() {
	if z.err == nil {
		z.err = errStopped
	}
	if !z.stopped {
		z.stopped = true
		close(z.quit)
	}
}
