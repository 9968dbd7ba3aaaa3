package compsim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

// Config is one way of sending a connection's backend messages.
type Config struct {
	// Algorithm is pgwire.CompressionNone, CompressionLZ4 or CompressionZstd.
	Algorithm byte
	// MessagesPer is the number of messages per CompressedMessages
	// (protocol_backend_compression_number_messages); 0 means unbounded:
	// a container is sent when the output buffer fills or before a
	// message that is never compressed.
	MessagesPer int
	// TxFrame ends the compression frame when a transaction ends
	// (protocol_backend_compression_transaction_frame).
	TxFrame bool
	// Threshold sends messages shorter than this many bytes uncompressed
	// (protocol_backend_compression_threshold); 0 compresses all.
	Threshold int
	// OutBuf is the compressed bytes gathered before a container is sent
	// regardless of MessagesPer; 0 means 131072 (ZSTD_CStreamOutSize).
	OutBuf int
}

// String names the configuration as the report prints it.
func (c Config) String() string {
	if c.Algorithm == pgwire.CompressionNone {
		return "none"
	}
	s := pgwire.AlgorithmName(c.Algorithm) + " msgs="
	if c.MessagesPer == 0 {
		s += "unbounded"
	} else {
		s += strconv.Itoa(c.MessagesPer)
	}
	if c.TxFrame {
		s += " txframe"
	}
	return s
}

// StandardConfigs returns the table the proposal's author measured: no
// compression, then lz4 and zstd with 1, 2, 3, 2000 and unbounded messages
// per container, each without and with one frame per transaction.
func StandardConfigs() []Config {
	out := []Config{{Algorithm: pgwire.CompressionNone}}
	for _, a := range []byte{pgwire.CompressionLZ4, pgwire.CompressionZstd} {
		for _, tx := range []bool{false, true} {
			for _, n := range []int{1, 2, 3, 2000, 0} {
				out = append(out, Config{Algorithm: a, MessagesPer: n, TxFrame: tx})
			}
		}
	}
	return out
}

// Message is one backend message (or startup-phase answer) as it was on
// the wire.
type Message struct {
	Raw []byte
	// TxEnd marks a ReadyForQuery reporting idle: a transaction ended.
	TxEnd bool
}

// frameWriter is a streaming compressor: Write continues the frame, Flush
// makes everything written so far decodable, End closes the frame.
type frameWriter interface {
	Write(p []byte) (int, error)
	Flush() error
	End() error
}

type zstdFrame struct {
	e   *zstd.Encoder
	out io.Writer
}

func (z *zstdFrame) Write(p []byte) (int, error) { return z.e.Write(p) }
func (z *zstdFrame) Flush() error                { return z.e.Flush() }
func (z *zstdFrame) End() error {
	err := z.e.Close()
	z.e.Reset(z.out)
	return err
}

type lz4Frame struct {
	w   *lz4.Writer
	out io.Writer
}

func (l *lz4Frame) Write(p []byte) (int, error) { return l.w.Write(p) }
func (l *lz4Frame) Flush() error                { return l.w.Flush() }
func (l *lz4Frame) End() error {
	err := l.w.Close()
	l.w.Reset(l.out)
	return err
}

// Encoder turns a connection's backend messages into the wire stream the
// compression patch would send.
type Encoder struct {
	cfg     Config
	fw      frameWriter
	out     bytes.Buffer // compressed bytes not yet in a container
	types   []byte       // types of messages begun since the last container
	n       int          // messages since the last flush
	open    bool         // a frame has begun and not ended
	started bool         // past the startup phase (first ReadyForQuery)
	err     error
}

// NewEncoder returns an encoder for cfg.
func NewEncoder(cfg Config) (*Encoder, error) {
	e := &Encoder{cfg: cfg}
	if e.cfg.OutBuf <= 0 {
		e.cfg.OutBuf = 131072
	}
	switch cfg.Algorithm {
	case pgwire.CompressionNone:
	case pgwire.CompressionZstd:
		z, err := zstd.NewWriter(&e.out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if err != nil {
			return nil, err
		}
		e.fw = &zstdFrame{e: z, out: &e.out}
	case pgwire.CompressionLZ4:
		w := lz4.NewWriter(&e.out)
		if err := w.Apply(lz4.ConcurrencyOption(1), lz4.ChecksumOption(false), lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, err
		}
		e.fw = &lz4Frame{w: w, out: &e.out}
	default:
		return nil, errors.New("compsim: unsupported algorithm " + pgwire.AlgorithmName(cfg.Algorithm))
	}
	return e, nil
}

// container appends a CompressedMessages holding the pending compressed
// bytes and clears them.
func (e *Encoder) container(dst []byte) []byte {
	if e.out.Len() == 0 && len(e.types) == 0 {
		return dst
	}
	m := pgwire.CompressedMessages{Algorithm: e.cfg.Algorithm, Types: e.types, Data: e.out.Bytes()}
	dst = m.Encode(dst)
	e.out.Reset()
	e.types = e.types[:0]
	return dst
}

// Flush sends what was compressed since the last container
// (ZSTD_e_flush).
func (e *Encoder) Flush(dst []byte) []byte {
	if e.fw == nil || e.err != nil || (e.n == 0 && e.out.Len() == 0) {
		return dst
	}
	if e.err = e.fw.Flush(); e.err != nil {
		return dst
	}
	e.n = 0
	return e.container(dst)
}

// EndFrame flushes and closes the compression frame, sending the frame
// end in a container of its own as the patch does.
func (e *Encoder) EndFrame(dst []byte) []byte {
	dst = e.Flush(dst)
	if e.fw == nil || !e.open || e.err != nil {
		return dst
	}
	if e.err = e.fw.End(); e.err != nil {
		return dst
	}
	e.open = false
	return e.container(dst)
}

// Write appends the wire bytes that sending msg causes.
func (e *Encoder) Write(dst []byte, msg Message) []byte {
	raw := msg.Raw
	if e.fw == nil || e.err != nil || len(raw) < pgwire.HeaderLen {
		return append(dst, raw...)
	}
	typ := raw[0]
	if !e.started || pgwire.NeverCompressed(typ) || len(raw) < e.cfg.Threshold {
		dst = e.Flush(dst)
		if typ == pgwire.TypeReadyForQuery {
			if msg.TxEnd && e.cfg.TxFrame {
				dst = e.EndFrame(dst)
			}
			e.started = true
		}
		return append(dst, raw...)
	}
	if _, e.err = e.fw.Write(raw); e.err != nil {
		return dst
	}
	e.open = true
	e.types = append(e.types, typ)
	e.n++
	if e.cfg.MessagesPer > 0 && e.n >= e.cfg.MessagesPer {
		return e.Flush(dst)
	}
	if e.out.Len() >= e.cfg.OutBuf {
		// The output buffer is full: send it without flushing, leaving
		// the last message partly compressed.
		return e.container(dst)
	}
	return dst
}

// Close ends the stream: pending messages are flushed and the frame ended.
func (e *Encoder) Close(dst []byte) []byte {
	return e.EndFrame(dst)
}

// Err reports the first compression error.
func (e *Encoder) Err() error { return e.err }

// EncodeStream returns the backend byte stream of msgs under cfg.
func EncodeStream(msgs []Message, cfg Config) ([]byte, error) {
	e, err := NewEncoder(cfg)
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, m := range msgs {
		out = e.Write(out, m)
	}
	out = e.Close(out)
	return out, e.Err()
}

// countingEncode returns the wire size of msgs under cfg without keeping
// the stream.
func countingEncode(msgs []Message, cfg Config) (int64, error) {
	e, err := NewEncoder(cfg)
	if err != nil {
		return 0, err
	}
	var total int64
	var buf []byte
	for _, m := range msgs {
		buf = e.Write(buf[:0], m)
		total += int64(len(buf))
	}
	buf = e.Close(buf[:0])
	total += int64(len(buf))
	return total, e.Err()
}

// Result is the backend wire size of every connection under one Config.
type Result struct {
	Config  Config
	PerConn []int64
	Total   int64
}

// Simulate computes the wire size of each connection's backend messages
// under each configuration.
func Simulate(conns [][]Message, configs []Config) ([]Result, error) {
	out := make([]Result, 0, len(configs))
	for _, cfg := range configs {
		r := Result{Config: cfg, PerConn: make([]int64, len(conns))}
		for i, msgs := range conns {
			n, err := countingEncode(msgs, cfg)
			if err != nil {
				return nil, fmt.Errorf("compsim: %v, connection %d: %w", cfg, i+1, err)
			}
			r.PerConn[i] = n
			r.Total += n
		}
		out = append(out, r)
	}
	return out, nil
}

// Collector gathers backend messages from decoded units, per connection,
// in order. Messages already inside CompressedMessages count as the
// messages they carry.
type Collector struct {
	ids   []int
	conns map[int]int
	msgs  [][]Message
}

// Add takes one unit of the pipeline's output; units of other protocols,
// frontend units and undecodable units are ignored.
func (c *Collector) Add(u *decode.Unit) {
	if u.Proto != decode.ProtoPgSQL || u.Dir != decode.DirB || u.Err() != "" || u.Len != len(u.Raw) || len(u.Raw) == 0 {
		return
	}
	switch u.Type {
	case "CompressedMessages", "TLS", "GSSAPI", "Truncated":
		return
	}
	id := 0
	if u.Conn != nil {
		id = u.Conn.ID
	}
	if c.conns == nil {
		c.conns = map[int]int{}
	}
	i, ok := c.conns[id]
	if !ok {
		i = len(c.ids)
		c.conns[id] = i
		c.ids = append(c.ids, id)
		c.msgs = append(c.msgs, nil)
	}
	m := Message{Raw: u.Raw}
	if len(u.Raw) == 6 && u.Raw[0] == pgwire.TypeReadyForQuery && u.Raw[5] == 'I' {
		m.TxEnd = true
	}
	c.msgs[i] = append(c.msgs[i], m)
}

// Conns returns the connection IDs and their messages, in order of first
// backend message.
func (c *Collector) Conns() ([]int, [][]Message) { return c.ids, c.msgs }

// WriteTable prints results as a table: one row per configuration, the
// total and each connection's bytes, and the ratio against no compression.
func WriteTable(w io.Writer, ids []int, res []Result) error {
	var none int64
	for _, r := range res {
		if r.Config.Algorithm == pgwire.CompressionNone {
			none = r.Total
		}
	}
	b := []byte("config                      total bytes   ratio")
	for _, id := range ids {
		b = append(b, "   conn "...)
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, '\n')
	for _, r := range res {
		name := r.Config.String()
		b = append(b, name...)
		for i := len(name); i < 28; i++ {
			b = append(b, ' ')
		}
		t := strconv.FormatInt(r.Total, 10)
		for i := len(t); i < 11; i++ {
			b = append(b, ' ')
		}
		b = append(b, t...)
		ratio := "-"
		if none > 0 && r.Total > 0 {
			ratio = strconv.FormatFloat(float64(none)/float64(r.Total), 'f', 2, 64)
		}
		for i := len(ratio); i < 8; i++ {
			b = append(b, ' ')
		}
		b = append(b, ratio...)
		for i, n := range r.PerConn {
			s := strconv.FormatInt(n, 10)
			width := len("   conn ") + len(strconv.Itoa(ids[i]))
			for j := len(s); j < width; j++ {
				b = append(b, ' ')
			}
			b = append(b, s...)
		}
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}
