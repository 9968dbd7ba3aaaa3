package pgwire_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

var budgetT0 = time.Unix(1700000000, 0)

func zstdPayloads(t *testing.T, window int, parts ...[]byte) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(window))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, p := range parts {
		enc.Write(p)
		if err := enc.Flush(); err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	return out
}

// TestCompressedStreamsManyMessages: a container of more inner messages
// than are held for its summary is emitted first, its messages follow as
// they are inflated (each after it, each its child), the connection's
// report counts them, and the budget never holds more than the context
// and the held units.
func TestCompressedStreamsManyMessages(t *testing.T) {
	const n = 10000
	inner := append(bytes.Repeat(pgwire.AppendMessage(nil, 'n', nil), n), (&pgwire.DataRow{Values: [][]byte{[]byte("last")}}).Encode(nil)...)
	p := zstdPayloads(t, 1<<20, inner)[0]
	var stream []byte
	stream = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(stream)
	stream = (&pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: append(bytes.Repeat([]byte("n"), n), 'D'), Data: p}).Encode(stream)
	stream = pgwire.AppendMessage(stream, 'C', []byte("SELECT 1\x00"))
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(64 << 20)
	units, conn := decodeBackend(stream, 1, 1<<20, opt)
	var container *decode.Unit
	kids := 0
	for _, u := range units {
		switch {
		case u.Type == "CompressedMessages":
			container = u
		case u.Parent != nil:
			if u.Parent != container {
				t.Fatalf("unit %d: child before or outside its container", u.N)
			}
			kids++
		}
	}
	if kids != n+1 || container == nil || !strings.Contains(container.Summary, "messages follow it") {
		t.Fatalf("%d children; container %+v", kids, container)
	}
	if last := units[len(units)-1]; last.Type != "CommandComplete" || units[len(units)-2].Type != "DataRow" {
		t.Errorf("stream ends with %s after %s", last.Type, units[len(units)-2].Type)
	}
	if !strings.Contains(strings.Join(conn.Notes, ""), "carrying 10001 messages") {
		t.Errorf("report %q", conn.Notes)
	}
	b := opt.Budget
	if max := int64(1<<20 + 300<<10 + 4096*(256+5)); b.High() > max || b.Used() != 0 {
		t.Errorf("high-water %d (want at most %d), %d left charged", b.High(), max, b.Used())
	}

	// Fewer messages than the hold limit: the container comes first with
	// its count, as before.
	small := zstdPayloads(t, 1<<20, bytes.Repeat(pgwire.AppendMessage(nil, 'n', nil), 100))[0]
	stream = (&pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: bytes.Repeat([]byte("n"), 100), Data: small}).Encode(nil)
	units, _ = decodeBackend(stream, 1, 1<<20, opt)
	if len(units) != 101 || !strings.HasSuffix(units[0].Summary, "500 bytes inflated, 100 messages") {
		t.Errorf("%d units, container %q", len(units), units[0].Summary)
	}
}

// TestCompressedWindowBudget: three connections whose zstd contexts do
// not all fit: the oldest context is dropped with a warning unit on its
// connection, whose next container is then not decompressed, while the
// others decode in full.
func TestCompressedWindowBudget(t *testing.T) {
	row := (&pgwire.DataRow{Values: [][]byte{bytes.Repeat([]byte("x"), 1000)}}).Encode(nil)
	parts := zstdPayloads(t, 2<<20, row, row)
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(6 << 20) // share 3 MiB: a 2 MiB window fits, three do not
	var got [3][]*decode.Unit
	var decs [3]decode.Decoder
	for i := range decs {
		i := i
		decs[i] = pgwire.New(&decode.Conn{ID: i + 1, Proto: decode.ProtoPgSQL}, opt, func(u *decode.Unit) { got[i] = append(got[i], u) })
	}
	for _, part := range parts {
		for _, d := range decs {
			d.Feed(decode.DirB, (&pgwire.CompressedMessages{Algorithm: pgwire.CompressionZstd, Types: []byte("D"), Data: part}).Encode(nil), budgetT0)
		}
	}
	for _, d := range decs {
		d.End(decode.DirF, budgetT0)
		d.End(decode.DirB, budgetT0)
	}
	var types [3][]string
	for i := range got {
		for _, u := range got[i] {
			types[i] = append(types[i], u.Type)
		}
	}
	if strings.Join(types[0], " ") != "CompressedMessages DataRow warning CompressedMessages" {
		t.Errorf("conn 1: %v", types[0])
	} else {
		if w := got[0][2].Warnings(); !strings.Contains(w[0], "zstd decompression context dropped: the memory budget (--max-memory 6MiB) was reached") {
			t.Errorf("conn 1 warning: %q", w)
		}
		if e := got[0][3].Err(); !strings.Contains(e, "context was lost (dropped by the memory budget)") {
			t.Errorf("conn 1 second container: %q", e)
		}
	}
	for i := 1; i < 3; i++ {
		if strings.Join(types[i], " ") != "CompressedMessages DataRow CompressedMessages DataRow" {
			t.Errorf("conn %d: %v", i+1, types[i])
		}
	}
	b := opt.Budget
	if b.High() > b.Limit() || b.Used() != 0 || b.Evictions() != 1 {
		t.Errorf("high-water %d of %d, %d left, %d evictions", b.High(), b.Limit(), b.Used(), b.Evictions())
	}
}
