package pipeline

import (
	"bytes"
	"encoding/binary"
	"flag"
	"net/netip"
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
// length, then that many bytes. Each input is fed twice: straight to the
// pipeline, and as TCP segments through capture's reassembly, where a
// gap is a hole in the sequence space that never fills (its segments are
// held, charged to the same budget).
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
		runBudgetCapture(t, limit, data)
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

// runBudgetCapture feeds the records of a FuzzBudget input as TCP
// segments through an Assembler charging the pipeline's budget: a gap
// record skips n sequence numbers, so what follows is held out of order.
func runBudgetCapture(t *testing.T, limit uint32, data []byte) (*decode.Budget, *capture.Stats) {
	t.Helper()
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(int64(limit%(1<<20) + 1))
	opt.MaxMessage, opt.MaxDecompressed, opt.MaxBuffered, opt.MaxFrame = 1<<20, 256<<10, 1<<20, 1<<20
	p := New(Config{Options: opt, Sink: func(u *decode.Unit) {}})
	b := opt.Budget
	stats := new(capture.Stats)
	asm := capture.NewAssembler(p, nil, stats)
	server := [4]uint16{5672, 5432, 5672, 5432}
	var seq [4][2]uint32
	tm := t0
	packet := func(fl int, fromServer bool, flags byte, payload []byte) {
		cli := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 2}), 40001+uint16(fl))
		srv := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 1}), server[fl])
		d := 0
		if fromServer {
			cli, srv, d = srv, cli, 1
		}
		tm = tm.Add(time.Millisecond)
		ip := rawSegment(cli, srv, seq[fl][d], flags, payload)
		asm.Packet(&capture.Packet{Link: capture.LinkTypeRaw, Time: tm, Data: ip, Length: len(ip)})
		seq[fl][d] += uint32(len(payload))
		if flags&0x02 != 0 {
			seq[fl][d]++
		}
		if b.High() > b.Limit() {
			t.Fatalf("capture: high-water %d past the budget %d", b.High(), b.Limit())
		}
	}
	for fl := range 4 {
		seq[fl] = [2]uint32{1000, 9000}
		packet(fl, false, 0x02, nil)     // SYN
		packet(fl, true, 0x02|0x10, nil) // SYN-ACK
	}
	for len(data) >= 3 {
		h, n := data[0], int(binary.BigEndian.Uint16(data[1:3]))
		data = data[3:]
		n = min(n, len(data))
		fl, fromServer := int(h&3), h&4 != 0
		if h&8 != 0 {
			d := 0
			if fromServer {
				d = 1
			}
			seq[fl][d] += uint32(n) // a hole that never fills
			continue
		}
		packet(fl, fromServer, 0x10|0x08, data[:n])
		data = data[n:]
	}
	asm.Flush()
	p.Finish()
	if b.High() > b.Limit() || b.Used() != 0 {
		t.Fatalf("capture: high-water %d, budget %d, %d left charged", b.High(), b.Limit(), b.Used())
	}
	return b, stats
}

// rawSegment returns an IPv4 packet carrying a TCP segment (checksums
// are not checked by reassembly and left zero).
func rawSegment(src, dst netip.AddrPort, seq uint32, flags byte, payload []byte) []byte {
	b := make([]byte, 40, 40+len(payload))
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(40+len(payload)))
	b[8], b[9] = 64, 6
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], dst.Port())
	binary.BigEndian.PutUint32(b[24:], seq)
	b[32] = 5 << 4
	b[33] = flags
	binary.BigEndian.PutUint16(b[34:], 65535)
	return append(b, payload...)
}

// TestBudgetCaptureSeeds: through reassembly, a hole before the AMQP 1.0
// seed's deliveries makes the capture layer hold them, charged to the
// budget, refused or evicted under 3 KiB; without the hole nothing is
// held, and under 1 MiB nothing is cut.
func TestBudgetCaptureSeeds(t *testing.T) {
	seeds := budgetSeeds()
	var holed budgetInput
	holed.b = append(holed.b, seeds[0][:holeAfter(seeds[0], 4)]...)
	holed.b = append(holed.b, 8, 0, 100) // flow 0, client: 100 bytes never sent
	holed.b = append(holed.b, seeds[0][holeAfter(seeds[0], 4):]...)
	b, st := runBudgetCapture(t, 3<<10, holed.b)
	if st.BudgetDrops == 0 || b.Refusals()+b.Evictions() == 0 {
		t.Errorf("under 3 KiB with a hole: %d budget drops, %d refusals, %d evictions", st.BudgetDrops, b.Refusals(), b.Evictions())
	}
	b, st = runBudgetCapture(t, 1<<20-1, holed.b)
	if st.BudgetDrops != 0 || b.High() < 20<<10 {
		t.Errorf("under 1 MiB with a hole: %d budget drops, high-water %d (the held deliveries, about 24 KiB, not charged?)", st.BudgetDrops, b.High())
	}
	for i, s := range seeds {
		if _, st := runBudgetCapture(t, 1<<20-1, s); st.BudgetDrops != 0 {
			t.Errorf("seed %d: %d budget drops", i, st.BudgetDrops)
		}
	}
}

// holeAfter returns the offset of the k-th record of a FuzzBudget input.
func holeAfter(in []byte, k int) int {
	off := 0
	for i := 0; i < k && off+3 <= len(in); i++ {
		off += 3 + int(binary.BigEndian.Uint16(in[off+1:off+3]))
	}
	return off
}
