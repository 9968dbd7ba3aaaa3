package pgwire_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/pgwire"
	"github.com/wiretap-dev/wiretap/internal/findcheck"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// extendedSession is a frontend startup and an extended-query round trip,
// and the backend's answer with a notice and an error.
func extendedSession() []feed {
	var f, b []byte
	f = pgwire.AppendMessage(f, 'Q', []byte("SELECT 1\x00"))
	f = pgwire.AppendMessage(f, 'P', []byte("s1\x00SELECT $1::int\x00\x00\x01\x00\x00\x00\x17"))
	f = (&pgwire.Bind{Portal: []byte("p1"), Statement: []byte("s1"), ParamFormats: []int16{0}, Params: [][]byte{[]byte("7")}}).Encode(f)
	f = pgwire.AppendMessage(f, 'D', []byte("Pp1\x00"))
	f = pgwire.AppendMessage(f, 'C', []byte("Ss1\x00"))
	f = pgwire.AppendMessage(f, 'E', []byte("p1\x00\x00\x00\x00\x05"))
	f = pgwire.AppendMessage(f, 'S', nil)

	b = pgwire.AppendMessage(b, 'S', []byte("TimeZone\x00UTC\x00"))
	b = (&pgwire.ReadyForQuery{TxStatus: 'I'}).Encode(b)
	b = (&pgwire.RowDescription{Fields: []pgwire.FieldDescription{{Name: []byte("x"), TypeOID: 23, TypeSize: 4, TypeModifier: -1}}}).Encode(b)
	b = (&pgwire.DataRow{Values: [][]byte{[]byte("1")}}).Encode(b)
	b = pgwire.AppendMessage(b, 'C', []byte("SELECT 1\x00"))
	b = (&pgwire.ErrorResponse{Fields: []pgwire.ErrorField{{Code: 'S', Value: []byte("NOTICE")}, {Code: 'M', Value: []byte("first")}, {Code: 'M', Value: []byte("second")}}}).Encode(b, 'N')
	b = (&pgwire.ErrorResponse{Fields: []pgwire.ErrorField{{Code: 'S', Value: []byte("ERROR")}, {Code: 'C', Value: []byte("42P01")}, {Code: 'M', Value: []byte("relation \"t\" does not exist")}}}).Encode(b, 'E')
	b = (&pgwire.ReadyForQuery{TxStatus: 'E'}).Encode(b)
	return []feed{{dir: decode.DirF, b: startup("user", "u", "database", "d")}, {dir: decode.DirF, b: f}, {dir: decode.DirB, b: b}}
}

// TestFinderAnswers proves that the finder answers by itself where it
// should (so that agreement with the trees is not vacuous), agrees with
// the trees, and allocates at most the boxed value.
func TestFinderAnswers(t *testing.T) {
	units, _ := run(t, nil, extendedSession()...)
	byType := map[string][]*decode.Unit{}
	for _, u := range units {
		if err := findcheck.Check(u); err != nil {
			t.Error(err)
		}
		key := u.Dir.String() + ":" + u.Type
		byType[key] = append(byType[key], u)
	}
	for _, c := range []struct {
		unit, name string
		k          int
		want       any // nil: handled and absent
	}{
		{"F:Query", "pgsql.query", 0, "SELECT 1"},
		{"F:Parse", "pgsql.query", 0, "SELECT $1::int"},
		{"F:Parse", "pgsql.statement", 0, "s1"},
		{"F:Bind", "pgsql.portal", 0, "p1"},
		{"F:Bind", "pgsql.statement", 0, "s1"},
		{"F:Describe", "pgsql.portal", 0, "p1"},
		{"F:Describe", "pgsql.statement", 0, nil},
		{"F:Close", "pgsql.statement", 0, "s1"},
		{"F:Close", "pgsql.kind", 0, "S"},
		{"F:Execute", "pgsql.returns", 0, int64(5)},
		{"F:Query", "pgsql.length", 0, int64(13)},
		{"F:Query", "pgsql.query", 1, nil},
		{"F:Query", "pgsql.tag", 0, nil},
		{"F:Sync", "pgsql.query", 0, nil},
		{"F:StartupMessage", "pgsql.query", 0, nil},
		{"F:StartupMessage", "pgsql.type", 0, "StartupMessage"},
		{"B:DataRow", "pgsql.query", 0, nil},
		{"B:DataRow", "pgsql.status", 0, nil},
		{"B:DataRow", "amqp.length", 0, nil},
		{"B:DataRow", "pgsql.type", 0, "DataRow"},
		{"B:RowDescription", "pgsql.query", 0, nil},
		{"B:CommandComplete", "pgsql.tag", 0, "SELECT 1"},
		{"B:ReadyForQuery", "pgsql.status", 0, "I"},
		{"B:ParameterStatus", "pgsql.parameter_value", 0, "UTC"},
		{"B:NoticeResponse", "pgsql.message", 0, "first"},
		{"B:NoticeResponse", "pgsql.severity", 1, nil},
		{"B:ErrorResponse", "pgsql.code", 0, "42P01"},
		{"B:ErrorResponse", "pgsql.severity", 0, "ERROR"},
		{"B:ErrorResponse", "pgsql.hint", 0, nil},
	} {
		us := byType[c.unit]
		if len(us) == 0 {
			t.Errorf("no %s unit in %s", c.unit, types(units))
			continue
		}
		f, ok, handled := us[0].FindField(c.name, c.k)
		switch {
		case !handled:
			t.Errorf("%s %s[%d]: not handled", c.unit, c.name, c.k)
		case c.want == nil && ok:
			t.Errorf("%s %s[%d]: found %+v, want absent", c.unit, c.name, c.k, f)
		case c.want != nil && (!ok || f.Value != c.want):
			t.Errorf("%s %s[%d]: %v %+v, want %#v", c.unit, c.name, c.k, ok, f, c.want)
		}
	}

	// A repeated error field code is left to the tree: answering each
	// occurrence with a walk would be quadratic in the body.
	if _, _, handled := byType["B:NoticeResponse"][0].FindField("pgsql.message", 1); handled {
		t.Error("second pgsql.message of a NoticeResponse handled, want left to the tree")
	}

	q := byType["F:Query"][0]
	if a := testing.AllocsPerRun(100, func() { q.FindField("pgsql.query", 0) }); a > 1 {
		t.Errorf("pgsql.query on Query: %v allocations, want at most 1 (the boxed value)", a)
	}
	dr := byType["B:DataRow"][0]
	if a := testing.AllocsPerRun(100, func() { dr.FindField("pgsql.query", 0) }); a != 0 {
		t.Errorf("pgsql.query on DataRow: %v allocations, want 0", a)
	}
}

// TestFinderMalformedBodies: every message type of each direction, with
// bodies cut short, empty, unterminated or with trailing bytes, agrees
// with its tree.
func TestFinderMalformedBodies(t *testing.T) {
	bodies := []string{"", "\x00", "abc", "abc\x00", "abc\x00def", "abc\x00def\x00", "abc\x00def\x00\x00\x01\x00\x00\x00\x17",
		"P", "Pp\x00", "Ss\x00", "Sx", "p\x00\x00\x00", "p\x00\x00\x00\x00\x05", "p\x00\x00\x00\x00\x05!",
		"I", "T", "E", "Ix", "\xff", "SERROR\x00M\x00\x00", "SERROR\x00Mm1\x00Mm2\x00\x00extra", "Cabc\x00M", "\x00\x00",
		"\x00\x01\x00\x00\x00\x01a", "\x00\x02\x00\x00\x00\x05a"}
	answered := 0
	for _, dir := range []decode.Dir{decode.DirF, decode.DirB} {
		var stream []byte
		for typ := range 256 {
			if !pgwire.ValidType(byte(typ), dir == decode.DirF) || typ == pgwire.TypePassword || typ == pgwire.TypeAuthentication {
				continue
			}
			for _, b := range bodies {
				stream = pgwire.AppendMessage(stream, byte(typ), []byte(b))
			}
		}
		feeds := []feed{{dir: decode.DirF, b: startup("user", "u")}, {dir: dir, b: stream}}
		units, _ := run(t, nil, feeds...)
		if len(units) < 100 {
			t.Fatalf("%s: only %d units: %s", dir, len(units), types(units))
		}
		for _, u := range units {
			if err := findcheck.Check(u); err != nil {
				t.Error(err)
			}
			for _, name := range []string{"pgsql.query", "pgsql.statement", "pgsql.portal", "pgsql.tag", "pgsql.status", "pgsql.message"} {
				if _, ok, handled := u.FindField(name, 0); handled && ok {
					answered++
				}
			}
		}
	}
	if answered < 50 {
		t.Errorf("only %d lookups answered", answered)
	}
}

// TestFinderLeavesForeignTrees: a pgsql unit whose tree another package
// builds (the TUI's fake generator does) is left to its tree.
func TestFinderLeavesForeignTrees(t *testing.T) {
	u := &decode.Unit{Proto: decode.ProtoPgSQL, Type: "Query", Raw: pgwire.AppendMessage(nil, 'Q', []byte("SELECT 1\x00")),
		Dissect: func(*decode.Unit) []*decode.Field {
			return []*decode.Field{{Key: "payload", Name: "pgsql.payload", Value: "SELECT 1\x00"}}
		}}
	for _, name := range []string{"pgsql.query", "pgsql.payload", "pgsql.type", "frame.raw"} {
		if _, _, handled := u.FindField(name, 0); handled {
			t.Errorf("%s handled on a foreign tree", name)
		}
	}
}

// TestFinderUncertainUnits: redacted units and units with a decode error
// are left to the tree.
func TestFinderUncertainUnits(t *testing.T) {
	units, _ := run(t, nil,
		feed{dir: decode.DirF, b: startup("user", "u")},
		feed{dir: decode.DirB, b: (&pgwire.Authentication{Code: pgwire.AuthCleartextPassword}).Encode(nil)},
		feed{dir: decode.DirF, b: pgwire.AppendMessage(nil, 'p', []byte("hunter2\x00"))},
		feed{dir: decode.DirF, b: []byte{'Q', 0, 0, 0, 20, 'S', 'E'}}, // cut short at the end
	)
	n := 0
	for _, u := range units {
		if err := findcheck.Check(u); err != nil {
			t.Error(err)
		}
		if u.Secret || u.Err() != "" {
			n++
			if _, _, handled := u.FindField("pgsql.query", 0); handled {
				t.Errorf("%s (secret %v, error %q): handled", u.Type, u.Secret, u.Err())
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d secret or failed units, want 2: %s", n, types(units))
	}
}

// captureUnits decodes the shipped PostgreSQL captures.
func captureUnits(tb testing.TB) []*decode.Unit {
	tb.Helper()
	files, _ := filepath.Glob("../../testdata/pgsql-*.pcap*")
	if len(files) == 0 {
		tb.Fatal("no pgsql captures in ../../testdata")
	}
	var units []*decode.Unit
	for _, path := range files {
		p := pipeline.New(pipeline.Config{Sink: func(u *decode.Unit) {
			if u.Proto == decode.ProtoPgSQL {
				units = append(units, u)
			}
		}})
		if _, err := capture.ReadFile(path, p, nil); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		p.Finish()
	}
	return units
}

// TestFinderCaptures: over real traffic, including messages nested in
// CompressedMessages, the finder agrees with the trees and answers
// pgsql.query itself on every unit.
func TestFinderCaptures(t *testing.T) {
	units := captureUnits(t)
	queries, nested := 0, 0
	for _, u := range units {
		if err := findcheck.Check(u); err != nil {
			t.Error(err)
		}
		if u.Secret || u.Err() != "" {
			continue
		}
		f, ok, handled := u.FindField("pgsql.query", 0)
		if !handled {
			t.Errorf("unit %d (%s): pgsql.query not handled", u.N, u.Type)
			continue
		}
		if want := decode.Find(u.Fields(), "pgsql.query"); ok != (want != nil) || ok && !reflect.DeepEqual(f.Value, want.Value) {
			t.Errorf("unit %d (%s): pgsql.query %v %+v, tree %+v", u.N, u.Type, ok, f, want)
		}
		if ok {
			queries++
		}
		if u.Parent != nil {
			if _, _, h := u.FindField("pgsql.type", 0); h {
				nested++
			}
		}
	}
	if queries == 0 || nested == 0 {
		t.Errorf("%d units: %d queries answered, %d nested units answered; want some of each", len(units), queries, nested)
	}
}

// BenchmarkFindQuery compares a lookup of pgsql.query through the finder
// with building the tree and searching it, over the units of the shipped
// captures (ns/op and allocs/op are per unit).
func BenchmarkFindQuery(b *testing.B) {
	units := captureUnits(b)
	b.Run("finder", func(b *testing.B) {
		b.ReportAllocs()
		found := 0
		for i := 0; b.Loop(); i++ {
			u := units[i%len(units)]
			for k := 0; ; k++ {
				f, ok, handled := u.FindField("pgsql.query", k)
				if !handled {
					if decode.Find(u.Fields(), "pgsql.query") != nil {
						found++
					}
					break
				}
				if !ok {
					break
				}
				if len(f.Value.(string)) > 0 {
					found++
				}
			}
		}
		_ = found
	})
	b.Run("tree", func(b *testing.B) {
		b.ReportAllocs()
		found := 0
		for i := 0; b.Loop(); i++ {
			decode.Walk(units[i%len(units)].Fields(), func(f *decode.Field) bool {
				if f.Name == "pgsql.query" {
					found++
				}
				return true
			})
		}
		_ = found
	})
}
