package pipeline

import (
	"bytes"
	"encoding/binary"
	"flag"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	a "github.com/wiretap-dev/wiretap/decode/amqp10"
	pg "github.com/wiretap-dev/wiretap/decode/pgwire"
)

// FuzzBudget feeds four connections (AMQP 1.0, 0-9-1 and PostgreSQL
// ports) with byte streams read from the input under a small memory
// budget, and checks the accountant's bound: its high-water mark never
// passes the budget, and nothing stays charged once every connection has
// ended. The input is records: a header byte (flow in bits 0-1, server
// side when bit 2 is set, a gap when bit 3 is), a big-endian uint16
// length, then that many bytes.
func FuzzBudget(f *testing.F) {
	for _, s := range budgetSeeds() {
		f.Add(uint32(16<<10), s)
		f.Add(uint32(3<<10), s)
	}
	// As FuzzPipeline: minimise new inputs for seconds, not a minute each.
	minimizeSet := false
	flag.Visit(func(fl *flag.Flag) { minimizeSet = minimizeSet || fl.Name == "test.fuzzminimizetime" })
	if !minimizeSet {
		flag.Set("test.fuzzminimizetime", fuzzMinimizeTime)
	}
	f.Fuzz(func(t *testing.T, limit uint32, data []byte) {
		if len(data) > 64<<10 {
			t.Skip("input over 64 KiB")
		}
		runBudgetInput(t, limit, data)
	})
}

// TestBudgetSeedsReachTheLimit: FuzzBudget's seeds make the accountant
// evict and refuse (else the fuzzer would test only budgets never
// reached), and under a large budget the same inputs are never cut.
func TestBudgetSeedsReachTheLimit(t *testing.T) {
	for i, s := range budgetSeeds() {
		if b := runBudgetInput(t, 3<<10, s); b.Evictions()+b.Refusals() == 0 {
			t.Errorf("seed %d under 3 KiB: %d evictions, %d refusals", i, b.Evictions(), b.Refusals())
		}
		if b := runBudgetInput(t, 1<<20-1, s); b.Evictions() != 0 || b.Refusals() != 0 || b.High() == 0 {
			t.Errorf("seed %d under 1 MiB: %d evictions, %d refusals, high-water %d", i, b.Evictions(), b.Refusals(), b.High())
		}
	}
}

func runBudgetInput(t *testing.T, limit uint32, data []byte) *decode.Budget {
	t.Helper()
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(int64(limit%(1<<20) + 1))
	// Small limits besides the budget: a mutated zstd block can inflate to
	// the default 64 MiB of tiny messages, seconds an input.
	opt.MaxMessage, opt.MaxDecompressed, opt.MaxBuffered, opt.MaxFrame = 1<<20, 256<<10, 1<<20, 1<<20
	p := New(Config{Options: opt, Sink: func(u *decode.Unit) {}})
	flows := [4]*capture.Flow{
		flow(1, "10.0.0.2:40001", "10.0.0.1:5672", true),
		flow(2, "10.0.0.2:40002", "10.0.0.1:5432", true),
		flow(3, "10.0.0.2:40003", "10.0.0.1:5672", true),
		flow(4, "10.0.0.2:40004", "10.0.0.1:5432", true),
	}
	tm := t0
	b := opt.Budget
	for len(data) >= 3 {
		h, n := data[0], int(binary.BigEndian.Uint16(data[1:3]))
		data = data[3:]
		n = min(n, len(data))
		fl, fromA := flows[h&3], h&4 == 0
		tm = tm.Add(time.Millisecond)
		if h&8 != 0 {
			p.Gap(fl, fromA, n, tm)
		} else {
			p.Data(fl, fromA, data[:n], tm)
			data = data[n:]
		}
		if b.High() > b.Limit() {
			t.Fatalf("high-water %d past the budget %d", b.High(), b.Limit())
		}
	}
	p.Finish()
	if b.High() > b.Limit() || b.Used() != 0 {
		t.Fatalf("high-water %d, budget %d, %d left charged", b.High(), b.Limit(), b.Used())
	}
	return b
}

type budgetInput struct{ b []byte }

func (in *budgetInput) send(fl byte, server bool, data []byte) {
	for len(data) > 0 {
		n := min(len(data), 60000)
		h := fl
		if server {
			h |= 4
		}
		in.b = append(in.b, h)
		in.b = binary.BigEndian.AppendUint16(in.b, uint16(n))
		in.b = append(in.b, data[:n]...)
		data = data[n:]
	}
}

// budgetSeeds: AMQP 1.0 deliveries in progress on several links, and a
// PostgreSQL backend whose CompressedMessages hold a zstd window and a
// message split across containers, on two connections each.
func budgetSeeds() [][]byte {
	var in budgetInput
	hdr := []byte("AMQP\x00\x01\x00\x00")
	open := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorOpen, a.AppendString(nil, "fuzz"), a.AppendString(nil, "h"), a.AppendUint(nil, 1<<20)))
	begin := a.AppendFrame(nil, a.FrameTypeAMQP, 0, a.AppendComposite(nil, a.DescriptorBegin, a.AppendNull(nil), a.AppendUint(nil, 0), a.AppendUint(nil, 100), a.AppendUint(nil, 100)))
	for _, fl := range []byte{0, 2} {
		in.send(fl, false, append(append(append([]byte(nil), hdr...), open...), begin...))
		in.send(fl, true, append(append(append([]byte(nil), hdr...), open...), begin...))
	}
	chunk := bytes.Repeat([]byte{'x'}, 1<<10)
	for k := 0; k < 6; k++ {
		for h := uint32(0); h < 4; h++ {
			tr := a.AppendComposite(nil, a.DescriptorTransfer, a.AppendUint(nil, h), a.AppendUint(nil, h), a.AppendBinary(nil, []byte{byte(h)}), a.AppendUint(nil, 0), a.AppendBool(nil, false), a.AppendBool(nil, k < 5))
			in.send(byte(h&1)*2, false, a.AppendFrame(nil, a.FrameTypeAMQP, 0, tr, chunk))
		}
	}
	amqp := in.b

	in = budgetInput{}
	startup := []byte{0, 0, 0, 0, 0, 3, 0, 0}
	startup = append(startup, "user\x00u\x00\x00"...)
	binary.BigEndian.PutUint32(startup, uint32(len(startup)))
	var zb bytes.Buffer
	enc, _ := zstd.NewWriter(&zb, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(64<<10))
	row := (&pg.DataRow{Values: [][]byte{bytes.Repeat([]byte("r"), 3<<10)}}).Encode(nil)
	var payloads [][]byte
	for i := 0; i < 3; i++ {
		enc.Write(row[:len(row)/2])
		enc.Flush()
		payloads = append(payloads, bytes.Clone(zb.Bytes()))
		zb.Reset()
		enc.Write(row[len(row)/2:])
		enc.Write(bytes.Repeat(pg.AppendMessage(nil, 'n', nil), 200))
		enc.Flush()
		payloads = append(payloads, bytes.Clone(zb.Bytes()))
		zb.Reset()
	}
	for _, fl := range []byte{1, 3} {
		in.send(fl, false, startup)
		in.send(fl, true, pg.AppendMessage(pg.AppendMessage(nil, 'R', []byte{0, 0, 0, 0}), 'Z', []byte{'I'}))
		for _, p := range payloads {
			in.send(fl, true, (&pg.CompressedMessages{Algorithm: pg.CompressionZstd, Types: []byte("D"), Data: p}).Encode(nil))
		}
	}
	// Deliveries in progress when the client's framing breaks: the
	// direction stops, and what they held must be given back (it was not:
	// found by this fuzzer).
	broken := budgetInput{b: bytes.Clone(amqp)}
	broken.send(0, false, bytes.Repeat([]byte{0xff}, 16))
	return [][]byte{amqp, in.b, append(append([]byte(nil), amqp...), in.b...), broken.b}
}

// TestBudgetStreamBuffers: bytes a decoder buffers while waiting for the
// rest of a message are reserved in the budget; a reservation is never
// evicted (the bytes are in use), so a connection that finds no room has
// that message skipped, with a warning saying why, and the others go on.
func TestBudgetStreamBuffers(t *testing.T) {
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(8 << 20) // share 4 MiB
	var units []*decode.Unit
	p := New(Config{Options: opt, Sink: func(u *decode.Unit) { units = append(units, u) }})
	startup := []byte{0, 0, 0, 0, 0, 3, 0, 0}
	startup = append(startup, "user\x00u\x00\x00"...)
	binary.BigEndian.PutUint32(startup, uint32(len(startup)))
	row := (&pg.DataRow{Values: [][]byte{bytes.Repeat([]byte("v"), 3<<20)}}).Encode(nil)
	var flows []*capture.Flow
	for i := 0; i < 3; i++ {
		fl := flow(i+1, "10.0.0.2:4100"+string(rune('0'+i)), "10.0.0.1:5432", true)
		flows = append(flows, fl)
		p.Data(fl, true, startup, t0)
		p.Data(fl, false, pg.AppendMessage(nil, 'Z', []byte{'I'}), t0)
		p.Data(fl, false, row[:2<<20], t0) // waiting for the rest
	}
	b := opt.Budget
	if b.High() > b.Limit() || b.Refusals() != 1 {
		t.Errorf("high-water %d of %d, %d refusals (want 1)", b.High(), b.Limit(), b.Refusals())
	}
	for _, fl := range flows {
		p.Data(fl, false, row[2<<20:], t0)
		p.Close(fl, t0)
	}
	rows, skipped := 0, 0
	for _, u := range units {
		if u.Type != "DataRow" {
			continue
		}
		if u.Len == len(row) && len(u.Raw) == len(row) {
			rows++
		}
		if warned(u.Warnings(), "is not buffered: the memory budget (--max-memory) has no room for it") == 1 {
			skipped++
			if u.Conn.ID != 3 {
				t.Errorf("conn %d's row skipped, want the last one's", u.Conn.ID)
			}
		}
	}
	if rows != 2 || skipped != 1 || b.Used() != 0 {
		t.Errorf("%d rows whole, %d skipped, %d still charged", rows, skipped, b.Used())
	}
}
