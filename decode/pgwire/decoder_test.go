package pgwire_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
)

// feed describes one Feed or Gap call.
type feed struct {
	dir decode.Dir
	b   []byte
	gap int // when b is nil: a gap of this many bytes
}

func run(t *testing.T, opt *decode.Options, feeds ...feed) ([]*decode.Unit, *decode.Conn) {
	t.Helper()
	if opt == nil {
		opt = decode.DefaultOptions()
	}
	conn := &decode.Conn{ID: 1, Proto: decode.ProtoPgSQL}
	var units []*decode.Unit
	d := pgwire.New(conn, opt, func(u *decode.Unit) { u.N = len(units) + 1; units = append(units, u) })
	now := time.Unix(1700000000, 0)
	for _, f := range feeds {
		if f.b == nil {
			d.Gap(f.dir, f.gap, now)
			continue
		}
		d.Feed(f.dir, f.b, now)
	}
	d.End(decode.DirF, now)
	d.End(decode.DirB, now)
	return units, conn
}

func types(units []*decode.Unit) string {
	var s []string
	for _, u := range units {
		s = append(s, u.Dir.String()+":"+u.Type)
	}
	return strings.Join(s, " ")
}

func startup(params ...string) []byte {
	m := pgwire.StartupMessage{ProtocolVersion: 196608}
	for i := 0; i+1 < len(params); i += 2 {
		m.Params = append(m.Params, pgwire.Param{Name: []byte(params[i]), Value: []byte(params[i+1])})
	}
	return m.Encode(nil)
}

func sslRequest(code uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{0, 0, 0, 8}, code)
}

func field(fs []*decode.Field, name string) *decode.Field { return decode.Find(fs, name) }

func TestStartupAndCleartextPassword(t *testing.T) {
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: sslRequest(80877103)},
		feed{dir: decode.DirB, b: []byte("N")},
		feed{dir: decode.DirF, b: startup("user", "alice", "database", "db")},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthCleartextPassword}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'p', []byte("hunter2\x00"))},
		feed{dir: decode.DirB, b: append((&pgwire.Authentication{Code: 0}).Encode(nil), (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil)...)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'Q', []byte("SELECT 1\x00"))},
	)
	want := "F:SSLRequest B:SSLResponse F:StartupMessage B:AuthenticationCleartextPassword F:PasswordMessage B:AuthenticationOk B:ReadyForQuery F:Query"
	if got := types(units); got != want {
		t.Fatalf("types:\n got %s\nwant %s", got, want)
	}
	pw := units[4]
	if !pw.Secret || bytes.Contains(pw.Raw, []byte("hunter2")) || !bytes.Equal(pw.Raw[5:12], []byte("*******")) {
		t.Errorf("password not redacted in Raw: %q secret=%v", pw.Raw, pw.Secret)
	}
	if f := field(pw.Fields(), "pgsql.password"); f == nil || f.Text() != decode.Redacted {
		t.Errorf("password field: %+v", f)
	}
	st := units[2].Fields()
	if f := field(st, "pgsql.parameter_value"); f == nil || f.Value != "alice" {
		t.Errorf("startup parameter: %+v", f)
	}
	if f := field(units[7].Fields(), "pgsql.query"); f == nil || f.Value != "SELECT 1" || units[7].Raw[f.Offset] != 'S' || f.Length != 9 {
		t.Errorf("query field: %+v", f)
	}
	if f := field(units[7].Fields(), "pgsql.type"); f == nil || f.Value != "Query" {
		t.Errorf("pgsql.type: %+v", f)
	}
}

func TestShowSecrets(t *testing.T) {
	opt := decode.DefaultOptions()
	opt.ShowSecrets = true
	units, _ := run(t, opt,
		feed{dir: decode.DirF, b: startup("user", "alice")},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthMD5Password, Data: []byte{1, 2, 3, 4}}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'p', []byte("md5abcdef\x00"))},
	)
	pw := units[2]
	if !pw.Secret || !bytes.Contains(pw.Raw, []byte("md5abcdef")) {
		t.Errorf("with ShowSecrets the hash must stay: %q", pw.Raw)
	}
	if f := field(pw.Fields(), "pgsql.password"); f == nil || f.Value != "md5abcdef" {
		t.Errorf("password field: %+v", f)
	}
	if f := field(units[1].Fields(), "pgsql.salt"); f == nil || !bytes.Equal(f.Value.([]byte), []byte{1, 2, 3, 4}) {
		t.Errorf("salt: %+v", f)
	}
}

func TestSCRAMRedacted(t *testing.T) {
	var init []byte
	init = append(init, "SCRAM-SHA-256\x00"...)
	first := "n,,n=,r=clientnonce"
	init = binary.BigEndian.AppendUint32(init, uint32(len(first)))
	init = append(init, first...)
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: startup("user", "bob")},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthSASL, Data: []byte("SCRAM-SHA-256\x00\x00")}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'p', init)},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthSASLContinue, Data: []byte("r=clientnonceserver,s=c2FsdA==,i=4096")}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'p', []byte("c=biws,r=clientnonceserver,p=proofproof"))},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthSASLFinal, Data: []byte("v=signature")}).Encode(nil)},
	)
	want := "F:StartupMessage B:AuthenticationSASL F:SASLInitialResponse B:AuthenticationSASLContinue F:SASLResponse B:AuthenticationSASLFinal"
	if got := types(units); got != want {
		t.Fatalf("got %s", got)
	}
	for _, i := range []int{2, 3, 4, 5} {
		u := units[i]
		if !u.Secret || bytes.Contains(u.Raw, []byte("nonce")) || bytes.Contains(u.Raw, []byte("signature")) {
			t.Errorf("%s not redacted: %q", u.Type, u.Raw)
		}
		if f := field(u.Fields(), "pgsql.auth.sasl.data"); f == nil || f.Text() != decode.Redacted {
			t.Errorf("%s data field: %+v", u.Type, f)
		}
	}
	if f := field(units[2].Fields(), "pgsql.auth.sasl.mech"); f == nil || f.Value != "SCRAM-SHA-256" {
		t.Errorf("mechanism: %+v", f)
	}
}

func TestTLS(t *testing.T) {
	hello := append([]byte{0x16, 0x03, 0x01, 0x00, 0x20}, make([]byte, 32)...)
	units, conn := run(t, nil,
		feed{dir: decode.DirF, b: sslRequest(80877103)},
		feed{dir: decode.DirB, b: []byte("S")},
		feed{dir: decode.DirF, b: hello},
		feed{dir: decode.DirB, b: make([]byte, 100)},
		feed{dir: decode.DirF, b: make([]byte, 63)},
	)
	if got := types(units); got != "F:SSLRequest B:SSLResponse F:TLS B:TLS" {
		t.Fatalf("got %s", got)
	}
	if units[2].Len != len(hello)+63 || !strings.Contains(units[2].Summary, "100 bytes") {
		t.Errorf("F TLS unit: len %d summary %q", units[2].Len, units[2].Summary)
	}
	if units[3].Len != 100 || !strings.Contains(units[3].Summary, "100 bytes") {
		t.Errorf("B TLS unit: len %d summary %q", units[3].Len, units[3].Summary)
	}
	if len(conn.Notes) == 0 {
		t.Error("no note about TLS")
	}
}

func TestGSSENCRefusedThenCancel(t *testing.T) {
	cancel := (&pgwire.CancelRequest{ProcessID: 77, SecretKey: bytes.Repeat([]byte{9}, 32)}).Encode(nil)
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: sslRequest(80877104)},
		feed{dir: decode.DirB, b: []byte("N")},
		feed{dir: decode.DirF, b: cancel},
	)
	if got := types(units); got != "F:GSSENCRequest B:GSSENCResponse F:CancelRequest" {
		t.Fatalf("got %s", got)
	}
	fs := units[2].Fields()
	if f := field(fs, "pgsql.pid"); f == nil || f.Value != uint64(77) {
		t.Errorf("pid: %+v", f)
	}
	if f := field(fs, "pgsql.key"); f == nil || len(f.Value.([]byte)) != 32 {
		t.Errorf("3.2 key: %+v", f)
	}
}

func TestErrorFieldsNamed(t *testing.T) {
	var e pgwire.ErrorResponse
	codes := "SVCMDHPpqWstcdnFLR"
	for _, c := range []byte(codes) {
		e.Fields = append(e.Fields, pgwire.ErrorField{Code: c, Value: []byte("v" + string(c))})
	}
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: startup("user", "u")},
		feed{dir: decode.DirB, b: e.Encode(nil, 'E')},
	)
	fs := units[1].Fields()
	for _, c := range []byte(codes) {
		name := pgwire.ErrorFieldName(c)
		if name == "" {
			t.Errorf("field code %c has no name", c)
			continue
		}
		found := false
		for _, f := range fs {
			if f.Key == name && f.Value == "v"+string(c) && f.Name != "" && units[1].Raw[f.Offset] == c {
				found = true
			}
		}
		if !found {
			t.Errorf("field %c (%s) missing or misplaced", c, name)
		}
	}
}

func TestReplication(t *testing.T) {
	xlog := []byte{'w'}
	xlog = binary.BigEndian.AppendUint64(xlog, 0x16B374D848)
	xlog = binary.BigEndian.AppendUint64(xlog, 0x16B374D900)
	xlog = binary.BigEndian.AppendUint64(xlog, 1000000)
	xlog = append(xlog, "WALDATA"...)
	ka := []byte{'k'}
	ka = binary.BigEndian.AppendUint64(ka, 0x16B374D900)
	ka = binary.BigEndian.AppendUint64(ka, 2000000)
	ka = append(ka, 1)
	st := []byte{'r'}
	for i := 0; i < 4; i++ {
		st = binary.BigEndian.AppendUint64(st, uint64(0x16B374D900))
	}
	st = append(st, 0)
	hs := []byte{'h'}
	hs = binary.BigEndian.AppendUint64(hs, 3000000)
	hs = append(hs, make([]byte, 16)...)
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: startup("user", "rep", "replication", "true")},
		feed{dir: decode.DirB, b: (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'Q', []byte("START_REPLICATION 16/B3000000\x00"))},
		feed{dir: decode.DirB, b: pgwire.AppendMessage(nil, 'W', []byte{0, 0, 0})},
		feed{dir: decode.DirB, b: pgwire.AppendMessage(pgwire.AppendMessage(nil, 'd', xlog), 'd', ka)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(pgwire.AppendMessage(nil, 'd', st), 'd', hs)},
	)
	var sums []string
	for _, u := range units[4:] {
		sums = append(sums, u.Summary)
	}
	want := "CopyData: XLogData|CopyData: PrimaryKeepalive|CopyData: StandbyStatusUpdate|CopyData: HotStandbyFeedback"
	if got := strings.Join(sums, "|"); got != want {
		t.Fatalf("got %s", got)
	}
	fs := units[4].Fields()
	if f := field(fs, "pgsql.replication.wal_start"); f == nil || f.Text() != "16/B374D848" {
		t.Errorf("wal_start: %+v", f)
	}
	if f := field(units[5].Fields(), "pgsql.replication.reply_requested"); f == nil || f.Value != true {
		t.Errorf("reply requested: %+v", f)
	}
	if f := field(units[6].Fields(), "pgsql.replication.flush_lsn"); f == nil {
		t.Error("standby status: no flush_lsn")
	}
}

// TestGapResync loses bytes in the middle of a DataRow: the decoder skips
// to the next plausible message boundary and says so.
func TestGapResync(t *testing.T) {
	var b []byte
	for i := 0; i < 5; i++ {
		b = (&pgwire.DataRow{Values: [][]byte{[]byte("row"), bytes.Repeat([]byte{'x'}, 40)}}).Encode(b)
	}
	b = pgwire.AppendMessage(b, 'C', []byte("SELECT 5\x00"))
	b = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: startup("user", "u")},
		feed{dir: decode.DirB, b: b[:70]},
		feed{dir: decode.DirB, gap: 30},
		feed{dir: decode.DirB, b: b[100:]},
	)
	got := types(units)
	if !strings.HasPrefix(got, "F:StartupMessage B:DataRow B:DataRow") || !strings.HasSuffix(got, "B:CommandComplete B:ReadyForQuery") {
		t.Fatalf("got %s", got)
	}
	warned := false
	for _, u := range units {
		if u.Err() != "" {
			t.Errorf("unit %s: %s", u.Type, u.Err())
		}
		for _, w := range u.Warnings() {
			if strings.Contains(w, "resynchronised") {
				warned = true
			}
		}
	}
	if !warned {
		t.Error("no resynchronisation warning")
	}
}

// TestAbsurdLength: a header claiming 2 GiB is reported without
// allocating it, and decoding resumes at the next message.
func TestAbsurdLength(t *testing.T) {
	var b []byte
	b = append(b, 'D', 0x7f, 0xff, 0xff, 0xf0, 0, 1)
	b = pgwire.AppendMessage(b, 'C', []byte("SELECT 1\x00"))
	b = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	opt := decode.DefaultOptions()
	opt.MaxFrame = 1 << 20
	units, _ := run(t, opt, feed{dir: decode.DirF, b: startup("user", "u")}, feed{dir: decode.DirB, b: b})
	if got := types(units); got != "F:StartupMessage B:DataRow B:CommandComplete B:ReadyForQuery" {
		t.Fatalf("got %s", got)
	}
	if !strings.Contains(units[1].Err(), "length") {
		t.Errorf("error: %q", units[1].Err())
	}
	allocs := testing.AllocsPerRun(10, func() {
		d := pgwire.New(&decode.Conn{}, opt, func(*decode.Unit) {})
		d.Feed(decode.DirB, b[:7], time.Time{})
	})
	if allocs > 40 {
		t.Errorf("%v allocations for an absurd header", allocs)
	}
}

// TestOversized: a message larger than the buffering limit is kept in
// part and skipped, and what follows is decoded.
func TestOversized(t *testing.T) {
	big := (&pgwire.DataRow{Values: [][]byte{make([]byte, 300000)}}).Encode(nil)
	b := append(big, (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil)...)
	opt := decode.DefaultOptions()
	opt.MaxBuffered = 100000
	var feeds []feed
	feeds = append(feeds, feed{dir: decode.DirF, b: startup("user", "u")})
	for len(b) > 0 {
		n := min(1460, len(b))
		feeds = append(feeds, feed{dir: decode.DirB, b: b[:n]})
		b = b[n:]
	}
	units, _ := run(t, opt, feeds...)
	if got := types(units); got != "F:StartupMessage B:DataRow B:ReadyForQuery" {
		t.Fatalf("got %s", got)
	}
	if units[1].Len != len(big) || len(units[1].Raw) > 100000 || len(units[1].Warnings()) == 0 {
		t.Errorf("oversized unit: len %d raw %d warnings %q", units[1].Len, len(units[1].Raw), units[1].Warnings())
	}
	if units[2].Offset != int64(len(big)) {
		t.Errorf("offset after skip: %d, want %d", units[2].Offset, len(big))
	}
}

// TestMidStream: a capture that starts in the middle of a connection.
func TestMidStream(t *testing.T) {
	q := pgwire.AppendMessage(nil, 'Q', []byte("SELECT 1\x00"))
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: append([]byte("LECT 1\x00"), q...)},
		feed{dir: decode.DirB, b: (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(nil)},
	)
	if got := types(units); got != "F:Query B:ReadyForQuery" {
		t.Fatalf("got %s", got)
	}
}

// TestTruncatedAtEnd: a message cut by the end of the stream is reported.
func TestTruncatedAtEnd(t *testing.T) {
	q := pgwire.AppendMessage(nil, 'Q', []byte("SELECT 1\x00"))
	units, _ := run(t, nil, feed{dir: decode.DirF, b: startup("user", "u")}, feed{dir: decode.DirF, b: q[:7]})
	if len(units) != 2 || units[1].Err() == "" || units[1].Type != "Query" {
		t.Fatalf("got %s %+v", types(units), units[len(units)-1])
	}
}

// TestFieldNamesRegistered: every filterable name a dissector produces is
// registered for completion and help.
func TestFieldNamesRegistered(t *testing.T) {
	known := map[string]bool{}
	for _, f := range decode.FieldNames() {
		known[f.Name] = true
	}
	msgs := backendSession(9, 30)
	units, _ := decodeChunks([]chunk{{decode.DirF, startup("user", "u")}, {decode.DirB, concat(msgs)}}, nil)
	seen := 0
	for _, u := range units {
		decode.Walk(u.Fields(), func(f *decode.Field) bool {
			if f.Name != "" {
				seen++
				if !known[f.Name] {
					t.Errorf("%s: field %s is not registered", u.Type, f.Name)
				}
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no named fields")
	}
}

// TestGarbageThenMessages: undecodable bytes are reported once and the
// first message after them says how much was skipped.
func TestGarbageThenMessages(t *testing.T) {
	var b []byte
	b = append(b, '!', 0, 0, 0, 9, 'g', 'a', 'r', 'b', 'a', 'g', 'e')
	b = pgwire.AppendMessage(b, 'C', []byte("SELECT 1\x00"))
	b = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	units, _ := run(t, nil, feed{dir: decode.DirF, b: startup("user", "u")}, feed{dir: decode.DirB, b: b})
	if got := types(units); got != "F:StartupMessage B:Unknown(0x21) B:CommandComplete B:ReadyForQuery" {
		t.Fatalf("got %s", got)
	}
	if units[1].Err() == "" || len(units[2].Warnings()) != 1 || !strings.Contains(units[2].Warnings()[0], "skipped 7 bytes") {
		t.Errorf("error %q, warnings %q", units[1].Err(), units[2].Warnings())
	}
	if len(units[3].Warnings()) != 0 {
		t.Errorf("warning repeated: %q", units[3].Warnings())
	}
}

// TestProtocol32Keys: protocol 3.2's BackendKeyData carries a longer key.
func TestProtocol32Keys(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, 32)
	m := pgwire.StartupMessage{ProtocolVersion: 3<<16 | 2, Params: []pgwire.Param{{Name: []byte("user"), Value: []byte("u")}}}
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: m.Encode(nil)},
		feed{dir: decode.DirB, b: (&pgwire.BackendKeyData{ProcessID: 99, SecretKey: key}).Encode(nil)},
	)
	if got := types(units); got != "F:StartupMessage B:BackendKeyData" {
		t.Fatalf("got %s", got)
	}
	if !strings.Contains(units[0].Summary, "3.2") {
		t.Errorf("summary %q", units[0].Summary)
	}
	fs := units[1].Fields()
	if f := field(fs, "pgsql.key"); f == nil || !bytes.Equal(f.Value.([]byte), key) || f.Offset != 9 || f.Length != 32 {
		t.Errorf("key field %+v", f)
	}
	if f := field(units[0].Fields(), "pgsql.version_minor"); f == nil || f.Value != int64(2) {
		t.Errorf("minor version %+v", f)
	}
}
