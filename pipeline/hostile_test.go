package pipeline

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
	"github.com/wiretap-dev/wiretap/decode/pgwire/pqtrace"
)

// The hostile corpus (testdata/hostile, written by internal/hostilegen):
// each file is decoded through the whole pipeline, rendered as text and
// JSON, and checked for its warning, for the ordinary conversations beside
// the hostile one, and for the bound that keeps its cost linear. Nothing
// here measures time: scripts/hostile-vs-budget.sh does.

type hostileRun struct {
	p     *Pipeline
	stats *capture.Stats
	units map[int][]*decode.Unit // by connection
	json  map[*decode.Unit][]byte
}

// runHostile decodes a corpus file. keepJSON selects the units whose JSON
// is kept (the rest are rendered and dropped).
func runHostile(t *testing.T, name string, keepJSON func(*decode.Unit) bool) *hostileRun {
	t.Helper()
	r := &hostileRun{units: map[int][]*decode.Unit{}, json: map[*decode.Unit][]byte{}}
	var buf []byte
	r.p = New(Config{Sink: func(u *decode.Unit) {
		buf = output.AppendJSON(buf[:0], u, output.JSONOptions{})
		if !json.Valid(buf) {
			t.Fatalf("unit %d: invalid JSON", u.N)
		}
		buf = output.AppendText(buf[:0], u, t0)
		if u.Conn != nil {
			r.units[u.Conn.ID] = append(r.units[u.Conn.ID], u)
		}
		if keepJSON != nil && keepJSON(u) {
			r.json[u] = output.AppendJSON(nil, u, output.JSONOptions{})
		}
	}})
	stats, err := capture.ReadFile(filepath.Join("../testdata/hostile", name), r.p, nil)
	if err != nil {
		t.Fatalf("%v (go generate ./internal/hostilegen writes the corpus)", err)
	}
	r.p.Finish()
	r.stats = stats
	return r
}

// plain checks that connection id holds the whole ordinary conversation
// hostilegen writes beside hostile ones: its unit types in order, without
// errors or warnings.
func (r *hostileRun) plain(t *testing.T, id int, types ...string) {
	t.Helper()
	us := r.units[id]
	var got []string
	for _, u := range us {
		got = append(got, u.Type)
		if u.Err() != "" || len(u.Warnings()) > 0 {
			t.Errorf("conn %d unit %d %s: error %q, warnings %q", id, u.N, u.Type, u.Err(), u.Warnings())
		}
	}
	if strings.Join(got, " ") != strings.Join(types, " ") {
		t.Errorf("conn %d: units %v,\nwant %v", id, got, types)
	}
}

var (
	amqp091PlainTypes = []string{"protocol-header", "connection.start", "connection.start-ok", "connection.tune", "connection.tune-ok",
		"connection.open", "connection.open-ok", "channel.open", "channel.open-ok",
		"basic.publish", "content-header", "content-body", "basic.publish", "content-header", "content-body",
		"connection.close", "connection.close-ok"}
	amqp10PlainTypes = []string{"protocol-header", "open", "begin", "attach", "protocol-header", "open", "begin", "attach",
		"transfer", "transfer", "detach", "end", "close", "detach", "end", "close"}
	pgPlainTypes = []string{"StartupMessage", "AuthenticationOk", "ReadyForQuery", "Query", "RowDescription", "DataRow", "CommandComplete", "ReadyForQuery", "Terminate"}
)

func warned(ws []string, sub string) int {
	n := 0
	for _, w := range ws {
		if strings.Contains(w, sub) {
			n++
		}
	}
	return n
}

func TestHostileHeadersTable(t *testing.T) {
	r := runHostile(t, "amqp091-headers-200k.pcapng.gz", func(u *decode.Unit) bool { return u.Type == "content-header" && u.Len > 1<<20 })
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 3, amqp091PlainTypes...)
	if len(r.json) != 1 {
		t.Fatalf("%d content headers over 1 MiB, want 1", len(r.json))
	}
	for u, line := range r.json {
		if u.Err() != "" {
			t.Errorf("the big header: %s", u.Err())
		}
		if len(line) > 4<<10 || !bytes.Contains(line, []byte(`"fields_elided":"unit of `)) {
			t.Errorf("the big header's JSON (%d bytes) does not elide its fields: %.300s", len(line), line)
		}
		// Rendered in full on request, every repeated key numbered.
		full := output.AppendJSON(nil, u, output.JSONOptions{MaxFieldBytes: -1, MaxFields: -1})
		if !bytes.Contains(full, []byte(`"k999#200":999`)) {
			t.Errorf("full rendering lacks the 200th k999")
		}
	}
	// The hostile connection goes on after the big header.
	us := r.units[2]
	if last := us[len(us)-1]; last.Type != "connection.close-ok" {
		t.Errorf("conn 2 ends with %s", last.Type)
	}
}

func TestHostileAMQP10Map(t *testing.T) {
	r := runHostile(t, "amqp10-map-1m.pcapng.gz", func(u *decode.Unit) bool { return u.Type == "transfer" && u.Len > 1<<20 })
	r.plain(t, 1, amqp10PlainTypes...)
	r.plain(t, 3, amqp10PlainTypes...)
	if len(r.json) != 1 {
		t.Fatalf("%d transfers over 1 MiB, want 1", len(r.json))
	}
	for _, line := range r.json {
		if len(line) > 4<<10 || !bytes.Contains(line, []byte(`"fields_elided"`)) {
			t.Errorf("the big transfer's JSON (%d bytes) does not elide its fields", len(line))
		}
	}
}

func TestHostileAMQP10Deep(t *testing.T) {
	r := runHostile(t, "amqp10-deep.pcapng", func(u *decode.Unit) bool { return u.Type == "transfer" && u.Conn.ID == 2 })
	r.plain(t, 1, amqp10PlainTypes...)
	r.plain(t, 3, amqp10PlainTypes...)
	if len(r.json) != 2 {
		t.Fatalf("%d transfers on conn 2, want 2 (the deep one and the one after)", len(r.json))
	}
	deep := 0
	for _, line := range r.json {
		if bytes.Contains(line, []byte("nested too deeply")) {
			deep++
			if bytes.Contains(line, []byte("null]")) {
				t.Errorf("the deepest value still renders as null")
			}
		}
	}
	if deep != 1 {
		t.Errorf("%d transfers say they are nested too deeply, want 1", deep)
	}
}

func TestHostileLateFlows(t *testing.T) {
	r := runHostile(t, "late-flows-60k.pcapng.gz", nil)
	cs := r.p.Conns()
	if len(cs) != 60002 {
		t.Fatalf("%d connections, want 60002", len(cs))
	}
	for i, c := range cs {
		if c.ID != i+1 {
			t.Fatalf("connection %d has ID %d: not in order", i, c.ID)
		}
	}
	if r.p.sorts > 1 {
		t.Errorf("%d sorts of the connections, want at most 1", r.p.sorts)
	}
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 60002, amqp091PlainTypes...)
	for _, id := range []int{2, 30000, 60001} {
		if us := r.units[id]; len(us) != 1 || us[0].Type != "protocol-header" {
			t.Errorf("conn %d: %d units", id, len(us))
		}
	}
}

func TestHostileFragments(t *testing.T) {
	r := runHostile(t, "ip-fragments-100k.pcapng.gz", nil)
	if n := warned(r.stats.Warnings, "incomplete IPv4 datagrams pending"); n != 1 {
		t.Errorf("%d warnings about fragments, want 1: %q", n, r.stats.Warnings)
	}
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 2, "protocol-header", "heartbeat") // fragmented, before the flood
	r.plain(t, 3, "protocol-header", "heartbeat") // fragmented, after it
	r.plain(t, 4, amqp091PlainTypes...)
}

func TestHostileInterfaces(t *testing.T) {
	r := runHostile(t, "pcapng-interfaces-1m.pcapng.gz", nil)
	if n := warned(r.stats.Warnings, "interfaces"); n != 1 || r.stats.Truncated {
		t.Errorf("warnings %q (truncated %v), want one about interfaces", r.stats.Warnings, r.stats.Truncated)
	}
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 2, amqp091PlainTypes...)
}

func TestHostileBogusBlockLength(t *testing.T) {
	r := runHostile(t, "pcapng-bogus-length.pcapng", nil)
	if len(r.stats.Warnings) != 1 || !strings.Contains(r.stats.Warnings[0], "bogus length") || strings.Contains(r.stats.Warnings[0], "cut short") {
		t.Errorf("warnings %q, want one saying the block length is bogus", r.stats.Warnings)
	}
	r.plain(t, 1, amqp091PlainTypes...)
}

func TestHostileDataRowCount(t *testing.T) {
	r := runHostile(t, "pgsql-datarow-count.pcapng", func(u *decode.Unit) bool { return u.Type == "DataRow" && u.Conn.ID == 2 })
	r.plain(t, 1, pgPlainTypes...)
	r.plain(t, 3, pgPlainTypes...)
	bad := 0
	for u, line := range r.json {
		if u.Err() != "" {
			bad++
			if !bytes.Contains(line, []byte(`"error":"pgsql: DataRow: `)) {
				t.Errorf("unit %d: JSON without the error: %s", u.N, line)
			}
			if text := output.AppendText(nil, u, t0); !bytes.Contains(text, []byte("[error: pgsql: DataRow")) {
				t.Errorf("unit %d: text without the error: %s", u.N, text)
			}
			if tr := pqtrace.AppendUnit(nil, u, pqtrace.Options{}); !bytes.Contains(tr, []byte("mismatched message length")) {
				t.Errorf("unit %d: pqtrace without the mismatch: %s", u.N, tr)
			}
			if strings.Contains(u.Summary, "65535") {
				t.Errorf("unit %d: summary %q", u.N, u.Summary)
			}
		}
	}
	if bad != 3 || len(r.json) != 4 {
		t.Errorf("%d of %d DataRows of conn 2 are errors, want 3 of 4", bad, len(r.json))
	}
}

// runBudget decodes a corpus file under a memory budget of limit bytes
// without rendering every unit (the tiny-message bomb has 12.6M): it keeps
// the units of the connections in keep and every warning unit, renders
// those, and checks the accountant after each unit.
func runBudget(t *testing.T, name string, limit int64, keep ...int) (*hostileRun, *decode.Budget) {
	t.Helper()
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(limit)
	r := &hostileRun{units: map[int][]*decode.Unit{}, json: map[*decode.Unit][]byte{}}
	var buf []byte
	n := 0
	r.p = New(Config{Options: opt, Sink: func(u *decode.Unit) {
		n++
		if u.Conn == nil {
			return
		}
		if u.Type == "warning" || slices.Contains(keep, u.Conn.ID) {
			buf = output.AppendJSON(buf[:0], u, output.JSONOptions{})
			if !json.Valid(buf) {
				t.Fatalf("unit %d: invalid JSON", u.N)
			}
			r.units[u.Conn.ID] = append(r.units[u.Conn.ID], u)
		}
	}})
	stats, err := capture.ReadFile(filepath.Join("../testdata/hostile", name), r.p, nil)
	if err != nil {
		t.Fatalf("%v (go generate ./internal/hostilegen writes the corpus)", err)
	}
	r.p.Finish()
	r.stats = stats
	b := r.p.Budget()
	t.Logf("%s: %d units; budget %d, high-water %d, evictions %d, refusals %d, left charged %d",
		name, n, b.Limit(), b.High(), b.Evictions(), b.Refusals(), b.Used())
	if b.High() > b.Limit() {
		t.Errorf("the accountant's high-water mark %d passed the budget %d", b.High(), b.Limit())
	}
	if b.Used() != 0 {
		t.Errorf("%d bytes still charged after every connection ended", b.Used())
	}
	return r, b
}

func warningUnits(us []*decode.Unit, sub string) int {
	n := 0
	for _, u := range us {
		if u.Type == "warning" && warned(u.Warnings(), sub) > 0 {
			n++
		}
	}
	return n
}

// TestHostileZstdTinyMessages: 12.6M inner messages are emitted as they
// are inflated, after their container, and never held: the accountant's
// charge for held inner units stays under what maxHeldKids allows.
func TestHostileZstdTinyMessages(t *testing.T) {
	var kids, beforeContainer int
	var container *decode.Unit
	opt := decode.DefaultOptions()
	opt.Budget = decode.NewBudget(decode.DefaultMaxMemory)
	p := New(Config{Options: opt, Sink: func(u *decode.Unit) {
		if u.Conn == nil || u.Conn.ID != 2 || u.Dir != decode.DirB {
			return
		}
		switch {
		case u.Type == "CompressedMessages":
			container = u
		case u.Parent != nil:
			if u.Parent != container || container == nil {
				beforeContainer++
			}
			kids++
		}
	}})
	if _, err := capture.ReadFile("../testdata/hostile/pgsql-zstd-tiny-60m.pcapng", p, nil); err != nil {
		t.Fatal(err)
	}
	p.Finish()
	const want = 60 << 20 / 5
	if kids != want || beforeContainer != 0 {
		t.Errorf("%d inner messages (%d not after their container), want %d", kids, beforeContainer, want)
	}
	if container == nil || !strings.Contains(container.Summary, "messages follow it") || warned(container.Warnings(), "not held") != 1 {
		t.Fatalf("container does not say its messages follow: %+v", container)
	}
	// What was ever held: the context and at most 4096 inner units.
	b := p.Budget()
	if max := int64(2<<20 + 4096*(256+5)); b.High() > max {
		t.Errorf("high-water %d, want at most %d (inner units held)", b.High(), max)
	}
	var report string
	for _, c := range p.Conns() {
		if c.ID == 2 {
			report = strings.Join(c.Notes, "; ")
		}
	}
	if !strings.Contains(report, "carrying 12582912 messages") {
		t.Errorf("compression report %q does not count the messages", report)
	}

	// The connections beside it decode in full.
	r, _ := runBudget(t, "pgsql-zstd-tiny-60m.pcapng", decode.DefaultMaxMemory, 1, 3)
	r.plain(t, 1, pgPlainTypes...)
	r.plain(t, 3, pgPlainTypes...)
}

// TestHostileZstdWindows: 20 connections each holding a 64 MiB zstd
// window; under the default budget the oldest contexts are dropped with a
// warning each, the rest decode in full, and the ordinary connections are
// untouched.
func TestHostileZstdWindows(t *testing.T) {
	r, b := runBudget(t, "pgsql-zstd-windows-20.pcapng", decode.DefaultMaxMemory, 1, 22, 2, 21)
	r.plain(t, 1, pgPlainTypes...)
	r.plain(t, 22, pgPlainTypes...)
	if b.Evictions() == 0 || b.High() < b.Limit()*3/4 {
		t.Errorf("evictions %d, high-water %d: the windows did not fill the budget", b.Evictions(), b.High())
	}
	// The first connection's context was the oldest: dropped, with a
	// warning unit saying why; its next container is then an error.
	if n := warningUnits(r.units[2], "zstd decompression context dropped: the memory budget (--max-memory 512MiB) was reached"); n != 1 {
		t.Errorf("conn 2: %d warning units about its context, want 1", n)
	}
	errs := 0
	for _, u := range r.units[2] {
		if u.Type == "CompressedMessages" && strings.Contains(u.Err(), "context was lost (dropped by the memory budget)") {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("conn 2: %d containers not decompressed for the lost context, want 1", errs)
	}
	// The last connection's context was never dropped: all its rows.
	rows := 0
	for _, u := range r.units[21] {
		if u.Type == "DataRow" && u.Parent != nil && u.Err() == "" {
			rows++
		}
		if u.Type == "warning" || u.Err() != "" {
			t.Errorf("conn 21: unit %d %s: %q %q", u.N, u.Type, u.Err(), u.Warnings())
		}
	}
	if want := 2 * (24 << 20 / (32 << 10)); rows != want {
		t.Errorf("conn 21: %d rows, want %d", rows, want)
	}
	// Under a budget whose share (50 MiB) is smaller than the window, every
	// context is refused, saying why.
	r, _ = runBudget(t, "pgsql-zstd-windows-20.pcapng", 200<<20, 1, 22, 2)
	r.plain(t, 1, pgPlainTypes...)
	r.plain(t, 22, pgPlainTypes...)
	refused := 0
	for _, u := range r.units[2] {
		if u.Type == "CompressedMessages" && strings.Contains(u.Err(), "zstd window of 64MiB exceeds the share of the memory budget") {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("conn 2: %d containers refused for their window, want 2", refused)
	}
}

// TestHostileAMQP10Partial: eight 24 MiB deliveries in progress on one
// connection: past the connection-wide cap (--max-message, as in AMQP
// 0-9-1) the later ones are not reassembled, with a warning each.
func TestHostileAMQP10Partial(t *testing.T) {
	r, b := runBudget(t, "amqp10-partial-8x24m.pcapng.gz", decode.DefaultMaxMemory, 1, 2, 3)
	r.plain(t, 1, amqp10PlainTypes...)
	r.plain(t, 3, amqp10PlainTypes...)
	// What stops them is the cap, or the connection's share of the budget
	// (128 MiB too) when the frame being buffered counts against it first.
	capped := 0
	for _, u := range r.units[2] {
		capped += warned(u.Warnings(), "deliveries in progress on this connection exceed 134217728 bytes in all")
	}
	evicted := warningUnits(r.units[2], "dropped from reassembly: this connection reached its share of the memory budget (128MiB of --max-memory 512MiB)")
	if capped+evicted != 3 {
		t.Errorf("%d deliveries stopped by the connection-wide cap and %d by the share, want 3 in all (5 of 24 MiB fit in 128 MiB)", capped, evicted)
	}
	if b.High() > b.Share() {
		t.Errorf("high-water %d past the connection's share %d", b.High(), b.Share())
	}
	// Under a budget whose share (16 MiB) is smaller than one delivery,
	// the oldest delivery is dropped each time the connection's share is
	// reached (a warning unit each), and the last one alone is refused.
	r, b = runBudget(t, "amqp10-partial-8x24m.pcapng.gz", 64<<20, 1, 2, 3)
	r.plain(t, 1, amqp10PlainTypes...)
	r.plain(t, 3, amqp10PlainTypes...)
	evicted = warningUnits(r.units[2], "dropped from reassembly: this connection reached its share of the memory budget (16MiB of --max-memory 64MiB)")
	refused := 0
	for _, u := range r.units[2] {
		refused += warned(u.Warnings(), "the memory budget (--max-memory) has no room for this delivery")
	}
	if evicted != 7 || refused != 1 || b.High() > 16<<20 {
		t.Errorf("%d deliveries evicted (want 7), %d refused (want 1), high-water %d", evicted, refused, b.High())
	}
}

// TestHostileTCPHoles: one connection sends 12 MiB of segments, each
// after a hole that never fills. Without a budget the per-connection bound of
// reassembly stops it; under one, its share does, first, with a warning
// unit on that connection (once) and every refusal counted, and the
// conversations around it (one while the segments are held) decode in
// full.
func TestHostileTCPHoles(t *testing.T) {
	const file = "tcp-holes-12m.pcapng.gz"
	r := runHostile(t, file, nil)
	if n := warned(r.stats.Warnings, "connection 2: out-of-order data beyond the reassembly budget"); n != 1 {
		t.Errorf("%d warnings about conn 2's reassembly bound, want 1: %q", n, r.stats.Warnings)
	}
	for _, id := range []int{1, 3, 4} {
		r.plain(t, id, amqp091PlainTypes...)
	}
	// Under the default budget the bound (4 MiB) comes first, and what
	// was held was charged.
	r, b := runBudget(t, file, decode.DefaultMaxMemory, 1, 3, 4)
	if b.High() < 3<<20 || r.stats.BudgetDrops != 0 {
		t.Errorf("high-water %d, %d budget drops: the held segments were not charged, or dropped", b.High(), r.stats.BudgetDrops)
	}
	// Under 4 MiB (2 MiB a connection) the share comes first.
	r, b = runBudget(t, file, 4<<20, 1, 2, 3, 4)
	for _, id := range []int{1, 3, 4} {
		r.plain(t, id, amqp091PlainTypes...)
	}
	if n := warningUnits(r.units[2], "capture: connection 2 from 10.5.0.1:41000: an out-of-order segment of 32768 bytes at sequence"); n != 1 {
		t.Errorf("conn 2: %d warning units about segments not held, want 1", n)
	}
	if n := warningUnits(r.units[2], "has no room for it; the bytes missing before it are reported lost"); n != 1 {
		t.Errorf("conn 2: the warning does not say what happens next")
	}
	// Once 2 MiB is held, each later segment is refused (the hole before
	// the oldest is then declared lost, and the oldest delivered): about
	// 320 times, said once.
	if r.stats.BudgetDrops < 300 || b.Refusals() < int(r.stats.BudgetDrops) || b.High() > b.Share() {
		t.Errorf("%d budget drops, %d refusals, high-water %d (share %d)", r.stats.BudgetDrops, b.Refusals(), b.High(), b.Share())
	}
}

// TestHostileTCPHoleFlows: 2,000 connections each hold 16 KiB after a
// hole (32 MiB in all). Under the default budget all are held, and
// charged; under 8 MiB the oldest queues are evicted as later ones come,
// each with a warning unit on its own connection, counted by the
// accountant as partial state, and the plain conversations (one amid
// the flood) decode in full.
func TestHostileTCPHoleFlows(t *testing.T) {
	const file = "tcp-holes-flows-2k.pcapng.gz"
	plain := []int{1, 1003, 2003}
	r, b := runBudget(t, file, decode.DefaultMaxMemory, plain...)
	for _, id := range plain {
		r.plain(t, id, amqp091PlainTypes...)
	}
	if b.High() < 2000*16<<10 || b.Evictions() != 0 || r.stats.BudgetDrops != 0 {
		t.Errorf("high-water %d, %d evictions: the queues were not all held and charged", b.High(), b.Evictions())
	}
	r, b = runBudget(t, file, 8<<20, plain...)
	for _, id := range plain {
		r.plain(t, id, amqp091PlainTypes...)
	}
	warnedConns := 0
	for id, us := range r.units {
		n := warningUnits(us, "bytes of out-of-order segments waiting for the bytes at sequence 5001 dropped: the memory budget (--max-memory 8MiB) was reached")
		if n > 1 || (n == 1 && slices.Contains(plain, id)) {
			t.Errorf("conn %d: %d warning units about its segments", id, n)
		}
		if n == 1 {
			warnedConns++
			if warningUnits(us, "the oldest partial state going first; the 16484 bytes up to sequence 21485 are reported lost") != 1 {
				t.Errorf("conn %d: the warning does not say why nor what is lost: %q", id, us[0].Warnings())
			}
		}
	}
	ev := b.EvictionsByKind()
	// About 8 MiB of 32 MiB stays held: three quarters are evicted.
	if warnedConns < 1400 || ev.Partials != warnedConns || int(r.stats.BudgetDrops) != warnedConns || ev.IdleWindows+ev.ActiveWindows != 0 {
		t.Errorf("%d connections warned, evictions %+v, %d budget drops", warnedConns, ev, r.stats.BudgetDrops)
	}
	// The oldest went first: the first hole connection was evicted, the
	// last one was not.
	if warningUnits(r.units[2], "dropped") != 1 || warningUnits(r.units[2002], "dropped") != 0 {
		t.Errorf("not the oldest first: conn 2 %d, conn 2002 %d warnings", warningUnits(r.units[2], "dropped"), warningUnits(r.units[2002], "dropped"))
	}
}

// TestHostileFragmentsBudget: under 2 MiB the pending fragments reach
// the capture's share before MaxPendingDatagrams: they are dropped, with
// one warning, and the fragmented segments before and after the flood
// are still reassembled.
func TestHostileFragmentsBudget(t *testing.T) {
	r, b := runBudget(t, "ip-fragments-100k.pcapng.gz", 2<<20, 1, 2, 3, 4)
	if n := warned(r.stats.Warnings, "incomplete IPv4 datagrams dropped at packet"); n != 1 || warned(r.stats.Warnings, "has no room for more") != 1 {
		t.Errorf("warnings %q, want one about the budget dropping fragments", r.stats.Warnings)
	}
	if warned(r.stats.Warnings, "incomplete IPv4 datagrams pending") != 0 {
		t.Errorf("MaxPendingDatagrams reached first: %q", r.stats.Warnings)
	}
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 2, "protocol-header", "heartbeat")
	r.plain(t, 3, "protocol-header", "heartbeat")
	r.plain(t, 4, amqp091PlainTypes...)
	// 100k fragments of about 2 KiB in 1 MiB: dropped about 200 times.
	if r.stats.BudgetDrops < 150 || b.High() < b.Share()*3/4 {
		t.Errorf("%d drops, high-water %d (share %d)", r.stats.BudgetDrops, b.High(), b.Share())
	}
}

// TestHostileInterfacesBudget: under 256 KiB (128 KiB for the capture)
// the pcapng interface table is refused before MaxInterfaces, with one
// warning; the conversations on interface 0 decode in full.
func TestHostileInterfacesBudget(t *testing.T) {
	r, b := runBudget(t, "pcapng-interfaces-1m.pcapng.gz", 256<<10, 1, 2)
	if n := warned(r.stats.Warnings, "pcapng interface table reached the memory budget (--max-memory 256KiB)"); n != 1 || len(r.stats.Warnings) != 1 {
		t.Errorf("warnings %q, want one about the interface table", r.stats.Warnings)
	}
	r.plain(t, 1, amqp091PlainTypes...)
	r.plain(t, 2, amqp091PlainTypes...)
	if b.High() > b.Share() || b.High() < 64<<10 {
		t.Errorf("high-water %d, share %d: the table was not charged, or passed it", b.High(), b.Share())
	}
}
