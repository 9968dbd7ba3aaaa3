package pgwire_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

// resultSet is a pgbench-like result: RowDescription, rows DataRows,
// CommandComplete, ReadyForQuery.
func resultSet(rows int) []compsim.Message {
	var msgs []compsim.Message
	msgs = append(msgs, compsim.Message{Raw: (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil), TxEnd: true})
	rd := pgwire.RowDescription{Fields: []pgwire.FieldDescription{
		{Name: []byte("aid"), TypeOID: 23, TypeSize: 4, TypeModifier: -1},
		{Name: []byte("bid"), TypeOID: 23, TypeSize: 4, TypeModifier: -1},
		{Name: []byte("abalance"), TypeOID: 23, TypeSize: 4, TypeModifier: -1},
		{Name: []byte("filler"), TypeOID: 1042, TypeSize: -1, TypeModifier: 88},
	}}
	msgs = append(msgs, compsim.Message{Raw: rd.Encode(nil)})
	filler := make([]byte, 84)
	for i := range filler {
		filler[i] = ' '
	}
	for i := 0; i < rows; i++ {
		dr := pgwire.DataRow{Values: [][]byte{[]byte(strconv.Itoa(i + 1)), []byte(strconv.Itoa(i/100000 + 1)), []byte("0"), filler}}
		msgs = append(msgs, compsim.Message{Raw: dr.Encode(nil)})
	}
	msgs = append(msgs, compsim.Message{Raw: pgwire.AppendMessage(nil, 'C', []byte("SELECT "+strconv.Itoa(rows)+"\x00"))})
	msgs = append(msgs, compsim.Message{Raw: (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil), TxEnd: true})
	return msgs
}

func benchDecode(b *testing.B, stream []byte, payload int64) {
	opt := decode.DefaultOptions()
	start := startup("user", "bench")
	units := 0
	emit := func(*decode.Unit) { units++ }
	b.SetBytes(payload)
	b.ReportAllocs()
	b.ResetTimer()
	t := time.Unix(0, 0)
	for i := 0; i < b.N; i++ {
		d := pgwire.New(&decode.Conn{}, opt, emit)
		d.Feed(decode.DirF, start, t)
		for s := stream; len(s) > 0; {
			n := min(1460, len(s))
			d.Feed(decode.DirB, s[:n], t)
			s = s[n:]
		}
		d.End(decode.DirB, t)
	}
	b.ReportMetric(float64(units)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDecodeBackend measures plain decoding: bytes/s on the wire and
// messages/s.
func BenchmarkDecodeBackend(b *testing.B) {
	s := concat(resultSet(10000))
	benchDecode(b, s, int64(len(s)))
}

// BenchmarkDecodeRead measures decoding as `read` does it: stable input
// (the units keep its bytes), transient units, late summaries, segments
// of 64 KiB; ns/unit is the time per message.
func BenchmarkDecodeRead(b *testing.B) {
	s := concat(resultSet(10000))
	opt := decode.DefaultOptions()
	opt.StableInput, opt.Transient, opt.FieldsSeldom, opt.LateSummaries = true, true, true, true
	start := startup("user", "bench")
	units := 0
	emit := func(*decode.Unit) { units++ }
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	t := time.Unix(0, 0)
	for b.Loop() {
		d := pgwire.New(&decode.Conn{}, opt, emit)
		d.Feed(decode.DirF, start, t)
		for r := s; len(r) > 0; {
			n := min(64<<10, len(r))
			d.Feed(decode.DirB, r[:n], t)
			r = r[n:]
		}
		d.End(decode.DirB, t)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(units), "ns/unit")
}

// BenchmarkDecompress measures CompressedMessages decoding; MB/s counts
// decompressed bytes.
func BenchmarkDecompress(b *testing.B) {
	msgs := resultSet(10000)
	plain := int64(len(concat(msgs)))
	for _, alg := range []byte{pgwire.CompressionZstd, pgwire.CompressionLZ4} {
		for _, per := range []int{1, 2000, 0} {
			cfg := compsim.Config{Algorithm: alg, MessagesPer: per}
			s, err := compsim.EncodeStream(msgs, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(cfg.String(), func(b *testing.B) { benchDecode(b, s, plain) })
		}
	}
}

func BenchmarkDataRowDecode(b *testing.B) {
	raw := resultSet(1)[2].Raw
	var m pgwire.DataRow
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := m.Decode(raw[5:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPQTrace(b *testing.B) {
	msgs := resultSet(100)
	units, _ := decodeChunks([]chunk{{decode.DirF, startup("user", "b")}, {decode.DirB, concat(msgs)}}, nil)
	var line []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, u := range units {
			line = pqtrace.AppendUnit(line[:0], u, pqtrace.Options{})
		}
	}
	b.ReportMetric(float64(b.N*len(units))/b.Elapsed().Seconds(), "lines/s")
}

// TestAllocs proves the hot paths allocate nothing in steady state: the
// typed decoders reuse their slices, the trace printer appends to a
// caller's buffer, and the decoder costs one allocation per message (the
// unit it hands over).
func TestAllocs(t *testing.T) {
	msgs := resultSet(3)
	rowDesc, row := msgs[1].Raw[5:], msgs[2].Raw[5:]
	var dr pgwire.DataRow
	var rd pgwire.RowDescription
	var er pgwire.ErrorResponse
	var bd pgwire.Bind
	errBody := (&pgwire.ErrorResponse{Fields: []pgwire.ErrorField{{'S', []byte("ERROR")}, {'M', []byte("m")}}}).Encode(nil, 'E')[5:]
	bindBody := (&pgwire.Bind{ParamFormats: []int16{0}, Params: [][]byte{[]byte("1"), nil}, ResultFormats: []int16{0}}).Encode(nil)[5:]
	for name, f := range map[string]func(){
		"DataRow":        func() { _ = dr.Decode(row) },
		"RowDescription": func() { _ = rd.Decode(rowDesc) },
		"ErrorResponse":  func() { _ = er.Decode(errBody) },
		"Bind":           func() { _ = bd.Decode(bindBody) },
		"ReadHeader":     func() { _, _, _ = pgwire.ReadHeader(msgs[2].Raw) },
	} {
		f()
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s: %v allocations per decode, want 0", name, a)
		}
	}

	units, _ := decodeChunks([]chunk{{decode.DirF, startup("user", "b")}, {decode.DirB, concat(msgs)}}, nil)
	line := make([]byte, 0, 4096)
	for _, u := range units {
		if a := testing.AllocsPerRun(50, func() { line = pqtrace.AppendUnit(line[:0], u, pqtrace.Options{}) }); a != 0 {
			t.Errorf("pqtrace %s: %v allocations, want 0", u.Type, a)
		}
	}

	d := pgwire.New(&decode.Conn{}, nil, func(*decode.Unit) {})
	d.Feed(decode.DirF, startup("user", "b"), time.Time{})
	one := msgs[2].Raw
	a := testing.AllocsPerRun(1000, func() { d.Feed(decode.DirB, one, time.Time{}) })
	if a > 1.05 {
		t.Errorf("decoder: %v allocations per DataRow, want 1 (the unit)", a)
	}
}
