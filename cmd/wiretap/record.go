package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/capture/pcapng"
	"github.com/wiretap-dev/wiretap/capture/redact"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// recordFlush is how often a -w file is written out and synced: a crash
// loses at most this much of the recording.
const recordFlush = 500 * time.Millisecond

// writeFlags are -w and --redact, shared by the live sources.
type writeFlags struct {
	path   string
	redact bool
}

func (w *writeFlags) register(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVarP(&w.path, "write", "w", "", usage)
	cmd.Flags().BoolVar(&w.redact, "redact", false, "with -w: write credentials (AMQP PLAIN/AMQPLAIN/SASL responses, PostgreSQL passwords and SASL messages) as asterisks of the same length, for files meant to be shared")
}

// recording is a -w file being written as traffic passes: packets as
// captured (WritePacket), or TCP synthesised from streams (its Handler
// methods). It is safe for concurrent use; what it is given reaches the
// file within recordFlush.
type recording struct {
	path string
	mu   sync.Mutex
	file *os.File
	buf  *bufio.Writer
	w    *pcapng.Writer
	syn  *pcapng.Synth
	// conns and pkts redact (--redact), streams and packets respectively.
	conns map[*capture.Flow]*redact.Conn
	pkts  *redact.Packets
	dirty bool
	err   error
	stop  chan struct{}
	done  chan struct{}
}

// openRecording creates the file, mode 0600 (it may hold credentials),
// tells stderr what it will hold, and starts flushing it.
func openRecording(wf writeFlags, synthesised bool) (*recording, error) {
	fh, err := os.OpenFile(wf.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Mode().Perm() != 0o600 {
		// An existing file keeps its mode through O_TRUNC.
		if err := fh.Chmod(0o600); err != nil {
			fh.Close()
			return nil, err
		}
	}
	r := &recording{path: wf.path, file: fh, buf: bufio.NewWriterSize(fh, 256<<10), stop: make(chan struct{}), done: make(chan struct{})}
	r.w = pcapng.NewWriter(r.buf)
	if synthesised {
		r.syn = pcapng.NewSynth(r.w)
		// The header goes out at once: a file killed before any traffic
		// is still an (empty) capture.
		if err := r.w.Begin(capture.LinkTypeEthernet); err != nil {
			fh.Close()
			return nil, err
		}
		r.dirty = true
	}
	if wf.redact {
		if synthesised {
			r.conns = make(map[*capture.Flow]*redact.Conn)
		} else {
			r.pkts = redact.NewPackets()
		}
		fmt.Fprintf(os.Stderr, "wiretap: writing %s with credentials overwritten by asterisks (--redact)\n", wf.path)
	} else {
		fmt.Fprintf(os.Stderr, "wiretap: writing %s: it holds the traffic as it was, credentials included (--redact to overwrite them)\n", wf.path)
	}
	go r.flushLoop()
	return r, nil
}

func (r *recording) flushLoop() {
	defer close(r.done)
	t := time.NewTicker(recordFlush)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.flush()
		case <-r.stop:
			return
		}
	}
}

// flush writes out what is buffered and syncs the file.
func (r *recording) flush() {
	r.mu.Lock()
	if !r.dirty || r.err != nil {
		r.mu.Unlock()
		return
	}
	r.dirty = false
	err := r.w.Flush()
	if err == nil {
		err = r.buf.Flush()
	}
	r.fail(err)
	r.mu.Unlock()
	if err == nil {
		r.file.Sync() // a file that cannot sync (a pipe) is still written
	}
}

// fail reports the first error once; the recording stops there. Call with
// mu held.
func (r *recording) fail(err error) {
	if err != nil && r.err == nil {
		r.err = err
		fmt.Fprintf(os.Stderr, "wiretap: writing %s: %v; recording stopped\n", r.path, err)
	}
}

// end flushes and closes the file.
func (r *recording) end() error {
	close(r.stop)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		err := r.w.Close()
		if err == nil {
			err = r.buf.Flush()
		}
		r.fail(err)
	}
	if err := r.file.Close(); err != nil && r.err == nil {
		r.fail(err)
	}
	return r.err
}

// WritePacket records one captured packet (a live.Config tap).
func (r *recording) WritePacket(p *capture.Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if r.pkts != nil {
		p = r.pkts.Redact(p)
	}
	r.fail(r.w.WritePacket(p))
	r.dirty = true
}

func (r *recording) redactor(f *capture.Flow) *redact.Conn {
	c := r.conns[f]
	if c == nil {
		c = redact.NewConn()
		r.conns[f] = c
	}
	return c
}

// Data implements capture.Handler. A live source's flows have A the
// client.
func (r *recording) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns != nil {
		data = r.redactor(f).Redact(fromA, data)
	}
	r.syn.Data(f, fromA, data, t)
	r.fail(r.syn.Err())
	r.dirty = true
}

// Gap implements capture.Handler.
func (r *recording) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns != nil {
		r.redactor(f).Lost(fromA)
	}
	r.syn.Gap(f, fromA, n, t)
	r.fail(r.syn.Err())
	r.dirty = true
}

// Close implements capture.Handler.
func (r *recording) Close(f *capture.Flow, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, f)
	r.syn.Close(f, t)
	r.fail(r.syn.Err())
	r.dirty = true
}

// protoWatch passes a live source to the pipeline and reports each
// connection whose protocol was not recognised when it ends: it is
// forwarded (or captured) but nothing of it is decoded, so it would
// otherwise leave no trace in the output.
type protoWatch struct {
	pl     *pipeline.Pipeline
	bytes  map[*capture.Flow]*[2]int64
	report func(msg string)
}

func newProtoWatch(pl *pipeline.Pipeline, report func(string)) *protoWatch {
	return &protoWatch{pl: pl, bytes: make(map[*capture.Flow]*[2]int64), report: report}
}

func (w *protoWatch) Data(f *capture.Flow, fromA bool, data []byte, t time.Time) {
	n := w.bytes[f]
	if n == nil {
		n = new([2]int64)
		w.bytes[f] = n
	}
	if fromA {
		n[0] += int64(len(data))
	} else {
		n[1] += int64(len(data))
	}
	w.pl.Data(f, fromA, data, t)
}

func (w *protoWatch) Gap(f *capture.Flow, fromA bool, n int, t time.Time) {
	w.pl.Gap(f, fromA, n, t)
}

func (w *protoWatch) GapBecause(f *capture.Flow, fromA bool, n int, reason string, t time.Time) {
	w.pl.GapBecause(f, fromA, n, reason, t)
}

func (w *protoWatch) Note(f *capture.Flow, fromA bool, kind, msg string, t time.Time) {
	w.pl.Note(f, fromA, kind, msg, t)
}

func (w *protoWatch) Close(f *capture.Flow, t time.Time) {
	w.pl.Close(f, t)
	n := w.bytes[f]
	delete(w.bytes, f)
	conns := w.pl.Conns()
	i := sort.Search(len(conns), func(i int) bool { return conns[i].ID >= f.ID })
	if i == len(conns) || conns[i].ID != f.ID || conns[i].Proto != decode.ProtoUnknown {
		return
	}
	if n == nil {
		// Nothing passed (an upstream that refused the client, a
		// handshake that failed): the proxy's own note says why.
		return
	}
	c := conns[i]
	w.report(fmt.Sprintf("wiretap: conn %d %s -> %s: protocol not recognised; %d bytes from the client and %d from the server passed undecoded",
		c.ID, c.Client, c.Server, n[0], n[1]))
}

// finish reports the connections still open at the end of the run.
func (w *protoWatch) finish(t time.Time) {
	flows := make([]*capture.Flow, 0, len(w.bytes))
	for f := range w.bytes {
		flows = append(flows, f)
	}
	sort.Slice(flows, func(i, j int) bool { return flows[i].ID < flows[j].ID })
	for _, f := range flows {
		w.Close(f, t)
	}
}
