package pipeline

import (
	"bytes"
	"encoding/json"
	"path/filepath"
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
