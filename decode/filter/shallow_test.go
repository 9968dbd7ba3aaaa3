package filter

import (
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// shellOf returns a unit holding only u's plain fields, as a store that
// froze u rebuilds it from its record without reading its blob: no
// bytes, summary, notes or dissector, and a parent that is only its N.
func shellOf(u *decode.Unit) *decode.Unit {
	sh := &decode.Unit{N: u.N, Conn: u.Conn, Offset: u.Offset, Len: u.Len, Type: u.Type,
		Channel: u.Channel, Dir: u.Dir, Proto: u.Proto, HasChannel: u.HasChannel, Secret: u.Secret}
	sh.SetUnixNano(u.UnixNano())
	if u.Parent != nil {
		sh.Parent = &decode.Unit{N: u.Parent.N}
	}
	return sh
}

// testUnits are the package's test units, one of each kind, with notes
// (warnings, an error, a checksum, a message-id) a shell lacks. The same
// comparison on the units of the shipped captures, through the store's
// shells, is tui/store's TestShallowScanRealUnits: a test here that
// decoded them would register the protocols' field names, which this
// package's tests keep to their own.
func testUnits() []*decode.Unit {
	return []*decode.Unit{publish(nil), header(nil), body(), transfer(decode.ChecksumMismatch),
		transfer(decode.ChecksumOK), dataRow(), query(), nested(),
		{N: 3, Type: "heartbeat", Proto: decode.ProtoAMQP091, Dir: decode.DirB, Summary: "heartbeat"}}
}

func sameValue(a, b *value) bool {
	return a.kind == b.kind && a.i == b.i && a.u == b.u && a.f == b.f && a.s == b.s &&
		a.t.Equal(b.t) && a.a == b.a && a.disp == b.disp && string(a.b) == string(b.b)
}

// literalOf renders v as a filter literal that compares equal to it.
func literalOf(v *value) string {
	switch v.kind {
	case kInt:
		return strconv.FormatInt(v.i, 10)
	case kFloat:
		return strconv.FormatFloat(v.f, 'f', -1, 64)
	case kBool:
		return strconv.FormatInt(v.i, 10)
	case kTime:
		return strconv.Quote(v.t.UTC().Format(time.RFC3339Nano))
	case kAddr:
		return strconv.Quote(v.a.String())
	}
	return strconv.Quote(v.s)
}

// TestShallowVirtualFields: every virtual field Shallow counts as read
// from a unit's plain fields has, on each test unit, the occurrences on a
// shell of the unit that it has on the unit (amqp and pgsql: their
// presence, their value being the bytes); and every other virtual field
// is one a shell lacks.
func TestShallowVirtualFields(t *testing.T) {
	units := testUnits()
	for _, vf := range virtualFields {
		if !shallowVirtual(vf.id) {
			continue
		}
		seen := 0
		for _, u := range units {
			sh := shellOf(u)
			for i := 0; ; i++ {
				var a, b value
				okA, okB := virtualValue(u, vf.id, i, &a), virtualValue(sh, vf.id, i, &b)
				if okA != okB || okA && vf.id != vAMQP && vf.id != vPgSQL && !sameValue(&a, &b) {
					t.Fatalf("%s, unit %d (%s), occurrence %d: on the shell %v %+v, on the unit %v %+v",
						vf.name, u.N, u.Type, i, okB, b, okA, a)
				}
				if !okA {
					break
				}
				seen++
			}
		}
		if seen == 0 {
			t.Errorf("%s: on no unit of the shipped captures", vf.name)
		}
	}
	var deepSeen [4]bool // summary, error, warning, amqp.checksum
	for _, u := range units {
		sh := shellOf(u)
		for k, id := range []vid{vSummary, vError, vWarning, vAMQPChecksum} {
			var v value
			if virtualValue(u, id, 0, &v) {
				deepSeen[k] = true
			}
			if virtualValue(sh, id, 0, &v) {
				t.Fatalf("a shell of unit %d has virtual field %d", u.N, id)
			}
		}
	}
	if deepSeen != [4]bool{true, true, true, true} {
		t.Errorf("the captures lack a unit with summary, error, warning or checksum: %v", deepSeen)
	}
}

// TestShallowFiltersOnShells: filters over the shallow virtual fields,
// with literals taken from the units, say so and give on a shell of each
// test unit the answer they give on the unit.
func TestShallowFiltersOnShells(t *testing.T) {
	units := testUnits()
	exprs := []string{"", `amqp && frame.len > 100`, `pgsql || !(conn == 1)`, `parent || secret`,
		`frame.len > 1000 and not amqp.method == "basic.publish"`, `ip.src == "10.0.0.0/8"`}
	for _, vf := range virtualFields {
		if !shallowVirtual(vf.id) {
			continue
		}
		exprs = append(exprs, vf.name, "!"+vf.name)
		if vf.id == vAMQP || vf.id == vPgSQL {
			continue
		}
		lits := map[string]bool{}
		for _, u := range units {
			var v value
			if len(lits) < 3 && virtualValue(u, vf.id, 0, &v) {
				lits[literalOf(&v)] = true
			}
		}
		for l := range lits {
			exprs = append(exprs, vf.name+" == "+l, vf.name+" != "+l, vf.name+" >= "+l, "all "+vf.name+" < "+l)
			if l[0] == '"' {
				exprs = append(exprs, vf.name+" contains "+strconv.Quote(unquote(l)[:min(len(l)-2, 2)]), vf.name+" matches "+strconv.Quote("^"+regexpQuote(l)))
			} else {
				exprs = append(exprs, vf.name+" in {0 "+l+".."+l+"}")
			}
		}
	}
	for _, e := range exprs {
		f, err := Compile(e)
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		if !f.Shallow() {
			t.Fatalf("%q: not shallow", e)
		}
		for _, u := range units {
			if got, want := f.Match(shellOf(u)), f.Match(u); got != want {
				t.Fatalf("%q on unit %d (%s): %v on the shell, %v on the unit", e, u.N, u.Type, got, want)
			}
		}
	}
}

// regexpQuote returns the text of a quoted literal, without its quotes,
// with regexp metacharacters escaped.
func regexpQuote(l string) string {
	s := unquote(l)
	out := make([]byte, 0, len(s))
	for i := range len(s) {
		if c := s[i]; c == '.' || c == '*' || c == '+' || c == '?' || c == '(' || c == ')' || c == '[' || c == ']' ||
			c == '{' || c == '}' || c == '|' || c == '^' || c == '$' || c == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func unquote(l string) string {
	s, _ := strconv.Unquote(l)
	return s
}

// TestDeepFilters: a filter that reads a unit's notes, summary, bytes or
// tree is not shallow.
func TestDeepFilters(t *testing.T) {
	for _, e := range []string{
		`summary`, `error`, `warning`, `not warning`, `amqp.checksum == "ok"`, `amqp.checksum.algorithm`,
		`amqp.message_id == "x"`, `amqp contains "x"`, `pgsql matches "x"`,
		`amqp.method.arguments.routing_key`, `frame.len > 1 && summary contains "a"`,
		`frame.len > 1 || amqp.message_id`, `!(conn == 1 && amqp.header.body_size > 1)`,
	} {
		f, err := Compile(e)
		if err != nil {
			t.Fatalf("%q: %v", e, err)
		}
		if f.Shallow() {
			t.Errorf("%q: shallow", e)
		}
	}
	var nilFilter *Filter
	if !nilFilter.Shallow() {
		t.Error("a nil filter is not shallow")
	}
}
