package pgwire_test

import (
	"strconv"
	"time"

	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/decode/pgwire/compsim"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// TestStableInput: with decode.Options.StableInput, units keep the
// input's bytes where they lie in it, and are the units decoded without
// it, whatever the cut of the stream: messages within one Feed, messages
// completed across calls (taken over from the stream's buffer),
// CompressedMessages and the messages inflated from them (never the
// input's), passwords and SASL exchanges redacted in copies of their own
// (the input is read-only here), other protocols' bytes as garbage.
func TestStableInput(t *testing.T) {
	opt := *decode.DefaultOptions()
	stablecheck.Captures(t, pgwire.New, opt, 4<<20, "../../testdata/*.pcap*")
	// As `read` decodes: a transient caller, on stable input, seldom
	// asking for field trees.
	transient := opt
	transient.Transient, transient.FieldsSeldom = true, true
	stablecheck.Captures(t, pgwire.New, transient, 4<<20, "../../testdata/*.pcap*")
	// And as `read` does, leaving CompressedMessages to be collected
	// while their payloads inflate on the side (decode.Options.Defer):
	// the same units, in the same order.
	deferred := transient
	deferred.Defer = new(decode.Deferred)
	stablecheck.Captures(t, pgwire.New, deferred, 4<<20, "../../testdata/*.pcap*", "../../testdata/hostile/pgsql-datarow-count.pcapng")
	// And with its units recycled once released, and the buffers of
	// large messages with them (decode.Arena): nothing reads a unit, nor
	// its bytes, after that.
	arena := deferred
	arena.Arena = decode.NewArena(0)
	stablecheck.Captures(t, pgwire.New, arena, 4<<20, "../../testdata/*.pcap*", "../../testdata/hostile/pgsql-datarow-count.pcapng")
	for _, s := range backendSeeds() {
		for _, chunk := range []int{3, 100, 1460} {
			for _, o := range []decode.Options{opt, transient, deferred, arena} {
				if err := stablecheck.Check(pgwire.New, o, stablecheck.Split([2][]byte{startupSeed, s}, chunk, true, uint64(chunk))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Rows of 5 to 64 KiB, each unlike the others, gathered across calls:
	// with an arena, each gathered in the buffer of a larger one released
	// before (poisoned then), the same units.
	var rows []byte
	for i := range 40 {
		col := make([]byte, 5000+(i*7919)%60000)
		for k := range col {
			col[k] = byte('a' + (i+k)%26)
		}
		rows = (&pgwire.DataRow{Values: [][]byte{col}}).Encode(rows)
	}
	for _, chunk := range []int{1460, 16384, 65536} {
		for _, o := range []decode.Options{transient, arena} {
			if err := stablecheck.Check(pgwire.New, o, stablecheck.Split([2][]byte{startupSeed, rows}, chunk, true, uint64(chunk))); err != nil {
				t.Fatal(err)
			}
		}
	}
	big, _ := compsim.EncodeStream(smallSession(3, 50), compsim.Config{Algorithm: pgwire.CompressionZstd, MessagesPer: 10})
	opt.ShowSecrets = true
	if err := stablecheck.Check(pgwire.New, opt, stablecheck.Split([2][]byte{startupSeed, big}, 1460, true, 5)); err != nil {
		t.Fatal(err)
	}
	// Deferred containers collected when too many wait, not only when
	// something else comes: of 1, 2 or 32 (the default) waiting.
	// Transient, the messages keep the inflater's chunks; a caller that
	// keeps its units (the TUI) gets copies.
	deferred.ShowSecrets = true
	kept := deferred
	kept.Transient = false
	for _, waiting := range []int{1, 2, 32} {
		restore := pgwire.SetMaxWaiting(waiting)
		for _, chunk := range []int{7, 1460, 1 << 20} {
			for _, o := range []decode.Options{deferred, kept} {
				if err := stablecheck.Check(pgwire.New, o, stablecheck.Split([2][]byte{startupSeed, big}, chunk, true, 5)); err != nil {
					restore()
					t.Fatalf("%d waiting, chunks of %d, transient %v: %v", waiting, chunk, o.Transient, err)
				}
			}
		}
		restore()
	}
}

// TestStableInputAllocs: whole messages in stable input allocate nothing
// that the same messages copied do not.
func TestStableInputAllocs(t *testing.T) {
	var rows []byte
	for range 64 {
		rows = (&pgwire.DataRow{Values: [][]byte{[]byte("12345"), []byte("some text")}}).Encode(rows)
	}
	copied, stable := stablecheck.Allocs(pgwire.New, startupSeed, decode.DirB, rows)
	if stable > copied {
		t.Errorf("%.1f allocations per Feed of 64 rows with stable input, %.1f without", stable, copied)
	}
}

// TestDeferredWaitingBounded: the CompressedMessages left waiting hold no
// more than maxWaitingBytes (32 large ones would hold 32 times
// --max-buffered outside the memory budget), and still wait.
func TestDeferredWaitingBounded(t *testing.T) {
	const limit = 1000
	defer pgwire.SetMaxWaitingBytes(limit)()
	// A result of 3,000 rows, ten to a container: 300 containers in a row.
	msgs := []compsim.Message{
		{Raw: (&pgwire.Authentication{Code: pgwire.AuthOk}).Encode(nil)},
		{Raw: (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil), TxEnd: true},
	}
	for i := range 3000 {
		row := pgwire.DataRow{Values: [][]byte{[]byte(strconv.Itoa(i)), []byte("a value of some length, row " + strconv.Itoa(i*7919))}}
		msgs = append(msgs, compsim.Message{Raw: row.Encode(nil)})
	}
	big, err := compsim.EncodeStream(msgs, compsim.Config{Algorithm: pgwire.CompressionZstd, MessagesPer: 10})
	if err != nil {
		t.Fatal(err)
	}
	opt := *decode.DefaultOptions()
	opt.Transient, opt.Defer = true, new(decode.Deferred)
	d := pgwire.New(&decode.Conn{ID: 1}, &opt, func(*decode.Unit) { opt.Defer.Settle() })
	now := time.Unix(1, 0)
	d.Feed(decode.DirF, startupSeed, now)
	most := 0
	for s := big; len(s) > 0; {
		n := min(len(s), 1460)
		d.Feed(decode.DirB, s[:n], now)
		s = s[n:]
		waiting, bytes := pgwire.Waiting(d)
		if bytes > limit {
			t.Fatalf("%d CompressedMessages wait holding %d bytes, over %d", waiting, bytes, limit)
		}
		most = max(most, waiting)
	}
	d.End(decode.DirB, now)
	opt.Defer.Settle()
	if most < 2 {
		t.Fatalf("at most %d CompressedMessages waited: the test tests nothing", most)
	}
	t.Logf("at most %d waited", most)
	// Collected early, for their bytes: still the units of the plain decode.
	if err := stablecheck.Check(pgwire.New, opt, stablecheck.Split([2][]byte{startupSeed, big}, 1460, true, 9)); err != nil {
		t.Fatal(err)
	}
}
