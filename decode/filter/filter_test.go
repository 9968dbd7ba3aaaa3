package filter

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Tree field names the tests' units carry, registered as a protocol
// package would.
func init() {
	decode.RegisterFieldNames(
		decode.FieldName{Name: "amqp.method.arguments.routing_key", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.method.arguments.exchange", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.method.arguments.mandatory", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.header.properties.delivery_mode", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.header.properties.timestamp", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.header.properties.headers.key", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.body", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.header.body_size", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.header.weight", Proto: decode.ProtoAMQP091},
		decode.FieldName{Name: "amqp.doff", Proto: decode.ProtoAMQP10},
		decode.FieldName{Name: "pgsql.query", Proto: decode.ProtoPgSQL},
		decode.FieldName{Name: "pgsql.field.count", Proto: decode.ProtoPgSQL},
		decode.FieldName{Name: "pgsql.val.data", Proto: decode.ProtoPgSQL},
		decode.FieldName{Name: "amqp.method.arguments.arguments", Proto: decode.ProtoAMQP091, Open: true},
	)
}

// TestOpenTables: entries of a table whose keys come from the traffic are
// valid names under it, and only under it.
func TestOpenTables(t *testing.T) {
	for expr, ok := range map[string]bool{
		`amqp.method.arguments.arguments.x-max-length > 10`:               true,
		`amqp.method.arguments.arguments.x-dead-letter-exchange == "dlx"`: true,
		`amqp.method.arguments.arguments`:                                 true,
		`amqp.method.arguments.argumentsx`:                                false,
		`amqp.method.arguments.arguments.`:                                false,
		`amqp.method.arguments.nope`:                                      false,
	} {
		_, err := Compile(expr)
		if (err == nil) != ok {
			t.Errorf("Compile(%s) error %v, want ok=%v", expr, err, ok)
		}
	}
	args := &decode.Field{Name: "amqp.method.arguments.arguments", Kind: decode.KindMap}
	args.Add(leaf("amqp.method.arguments.arguments.x-max-length", int64(1000)))
	u := &decode.Unit{Conn: testConn, Proto: decode.ProtoUnknown, Type: "queue.declare",
		Dissect: func(*decode.Unit) []*decode.Field { return []*decode.Field{args} }}
	for expr, want := range map[string]bool{
		`amqp.method.arguments.arguments.x-max-length > 10`:   true,
		`amqp.method.arguments.arguments.x-max-length > 1000`: false,
		`amqp.method.arguments.arguments.x-other`:             false,
	} {
		f, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Match(u); got != want {
			t.Errorf("%s on the unit = %v, want %v", expr, got, want)
		}
	}
}

var testConn = &decode.Conn{
	ID:     3,
	Client: netip.MustParseAddrPort("10.1.2.3:51000"),
	Server: netip.MustParseAddrPort("10.9.9.9:5672"),
	Proto:  decode.ProtoAMQP091,
}

var pgConn = &decode.Conn{
	ID:     1,
	Client: netip.MustParseAddrPort("[::ffff:192.168.0.7]:40000"),
	Server: netip.MustParseAddrPort("[2001:db8::1]:5432"),
	Proto:  decode.ProtoPgSQL,
}

var t0 = time.Date(2024, 5, 6, 7, 8, 9, 500_000_000, time.UTC)

// tree returns a Dissect func that builds fs and counts its calls in n.
func tree(n *atomic.Int32, fs ...*decode.Field) func(*decode.Unit) []*decode.Field {
	return func(*decode.Unit) []*decode.Field {
		if n != nil {
			n.Add(1)
		}
		return fs
	}
}

func leaf(name string, v any) *decode.Field { return &decode.Field{Name: name, Key: name, Value: v} }

func publish(dissects *atomic.Int32) *decode.Unit {
	args := &decode.Field{Name: "amqp.method.arguments", Key: "arguments", Kind: decode.KindMap}
	args.Add(leaf("amqp.method.arguments.exchange", "ex.orders"))
	args.Add(leaf("amqp.method.arguments.routing_key", "orders.eu"))
	args.Add(leaf("amqp.method.arguments.mandatory", true))
	u := &decode.Unit{
		N: 7, Conn: testConn, Dir: decode.DirF, Proto: decode.ProtoAMQP091,
		Channel: 2, HasChannel: true, Type: "basic.publish",
		Summary: "basic.publish exchange=ex.orders routing-key=orders.eu",
		Offset:  1200, Len: 60, Raw: []byte("\x01\x00\x02publish-bytes"),
		Dissect: tree(dissects, args),
	}
	u.SetTime(t0)
	return u
}

func header(dissects *atomic.Int32) *decode.Unit {
	hdrs := &decode.Field{Name: "amqp.header.properties.headers", Kind: decode.KindMap}
	hdrs.Add(leaf("amqp.header.properties.headers.key", "a"))
	hdrs.Add(leaf("amqp.header.properties.headers.key", "b"))
	hdrs.Add(leaf("amqp.header.properties.headers.key", "c"))
	u := &decode.Unit{
		N: 8, Conn: testConn, Dir: decode.DirF, Proto: decode.ProtoAMQP091,
		Channel: 2, HasChannel: true, Type: "content-header", Summary: "content-header body-size=2048",
		Len: 80,
		Dissect: tree(dissects,
			leaf("amqp.header.body_size", uint64(2048)),
			leaf("amqp.header.weight", uint16(0)),
			&decode.Field{Name: "amqp.header.properties.delivery_mode", Value: uint8(2), Display: "persistent"},
			leaf("amqp.header.properties.timestamp", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
			hdrs,
		),
	}
	u.SetTime(t0.Add(time.Millisecond))
	return u
}

func body() *decode.Unit {
	return &decode.Unit{
		N: 9, Conn: testConn, Dir: decode.DirF, Proto: decode.ProtoAMQP091,
		Channel: 2, HasChannel: true, Type: "content-body", Len: 2056,
		Dissect: tree(nil, leaf("amqp.body", []byte("\xde\xad\xbe\xefHello, World"))),
	}
}

func transfer(status decode.ChecksumStatus) *decode.Unit {
	u := &decode.Unit{
		N: 20, Conn: &decode.Conn{ID: 5, Proto: decode.ProtoAMQP10}, Dir: decode.DirB, Proto: decode.ProtoAMQP10,
		Channel: 0, HasChannel: true, Type: "transfer", Len: 300,
	}
	u.SetMessageID("msg-42")
	u.SetChecksum(&decode.Checksum{Algorithm: "crc-32", Status: status, Expected: 1, Actual: 2})
	return u
}

func dataRow() *decode.Unit {
	u := &decode.Unit{
		N: 100, Conn: pgConn, Dir: decode.DirB, Proto: decode.ProtoPgSQL, Type: "DataRow",
		Summary: "DataRow 2 columns", Len: 25,
		Dissect: tree(nil,
			leaf("pgsql.field.count", int64(2)),
			leaf("pgsql.val.data", []byte("abc")),
			leaf("pgsql.val.data", []byte("xyz")),
		),
	}
	u.SetWarnings([]string{"column 1: invalid UTF-8", "trailing bytes"})
	return u
}

func query() *decode.Unit {
	return &decode.Unit{
		N: 99, Conn: pgConn, Dir: decode.DirF, Proto: decode.ProtoPgSQL, Type: "Query",
		Summary: `Query "SELECT 1"`, Len: 14,
		Dissect: tree(nil, leaf("pgsql.query", "SELECT 1")),
	}
}

func nested() *decode.Unit {
	parent := &decode.Unit{N: 50, Proto: decode.ProtoPgSQL, Type: "CompressedMessages", Conn: pgConn}
	u := &decode.Unit{N: 51, Parent: parent, Proto: decode.ProtoPgSQL, Type: "CommandComplete", Conn: pgConn,
		Dir: decode.DirB, Secret: true}
	u.SetErr("truncated message")
	return u
}

func TestCompileValid(t *testing.T) {
	for _, expr := range []string{
		`amqp.method == "basic.publish"`,
		`amqp.method eq basic.publish`,
		`amqp.channel == 2 && frame.len > 1000`,
		`amqp.channel==2&&frame.len>0x3e8`,
		`pgsql.type == "DataRow" || !amqp`,
		`not (amqp.checksum == "mismatch" or error) and conn in {1, 3..5}`,
		`conn in {1 2 3}`,
		`summary matches "(?i)publish"`,
		`summary ~ r"\d+"`,
		`summary contains "\x41\101\u00e9\U0001F600\"\\"`,
		`frame.len ge 10 and frame.len le 20 and frame.len lt 30 and frame.len gt 1 and frame.len ne 5`,
		`amqp.header.properties.headers.key === "a"`,
		`amqp.header.properties.headers.key !== "a"`,
		`all amqp.header.properties.headers.key in {"a" "b"}`,
		`any tcp.port > 50000`,
		`amqp.method.arguments`, // a container of registered names
		`frame.time > "2024-01-01T00:00:00Z"`,
		`frame.len == 'A'`,
		`ip.addr == 10.0.0.0/8`,
		`   `,
		`((((amqp))))`,
		`!!!amqp`,
	} {
		if _, err := Compile(expr); err != nil {
			t.Errorf("Compile(%q): %v", expr, err)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		pos  int // byte offset
		msg  string
	}{
		{`amqp.methd == "basic.publish"`, 0, `unknown field "amqp.methd"`},
		{`amqp.channel == 2 && pgsql.typ == "Query"`, 21, `unknown field "pgsql.typ"`},
		{`amqp.method = "x"`, 12, `use "=="`},
		{`amqp.method == "x`, 15, "unterminated string"},
		{`summary contains "\q"`, 18, `invalid escape "\q"`},
		{`summary contains "\x"`, 18, `invalid escape "\x"`},
		{`summary contains "\400"`, 18, "octal"},
		{`summary contains "\ud800"`, 18, "invalid escape"},
		{`(amqp && pgsql`, 0, `unclosed "("`},
		{`amqp && pgsql)`, 13, `unexpected ")"`},
		{`amqp pgsql`, 5, "expected a relation"},
		{`amqp.method "basic.publish"`, 12, `expected a relation (==, !=, <, >, contains, matches, in) or && || after amqp.method, found string "basic.publish"`},
		{`(amqp) pgsql`, 7, "after a complete expression"},
		{`amqp &&`, 7, "expected a field name, found end of filter"},
		{`== 2`, 0, "expected a field name"},
		{`42 == frame.len`, 0, "expected a field name"},
		{`frame.len >`, 11, "expected a value"},
		{`frame.len > and`, 12, "expected a value"},
		{`summary matches basic`, 16, "quoted regular expression"},
		{`summary matches "a(b"`, 16, "invalid regular expression: missing closing )"},
		{`conn in 1`, 8, `expected "{"`},
		{`conn in {}`, 9, "empty set"},
		{`conn in {1, 2`, 8, `unclosed "{"`},
		{`conn in {1..}`, 12, "expected a value"},
		{`()`, 1, `empty "()"`},
		{`amqp & pgsql`, 5, `"&&"`},
		{`amqp | pgsql`, 5, `"||"`},
		{`frame.len[0:2] == 1`, 9, `unexpected "["`},
		{`all amqp`, 8, "expected a comparison"},
		{`frame.len == 'ab'`, 13, "character constant"},
		{`frame.len == ''`, 13, "character constant"},
		{strings.Repeat("(", MaxDepth+1) + "amqp" + strings.Repeat(")", MaxDepth+1), MaxDepth, "nested too deeply"},
		{strings.Repeat("!", MaxDepth+1) + "amqp", MaxDepth, "nested too deeply"},
	} {
		_, err := Compile(tc.expr)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Compile(%q) = %v, want *Error", tc.expr, err)
			continue
		}
		if e.Pos != tc.pos || !strings.Contains(e.Msg+"; "+e.Hint, tc.msg) {
			t.Errorf("Compile(%q): pos %d msg %q hint %q, want pos %d and %q", tc.expr, e.Pos, e.Msg, e.Hint, tc.pos, tc.msg)
		}
		if e.Pos+e.Len > len(tc.expr) {
			t.Errorf("Compile(%q): range [%d,+%d) beyond the expression", tc.expr, e.Pos, e.Len)
		}
	}
}

func TestErrorText(t *testing.T) {
	_, err := Compile(`amqp.methd == "basic.publish"`)
	want := `filter: unknown field "amqp.methd" at column 1; did you mean amqp.method?`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	for expr, hint := range map[string]string{
		"AMQP.Method":                       "did you mean amqp.method?",
		"amqp.chanel":                       "did you mean amqp.channel?",
		"fraem.len":                         "did you mean frame.len?",
		"amqp.method.arguments.routing":     "did you mean amqp.method.arguments.routing_key?",
		"completely.unrelated.name.foo.bar": "",
		"amqp.foo":                          "", // not amqp.doff: two edits in a three-letter word
	} {
		_, err := Compile(expr)
		var e *Error
		if !errors.As(err, &e) || e.Hint != hint {
			t.Errorf("Compile(%q) = %v, want hint %q", expr, err, hint)
		}
	}
}

func TestMatch(t *testing.T) {
	pub, hdr, bod, dr, q, nst := publish(nil), header(nil), body(), dataRow(), query(), nested()
	ok, bad, absent := transfer(decode.ChecksumOK), transfer(decode.ChecksumMismatch), transfer(decode.ChecksumAbsent)
	for _, tc := range []struct {
		expr string
		u    *decode.Unit
		want bool
	}{
		// Virtual fields.
		{`amqp.method == "basic.publish"`, pub, true},
		{`amqp.method == basic.publish`, pub, true},
		{`amqp.method == "basic.Publish"`, pub, false}, // case-sensitive
		{`amqp.method`, hdr, false},                    // not a method frame
		{`amqp.type == "content-header"`, hdr, true},
		{`amqp.method`, ok, false},
		{`amqp.performative == "transfer"`, ok, true},
		{`amqp.type == "transfer"`, ok, true},
		{`amqp.performative`, pub, false},
		{`amqp.channel == 2`, pub, true},
		{`amqp.channel == 0x2`, pub, true},
		{`amqp.channel == "2"`, pub, true},
		{`amqp.channel == 3`, pub, false},
		{`amqp.channel`, q, false},
		{`amqp.checksum == "mismatch"`, bad, true},
		{`amqp.checksum == "mismatch"`, ok, false},
		{`amqp.checksum == ok`, ok, true},
		{`amqp.checksum == "absent"`, absent, true},
		{`amqp.checksum`, pub, false},
		{`amqp.checksum.algorithm == "crc-32"`, bad, true},
		{`amqp.message_id == "msg-42"`, ok, true},
		{`amqp.message_id`, pub, false},
		{`pgsql.type == "DataRow"`, dr, true},
		{`pgsql.type == "DataRow"`, pub, false},
		{`pgsql`, dr, true},
		{`pgsql`, pub, false},
		{`amqp`, ok, true},
		{`amqp contains "publish"`, pub, true},
		{`amqp contains 01:00:02`, pub, true},
		{`amqp contains 01:00:03`, pub, false},
		{`frame.len > 1000`, bod, true},
		{`frame.len > 1000`, pub, false},
		{`frame.len >= 60 && frame.len <= 60`, pub, true},
		{`frame.len == 60.0`, pub, true},
		{`frame.len < 60.5`, pub, true},
		{`frame.len in {1..59}`, pub, false},
		{`frame.len in {1..59, 60}`, pub, true},
		{`frame.len in {1 2 60}`, pub, true},
		{`frame.number == 7`, pub, true},
		{`frame.offset == 1200`, pub, true},
		{`frame.dir == "F"`, pub, true},
		{`frame.dir == B`, dr, true},
		{`frame.time == "2024-05-06T07:08:09.5Z"`, pub, true},
		{`frame.time > "2024-05-06 07:08:09"`, pub, true},
		{`frame.time < "2024-05-06"`, pub, false},
		{`frame.time > 1714979289`, pub, true},
		{`frame.time_epoch > 1714979289.4 && frame.time_epoch < 1714979289.6`, pub, true},
		{`frame.time`, bod, false},
		{`conn == 3`, pub, true},
		{`tcp.stream == 2`, pub, true},
		{`tcp.port == 5672`, pub, true},
		{`tcp.port == 51000`, pub, true},
		{`tcp.port == 1`, pub, false},
		{`tcp.srcport == 51000 && tcp.dstport == 5672`, pub, true},
		{`tcp.srcport == 5432`, dr, true},
		{`ip.addr == 10.9.9.9`, pub, true},
		{`ip.addr == 10.0.0.0/8`, pub, true},
		{`ip.addr == 192.168.0.0/16`, pub, false},
		{`ip.src == 192.168.0.7`, q, true}, // 4in6 unmapped
		{`ip.src == ::ffff:192.168.0.7`, q, true},
		{`ip.dst == 2001:db8::1`, q, true},
		{`ip.dst == 2001:db8::/32`, q, true},
		{`ip.addr != 10.9.9.9`, pub, false},    // all_ne: one occurrence equals
		{`ip.addr !== 10.9.9.9`, pub, true},    // any_ne
		{`ip.addr`, &decode.Unit{N: 1}, false}, // no connection
		{`conn || tcp.port || frame.time || type || summary`, &decode.Unit{N: 1}, false},
		{`frame.number == 1 && frame.len == 0 && proto == "unknown"`, &decode.Unit{N: 1}, true},
		{`proto == "amqp0-9-1"`, pub, true},
		{`proto == pgsql`, dr, true},
		{`type == "Query"`, q, true},
		{`summary contains "routing-key=orders"`, pub, true},
		{`summary matches "^basic\\.publish "`, pub, true},
		{`summary matches "PUBLISH"`, pub, false},
		{`summary matches "(?i)PUBLISH"`, pub, true},
		{`summary ~ r"body-size=\d{4}$"`, hdr, true},
		{`error`, nst, true},
		{`error`, pub, false},
		{`error contains "truncated"`, nst, true},
		{`warning`, dr, true},
		{`warning contains "trailing"`, dr, true}, // second occurrence
		{`warning == "trailing bytes"`, dr, true},
		{`warning != "trailing bytes"`, dr, false},
		{`warning != "nope"`, dr, true},
		{`warning != "nope"`, pub, false}, // absent: != needs the field
		{`!(warning == "nope")`, pub, true},
		{`all warning contains "i"`, dr, true},
		{`all warning contains "UTF"`, dr, false},
		{`warning matches "UTF-8$"`, dr, true},
		{`secret`, nst, true},
		{`secret == true`, nst, true},
		{`secret`, pub, false},
		{`parent == 50`, nst, true},
		{`parent`, pub, false},
		// Tree fields.
		{`amqp.method.arguments.routing_key == "orders.eu"`, pub, true},
		{`amqp.method.arguments.routing_key contains "eu"`, pub, true},
		{`amqp.method.arguments.routing_key matches "^orders\\."`, pub, true},
		{`amqp.method.arguments.routing_key > "orders"`, pub, true},
		{`amqp.method.arguments.routing_key < "orders"`, pub, false},
		{`amqp.method.arguments.routing_key`, hdr, false},
		{`amqp.method.arguments`, pub, true},
		{`amqp.method.arguments == "x"`, pub, false}, // container has no value
		{`amqp.method.arguments != "x"`, pub, true},
		{`amqp.method.arguments.mandatory == true`, pub, true},
		{`amqp.method.arguments.mandatory == 1`, pub, true},
		{`amqp.method.arguments.mandatory == TRUE`, pub, true},
		{`amqp.method.arguments.mandatory == false`, pub, false},
		{`amqp.method.arguments.mandatory == "true"`, pub, true},
		{`amqp.header.body_size == 2048`, hdr, true},
		{`amqp.header.body_size > -1`, hdr, true},
		{`amqp.header.body_size < 18446744073709551615`, hdr, true},
		{`amqp.header.body_size == 2048.0`, hdr, true},
		{`amqp.header.body_size contains "04"`, hdr, true}, // decimal text
		{`amqp.header.weight == 0`, hdr, true},
		{`amqp.header.properties.delivery_mode == 2`, hdr, true},
		{`amqp.header.properties.delivery_mode == "persistent"`, hdr, true},
		{`amqp.header.properties.timestamp == "2024-01-01T00:00:00Z"`, hdr, true},
		{`amqp.header.properties.timestamp < "2024-01-01T00:00:00.000000001Z"`, hdr, true},
		{`amqp.header.properties.timestamp == "2024-01-01T01:00:00+01:00"`, hdr, true},
		{`amqp.header.properties.headers.key == "b"`, hdr, true},
		{`amqp.header.properties.headers.key != "b"`, hdr, false},
		{`amqp.header.properties.headers.key != "z"`, hdr, true},
		{`amqp.header.properties.headers.key !== "b"`, hdr, true},
		{`amqp.header.properties.headers.key === "b"`, hdr, false},
		{`amqp.header.properties.headers.key in {"a" "b" "c"}`, hdr, true},
		{`all amqp.header.properties.headers.key in {"a" "b"}`, hdr, false},
		{`all amqp.header.properties.headers.key in {"a".."c"}`, hdr, true},
		{`any amqp.header.properties.headers.key != "a"`, hdr, true},
		{`all amqp.header.properties.headers.key != "a"`, hdr, false},
		{`amqp.body contains "World"`, bod, true},
		{`amqp.body contains de:ad:be:ef`, bod, true},
		{`amqp.body contains de:ad:00`, bod, false},
		{`amqp.body matches "Hello, [A-Z]"`, bod, true},
		{`amqp.body > de:ad`, bod, true},
		{`amqp.body == "\xde\xad\xbe\xefHello, World"`, bod, true},
		{`pgsql.val.data == "xyz"`, dr, true},
		{`pgsql.val.data == 78:79:7a`, dr, true},
		{`pgsql.field.count == 2 && pgsql.val.data contains "b"`, dr, true},
		{`pgsql.query matches "(?i)^select"`, q, true},
		{`pgsql.query`, dr, false},
		// Combinations.
		{`amqp.method == "basic.publish" && amqp.channel == 2`, pub, true},
		{`amqp.method == "basic.publish" and amqp.channel == 3`, pub, false},
		{`amqp.channel == 3 || frame.len == 60`, pub, true},
		{`amqp.channel == 3 or frame.len == 61`, pub, false},
		{`!amqp.method`, hdr, true},
		{`not amqp.method`, pub, false},
		{`!(frame.len > 100)`, pub, true},
		{`!!amqp`, pub, true},
		{`   `, pub, true},
	} {
		f, err := Compile(tc.expr)
		if err != nil {
			t.Errorf("Compile(%q): %v", tc.expr, err)
			continue
		}
		if got := f.Match(tc.u); got != tc.want {
			t.Errorf("%q on unit %d (%s): got %v, want %v", tc.expr, tc.u.N, tc.u.Type, got, tc.want)
		}
	}
}

// TestPrecedence checks not > and > or, all left to right, with units
// picked so that each wrong grouping gives a different answer.
func TestPrecedence(t *testing.T) {
	// A: frame.len == 60, B: amqp.channel == 2, C: pgsql.
	pub, dr := publish(nil), dataRow()
	for _, tc := range []struct {
		expr    string
		pub, dr bool
	}{
		// (A && B) || C, not A && (B || C).
		{`frame.len == 1 && amqp.channel == 2 || pgsql`, false, true},
		// A || (B && C), not (A || B) && C.
		{`frame.len == 60 || amqp.channel == 2 && pgsql`, true, false},
		// (!A) && B, not !(A && B).
		{`!frame.len == 60 && amqp.channel == 2`, false, false},
		{`!frame.len == 1 && amqp.channel == 2`, true, false},
		// (!A) || C.
		{`not amqp || pgsql`, false, true},
		{`not (amqp || pgsql)`, false, false},
		// Mixed spellings chain flat.
		{`amqp and frame.len == 60 && amqp.channel == 2 or pgsql || error`, true, true},
	} {
		f, err := Compile(tc.expr)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tc.expr, err)
		}
		if got := f.Match(pub); got != tc.pub {
			t.Errorf("%q on publish: got %v, want %v", tc.expr, got, tc.pub)
		}
		if got := f.Match(dr); got != tc.dr {
			t.Errorf("%q on DataRow: got %v, want %v", tc.expr, got, tc.dr)
		}
	}
}

func TestNilFilterAndUnit(t *testing.T) {
	var f *Filter
	if !f.Match(publish(nil)) || f.Dissects() || f.String() != "" {
		t.Error("nil filter must match everything")
	}
	g, err := Compile("amqp")
	if err != nil {
		t.Fatal(err)
	}
	if g.Match(nil) {
		t.Error("a nil unit matched")
	}
	if g.String() != "amqp" {
		t.Errorf("String() = %q", g.String())
	}
}

func TestDissectOnce(t *testing.T) {
	for _, tc := range []struct {
		expr     string
		dissects bool
		calls    int32
	}{
		{`amqp.method == "basic.publish" && frame.len > 10 && amqp.channel == 2`, false, 0},
		{`amqp.method.arguments.routing_key == "orders.eu" && amqp.method.arguments.exchange contains "ex" && amqp.method.arguments.mandatory`, true, 1},
		{`amqp.method.arguments.routing_key == "x" || amqp.method.arguments.exchange == "y" || !amqp.method.arguments.mandatory`, true, 1},
		// Short-circuited before the tree is needed.
		{`frame.len > 1000 && amqp.method.arguments.routing_key == "orders.eu"`, true, 0},
		{`amqp || amqp.method.arguments.routing_key == "orders.eu"`, true, 0},
	} {
		f, err := Compile(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		if f.Dissects() != tc.dissects {
			t.Errorf("%q: Dissects() = %v", tc.expr, f.Dissects())
		}
		var n atomic.Int32
		f.Match(publish(&n))
		if n.Load() != tc.calls {
			t.Errorf("%q: Dissect called %d times, want %d", tc.expr, n.Load(), tc.calls)
		}
	}
}

func TestMatchAllocs(t *testing.T) {
	units := []*decode.Unit{publish(nil), transfer(decode.ChecksumMismatch), dataRow(), nested()}
	for _, expr := range []string{
		`amqp.method == "basic.publish" && amqp.channel == 2`,
		`amqp.checksum == "mismatch" || pgsql.type in {"DataRow" "Query"}`,
		`frame.len > 1000 || frame.time > "2024-01-01" || !(conn in {1..3})`,
		`summary matches "(?i)publish" || warning contains "UTF"`,
		`ip.addr == 10.0.0.0/8 || tcp.port == 5432 || amqp contains 01:00`,
	} {
		f, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range units {
			if n := testing.AllocsPerRun(100, func() { f.Match(u) }); n != 0 {
				t.Errorf("%q on %s: %v allocations per Match", expr, u.Type, n)
			}
		}
	}
	// A tree-field filter allocates nothing of its own either; the
	// dissector here returns a prebuilt tree.
	f, err := Compile(`amqp.method.arguments.routing_key matches "eu$" && amqp.method.arguments.mandatory == true`)
	if err != nil {
		t.Fatal(err)
	}
	u := publish(nil)
	if n := testing.AllocsPerRun(100, func() { f.Match(u) }); n != 0 {
		t.Errorf("tree filter: %v allocations per Match", n)
	}
}

func TestMatchConcurrent(t *testing.T) {
	f, err := Compile(`(amqp.method.arguments.routing_key matches "eu$" && amqp.channel == 2) || pgsql.val.data contains "yz"`)
	if err != nil {
		t.Fatal(err)
	}
	units := []*decode.Unit{publish(nil), header(nil), dataRow(), query()}
	want := []bool{true, false, true, false}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if f.Match(units[i%len(units)]) != want[i%len(units)] {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d wrong answers under concurrency", bad.Load())
	}
}

func TestVirtualFieldsRegistered(t *testing.T) {
	have := map[string]bool{}
	for _, n := range decode.FieldNames() {
		have[n.Name] = true
	}
	for _, v := range virtualFields {
		if !have[v.name] {
			t.Errorf("virtual field %s not registered", v.name)
		}
		if _, err := Compile(v.name); err != nil {
			t.Errorf("Compile(%q): %v", v.name, err)
		}
	}
}

func TestLongChain(t *testing.T) {
	expr := "frame.len == 1" + strings.Repeat(" || frame.len == 1", 10000) + " || frame.len == 60"
	f, err := Compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(publish(nil)) {
		t.Error("long chain did not match")
	}
}

// TestFastPathAgrees checks the fast tests (fastFor) against the general
// evaluation on units of every protocol, with and without connection,
// channel and type.
func TestFastPathAgrees(t *testing.T) {
	var units []*decode.Unit
	types := []string{"", "basic.publish", "content-header", "transfer", "DataRow", "heartbeat", "flow"}
	protos := []decode.Proto{decode.ProtoUnknown, decode.ProtoAMQP091, decode.ProtoAMQP10, decode.ProtoPgSQL}
	for i := 0; i < 600; i++ {
		u := &decode.Unit{N: i + 1, Len: i * 7 % 1500, Offset: int64(i * 13), Type: types[i%len(types)],
			Proto: protos[i/7%len(protos)], Channel: uint16(i % 4), HasChannel: i%3 != 0, Dir: decode.Dir(i % 2)}
		if i%5 != 0 {
			u.Conn = testConn
		}
		units = append(units, u)
	}
	var slow func(n *node)
	slow = func(n *node) {
		n.fast = fastNone
		for _, k := range n.kids {
			slow(k)
		}
	}
	exprs := []string{
		`frame.len > 700`, `frame.len <= 7`, `frame.len == 14`, `frame.len != 14`, `frame.len >= -1`,
		`frame.number < 100`, `frame.offset == 26`, `conn == 3`, `conn != 3`, `tcp.stream == 2`,
		`amqp.channel == 2`, `amqp.channel != 2`, `amqp.channel < 1`,
		`type == "transfer"`, `type != "transfer"`, `type == ""`, `amqp.method == "basic.publish"`,
		`amqp.method != "basic.publish"`, `amqp.performative == "flow"`, `amqp.type == "heartbeat"`,
		`pgsql.type == "DataRow"`, `proto == "pgsql"`, `frame.dir == "B"`, `frame.dir != "F"`,
		`amqp.channel == 2 && !(amqp.method == "basic.publish") || frame.len > 1400`,
		`all amqp.channel == 1`, `any conn == 3`,
	}
	fast := 0
	for _, expr := range exprs {
		f, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		var count func(n *node)
		count = func(n *node) {
			if n.fast != fastNone {
				fast++
			}
			for _, k := range n.kids {
				count(k)
			}
		}
		count(f.root)
		g, _ := Compile(expr)
		slow(g.root)
		for _, u := range units {
			if a, b := f.Match(u), g.Match(u); a != b {
				t.Fatalf("%s on unit %+v: fast %v, general %v", expr, *u, a, b)
			}
		}
	}
	if fast < len(exprs) {
		t.Errorf("only %d fast tests in %d expressions", fast, len(exprs))
	}
}
