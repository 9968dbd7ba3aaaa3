package pgwire_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// exercise feeds data to one direction in two pieces, builds every unit's
// field tree and trace line, and checks the invariants every unit keeps,
// including that the package's decode.Finder agrees with the trees.
func exercise(t *testing.T, dir decode.Dir, prefix, data []byte, split int) {
	opt := decode.DefaultOptions()
	opt.MaxFrame = 1 << 20
	opt.MaxBuffered = 1 << 18
	opt.MaxDecompressed = 1 << 22
	conn := &decode.Conn{ID: 1}
	var units []*decode.Unit
	d := pgwire.New(conn, opt, func(u *decode.Unit) { units = append(units, u) })
	now := time.Unix(0, 0)
	if len(prefix) > 0 {
		d.Feed(decode.DirF, prefix, now)
	}
	if split < 0 || split > len(data) {
		split = len(data) / 2
	}
	d.Feed(dir, data[:split], now)
	d.Gap(dir.Other(), 3, now)
	d.Feed(dir, data[split:], now)
	d.End(decode.DirF, now)
	d.End(decode.DirB, now)
	// With stable input, the same units, the input never written.
	calls := []stablecheck.Call{{Dir: decode.DirF, Data: prefix}, {Dir: dir, Data: data[:split]},
		{Dir: dir.Other(), N: 3, IsGap: true}, {Dir: dir, Data: data[split:]}, {Dir: decode.DirF, End: true}, {Dir: decode.DirB, End: true}}
	if len(prefix) == 0 {
		calls = calls[1:]
	}
	if err := stablecheck.Check(pgwire.New, *opt, calls); err != nil {
		t.Fatal(err)
	}
	// And as `read` decodes: transient, seldom asking for fields.
	transient := *opt
	transient.Transient, transient.FieldsSeldom = true, true
	if err := stablecheck.Check(pgwire.New, transient, calls); err != nil {
		t.Fatal(err)
	}
	// With CompressedMessages left to be collected, inflating on the side.
	transient.Defer = new(decode.Deferred)
	if err := stablecheck.Check(pgwire.New, transient, calls); err != nil {
		t.Fatal(err)
	}
	// And with units, and large messages' buffers, recycled once
	// released (decode.Arena).
	transient.Arena = decode.NewArena(0)
	if err := stablecheck.Check(pgwire.New, transient, calls); err != nil {
		t.Fatal(err)
	}
	var line []byte
	// findcheck.Check looks up every field name on a unit: on inputs that
	// inflate to thousands of units, a spread of them is checked.
	step := max(1, len(units)/maxFindChecks)
	for i, u := range units {
		if u.Len < len(u.Raw) {
			t.Fatalf("unit %s: Len %d < len(Raw) %d", u.Type, u.Len, len(u.Raw))
		}
		if i%step == 0 {
			if err := findcheck.Check(u); err != nil {
				t.Fatal(err)
			}
		}
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Length > 0 && (f.Offset < 0 || f.Offset+f.Length > len(u.Raw)) {
				t.Fatalf("unit %s field %s: range %d+%d outside %d bytes", u.Type, f.Key, f.Offset, f.Length, len(u.Raw))
			}
			return true
		})
		line = pqtrace.AppendUnit(line[:0], u, pqtrace.Options{})
		line = pqtrace.AppendUnit(line[:0], u, pqtrace.Options{Libpq15: true})
	}
}

// maxFindChecks bounds how many units of one fuzz input exercise checks
// against the finder.
const maxFindChecks = 256

var startupSeed = startup("user", "fuzz", "database", "db")

// smallSession is a session without its large values: fuzzing mutates
// small inputs best.
func smallSession(seed uint64, queries int) []compsim.Message {
	var out []compsim.Message
	for _, m := range backendSession(seed, queries) {
		if len(m.Raw) < 2048 {
			out = append(out, m)
		}
	}
	if len(out) > 60 {
		out = append(out[:50], out[len(out)-10:]...)
	}
	return out
}

func backendSeeds() [][]byte {
	msgs := smallSession(1, 6)
	var seeds [][]byte
	seeds = append(seeds, concat(msgs))
	for _, cfg := range []compsim.Config{
		{Algorithm: pgwire.CompressionZstd, MessagesPer: 2},
		{Algorithm: pgwire.CompressionLZ4, MessagesPer: 0, TxFrame: true},
	} {
		s, _ := compsim.EncodeStream(msgs, cfg)
		seeds = append(seeds, s)
	}
	return seeds
}

func FuzzBackend(f *testing.F) {
	for _, s := range backendSeeds() {
		f.Add(s, 100)
	}
	f.Add([]byte("N"), 0)
	f.Add([]byte{'Z', 0, 0, 0, 5, 'I', 'D', 0x7f, 0xff, 0xff, 0xff}, 3)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		exercise(t, decode.DirB, startupSeed, data, split)
	})
}

func FuzzFrontend(f *testing.F) {
	var s []byte
	s = append(s, startupSeed...)
	s = pgwire.AppendMessage(s, 'Q', []byte("SELECT 1\x00"))
	s = (&pgwire.Bind{Portal: []byte("p"), Statement: []byte("s"), ParamFormats: []int16{0}, Params: [][]byte{[]byte("1"), nil}, ResultFormats: []int16{1}}).Encode(s)
	s = pgwire.AppendMessage(s, 'X', nil)
	f.Add(s, 9)
	f.Add(append(sslRequest(80877103), 0x16, 3, 1, 0, 5), 8)
	f.Add((&pgwire.CancelRequest{ProcessID: 1, SecretKey: []byte{1, 2, 3, 4}}).Encode(nil), 4)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		exercise(t, decode.DirF, nil, data, split)
	})
}

// FuzzCompressed fuzzes the payloads of CompressedMessages: the
// decompressors and the inner message cutter.
func FuzzCompressed(f *testing.F) {
	msgs := smallSession(2, 4)
	for _, cfg := range []compsim.Config{
		{Algorithm: pgwire.CompressionZstd, MessagesPer: 3},
		{Algorithm: pgwire.CompressionLZ4, MessagesPer: 1},
	} {
		s, _ := compsim.EncodeStream(msgs, cfg)
		off := 0
		for off+5 <= len(s) {
			typ, l, _ := pgwire.ReadHeader(s[off:])
			if typ == 'z' {
				var m pgwire.CompressedMessages
				if m.Decode(s[off+5:off+1+int(l)]) == nil {
					f.Add(m.Algorithm, m.Data, m.Data)
				}
			}
			off += 1 + int(l)
		}
	}
	f.Fuzz(func(t *testing.T, alg byte, p1, p2 []byte) {
		var s []byte
		s = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(s)
		s = (&pgwire.CompressedMessages{Algorithm: alg%4 | 2, Types: []byte("D"), Data: p1}).Encode(s)
		s = (&pgwire.CompressedMessages{Algorithm: alg%4 | 2, Data: p2}).Encode(s)
		s = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(s)
		exercise(t, decode.DirB, startupSeed, s, -1)
	})
}

// FuzzMessages fuzzes the typed decoders directly.
func FuzzMessages(f *testing.F) {
	f.Add([]byte{0, 2, 0, 0, 0, 1, 'a', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("S\x00ERROR\x00C\x0042P01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var dr pgwire.DataRow
		if dr.Decode(b) == nil {
			if got := dr.Encode(nil); string(got[5:]) != string(b) {
				t.Fatalf("DataRow round trip: %x != %x", got[5:], b)
			}
		}
		var rd pgwire.RowDescription
		_ = rd.Decode(b)
		var er pgwire.ErrorResponse
		if er.Decode(b) == nil {
			if got := er.Encode(nil, 'E'); string(got[5:]) != string(b) {
				t.Fatalf("ErrorResponse round trip: %x != %x", got[5:], b)
			}
		}
		var bd pgwire.Bind
		if bd.Decode(b) == nil {
			if got := bd.Encode(nil); string(got[5:]) != string(b) {
				t.Fatalf("Bind round trip: %x != %x", got[5:], b)
			}
		}
		var sm pgwire.StartupMessage
		if sm.Decode(b) == nil {
			if got := sm.Encode(nil); string(got[4:]) != string(b) {
				t.Fatalf("StartupMessage round trip: %x != %x", got[4:], b)
			}
		}
		// Every message whose encoding is canonical must round-trip.
		type codec interface {
			Decode([]byte) error
			Encode([]byte) []byte
		}
		for _, m := range []codec{&pgwire.Query{}, &pgwire.Parse{}, &pgwire.Execute{}, &pgwire.FunctionCall{},
			&pgwire.SASLInitialResponse{}, &pgwire.PasswordMessage{}, &pgwire.CommandComplete{},
			&pgwire.ParameterStatus{}, &pgwire.ParameterDescription{}, &pgwire.NotificationResponse{},
			&pgwire.FunctionCallResponse{}, &pgwire.NegotiateProtocolVersion{}, &pgwire.RowDescription{},
			&pgwire.BackendKeyData{}, &pgwire.Authentication{}, &pgwire.CompressedMessages{}} {
			if m.Decode(b) == nil {
				if got := m.Encode(nil); string(got[5:]) != string(b) {
					t.Fatalf("%T round trip: %x != %x", m, got[5:], b)
				}
			}
		}
		var cm pgwire.CompressedMessages
		_ = cm.Decode(b)
	})
}

// TestWriteCorpus writes the seed corpora to testdata/fuzz when
// WIRETAP_WRITE_CORPUS=1 (run it after changing the seeds).
func TestWriteCorpus(t *testing.T) {
	if os.Getenv("WIRETAP_WRITE_CORPUS") != "1" {
		t.Skip("set WIRETAP_WRITE_CORPUS=1 to rewrite testdata/fuzz")
	}
	write := func(target string, i int, vals ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, v := range vals {
			switch x := v.(type) {
			case []byte:
				s += "[]byte(" + strconv.Quote(string(x)) + ")\n"
			case int:
				s += "int(" + strconv.Itoa(x) + ")\n"
			case byte:
				s += "byte('\\x" + strconv.FormatUint(uint64(x)+0x100, 16)[1:] + "')\n"
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "seed-"+strconv.Itoa(i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range backendSeeds() {
		write("FuzzBackend", i, s, 100+i*7)
	}
	var s []byte
	s = append(s, startupSeed...)
	s = pgwire.AppendMessage(s, 'Q', []byte("SELECT 1\x00"))
	write("FuzzFrontend", 0, s, 9)
	write("FuzzFrontend", 1, append(sslRequest(80877103), 0x16, 3, 1, 0, 5), 8)
	msgs := smallSession(2, 4)
	z, _ := compsim.EncodeStream(msgs, compsim.Config{Algorithm: pgwire.CompressionZstd, MessagesPer: 3})
	l, _ := compsim.EncodeStream(msgs, compsim.Config{Algorithm: pgwire.CompressionLZ4, MessagesPer: 1})
	n := 0
	for _, st := range [][]byte{z, l} {
		for off := 0; off+5 <= len(st) && n < 8; {
			typ, ln, _ := pgwire.ReadHeader(st[off:])
			if typ == 'z' {
				var m pgwire.CompressedMessages
				if m.Decode(st[off+5:off+1+int(ln)]) == nil && len(m.Data) > 0 {
					write("FuzzCompressed", n, m.Algorithm, m.Data, []byte{})
					n++
				}
			}
			off += 1 + int(ln)
		}
	}
	write("FuzzMessages", 0, []byte{0, 2, 0, 0, 0, 1, 'a', 0xff, 0xff, 0xff, 0xff})
	write("FuzzMessages", 1, []byte("S\x00ERROR\x00C\x0042P01\x00\x00"))
}
