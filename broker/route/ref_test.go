package route

import (
	"bytes"
	"math"
	"math/big"
	"slices"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// refIndex is the naive reference the Index is checked against: it keeps
// a list of bindings, scans all of them per message, materialises tables
// into Go values, and transcribes RabbitMQ 3.10's Erlang clause by clause
// (split_topic_key and trie_match's meaning, headers_match, term
// equality), sharing no code with the index.
type refIndex struct {
	kind Kind
	list []refBinding
}

type refBinding struct {
	dest  Dest
	key   string
	args  amqp091.Table
	raw   bool       // malformed args: identity is the raw bytes
	terms []refEntry // sorted by key, stably
}

// refEntry is {Key, TypeAtom, Value} as rabbit_binary_parser makes it.
type refEntry struct {
	key  string
	atom string
	val  any // *big.Int, float64, string, bool, refDecimal, nil, []refEntry, []refElem
}

type refElem struct {
	atom string
	val  any
}

type refDecimal struct{ before, after uint64 }

var refAtoms = map[amqp091.ValueType]string{
	'S': "longstr", 'x': "binary", 'b': "byte", 'B': "unsignedbyte", 's': "short", 'U': "short",
	'u': "unsignedshort", 'I': "signedint", 'i': "unsignedint", 'l': "long", 'L': "long",
	'f': "float", 'd': "double", 'T': "timestamp", 't': "bool", 'D': "decimal", 'F': "table",
	'A': "array", 'V': "void",
}

func refTerm(v amqp091.Value) any {
	switch v.Type {
	case 'b':
		return big.NewInt(int64(int8(v.Uint())))
	case 's', 'U':
		return big.NewInt(int64(int16(v.Uint())))
	case 'I':
		return big.NewInt(int64(int32(v.Uint())))
	case 'l', 'L': // RabbitMQ reads 'L' as signed too
		return big.NewInt(int64(v.Uint()))
	case 'B', 'u', 'i', 'T':
		return new(big.Int).SetUint64(v.Uint())
	case 'f':
		return float64(math.Float32frombits(uint32(v.Uint())))
	case 'd':
		return math.Float64frombits(v.Uint())
	case 'S', 'x':
		return string(v.Bytes())
	case 't':
		return v.Uint() != 0
	case 'D':
		return refDecimal{v.Uint() >> 32, v.Uint() & 0xFFFFFFFF}
	case 'V':
		return nil
	case 'F':
		return refTable(v.Bytes(), false)
	case 'A':
		var es []refElem
		it := amqp091.Array(v.Bytes()).Iter()
		for it.Next() {
			es = append(es, refElem{refAtoms[it.Value().Type], refTerm(it.Value())})
		}
		return es
	}
	return nil
}

func refTable(b []byte, sorted bool) []refEntry {
	var es []refEntry
	it := amqp091.Table(b).Iter()
	for it.Next() {
		es = append(es, refEntry{string(it.Key()), refAtoms[it.Value().Type], refTerm(it.Value())})
	}
	if sorted {
		slices.SortStableFunc(es, func(a, b refEntry) int { return strings.Compare(a.key, b.key) })
	}
	return es
}

// refSame is term identity (=:= on OTP 25, where 0.0 =:= -0.0), what
// tells two bindings apart.
func refSame(a, b any) bool {
	switch a := a.(type) {
	case *big.Int:
		b, ok := b.(*big.Int)
		return ok && a.Cmp(b) == 0
	case float64:
		b, ok := b.(float64)
		return ok && (a == b || math.Float64bits(a) == math.Float64bits(b))
	case []refEntry:
		b, ok := b.([]refEntry)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].key != b[i].key || a[i].atom != b[i].atom || !refSame(a[i].val, b[i].val) {
				return false
			}
		}
		return true
	case []refElem:
		b, ok := b.([]refElem)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].atom != b[i].atom || !refSame(a[i].val, b[i].val) {
				return false
			}
		}
		return true
	}
	return a == b
}

// refEq is Erlang's == on parsed values.
func refEq(a, b any) bool {
	toFloat := func(x any) (*big.Float, bool) {
		switch x := x.(type) {
		case *big.Int:
			return new(big.Float).SetInt(x), true
		case float64:
			if math.IsNaN(x) {
				return nil, false
			}
			return new(big.Float).SetFloat64(x), true
		}
		return nil, false
	}
	_, aNum := a.(*big.Int)
	_, aFl := a.(float64)
	_, bNum := b.(*big.Int)
	_, bFl := b.(float64)
	if aNum || aFl || bNum || bFl {
		fa, okA := toFloat(a)
		fb, okB := toFloat(b)
		return okA && okB && fa.Cmp(fb) == 0
	}
	switch a := a.(type) {
	case []refEntry:
		b, ok := b.([]refEntry)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].key != b[i].key || a[i].atom != b[i].atom || !refEq(a[i].val, b[i].val) {
				return false
			}
		}
		return true
	case []refElem:
		b, ok := b.([]refElem)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].atom != b[i].atom || !refEq(a[i].val, b[i].val) {
				return false
			}
		}
		return true
	}
	return a == b
}

func newRef(k Kind) *refIndex { return &refIndex{kind: k} }

func (r *refIndex) binding(b Binding) refBinding {
	rb := refBinding{dest: b.Dest, key: b.Key, args: b.Args}
	rb.raw = b.Args.Validate() != nil
	rb.terms = refTable(b.Args, true)
	return rb
}

func (a refBinding) same(b refBinding) bool {
	if a.dest != b.dest || a.key != b.key || a.raw != b.raw {
		return false
	}
	if a.raw {
		return bytes.Equal(a.args, b.args)
	}
	return refSame(a.terms, b.terms)
}

func (r *refIndex) add(b Binding) bool {
	nb := r.binding(b)
	for _, e := range r.list {
		if e.same(nb) {
			return false
		}
	}
	nb.args = append(amqp091.Table(nil), b.Args...)
	r.list = append(r.list, nb)
	return true
}

func (r *refIndex) remove(d Dest, key string, args amqp091.Table) bool {
	nb := r.binding(Binding{Dest: d, Key: key, Args: args})
	for i, e := range r.list {
		if e.same(nb) {
			r.list = append(r.list[:i], r.list[i+1:]...)
			return true
		}
	}
	return false
}

func (r *refIndex) removeDest(d Dest) int {
	n := 0
	kept := r.list[:0]
	for _, e := range r.list {
		if e.dest == d {
			n++
			continue
		}
		kept = append(kept, e)
	}
	r.list = kept
	return n
}

func (r *refIndex) matches(b refBinding, key string, headers amqp091.Table) bool {
	switch r.kind {
	case Fanout:
		return true
	case Direct:
		return b.key == key
	case Topic:
		return refTopic(refSplit(b.key), refSplit(key))
	case Headers:
		return refHeaders(b.terms, refTable(headers, true))
	}
	return false
}

func (r *refIndex) route(key string, headers amqp091.Table) map[Dest]bool {
	got := map[Dest]bool{}
	for _, b := range r.list {
		if r.matches(b, key, headers) {
			got[b.dest] = true
		}
	}
	return got
}

// refSplit is split_topic_key: <<>> has no words.
func refSplit(k string) []string {
	if k == "" {
		return nil
	}
	return strings.Split(k, ".")
}

func refTopic(p, w []string) bool {
	if len(p) == 0 {
		return len(w) == 0
	}
	switch p[0] {
	case "#":
		for i := 0; i <= len(w); i++ {
			if refTopic(p[1:], w[i:]) {
				return true
			}
		}
		return false
	case "*":
		return len(w) > 0 && refTopic(p[1:], w[1:])
	}
	return len(w) > 0 && w[0] == p[0] && refTopic(p[1:], w[1:])
}

// refHeaders is rabbit_exchange_type_headers:headers_match/2 of 3.10.8.
func refHeaders(args, data []refEntry) bool {
	mk := "all"
	for _, e := range args {
		if e.key == "x-match" {
			if s, ok := e.val.(string); ok && e.atom == "longstr" {
				switch s {
				case "any", "all-with-x", "any-with-x":
					mk = s
				}
			}
			break
		}
	}
	return refHeadersMatch(args, data, true, false, mk)
}

func refHeadersMatch(p, d []refEntry, allM, anyM bool, mk string) bool {
	switch {
	case !allM && (mk == "all" || mk == "all-with-x"):
		return false
	case anyM && (mk == "any" || mk == "any-with-x"):
		return true
	case len(p) == 0:
		if mk == "all" || mk == "all-with-x" {
			return allM
		}
		return anyM
	case p[0].key == "x-match":
		return refHeadersMatch(p[1:], d, allM, anyM, mk)
	case strings.HasPrefix(p[0].key, "x-") && mk != "all-with-x" && mk != "any-with-x":
		return refHeadersMatch(p[1:], d, allM, anyM, mk)
	case len(d) == 0:
		return refHeadersMatch(nil, nil, false, anyM, mk)
	case p[0].key > d[0].key:
		return refHeadersMatch(p, d[1:], allM, anyM, mk)
	case p[0].key < d[0].key:
		return refHeadersMatch(p[1:], d, false, anyM, mk)
	case p[0].atom == "void":
		return refHeadersMatch(p[1:], d[1:], allM, true, mk)
	case refEq(p[0].val, d[0].val):
		return refHeadersMatch(p[1:], d[1:], allM, true, mk)
	}
	return refHeadersMatch(p[1:], d[1:], false, anyM, mk)
}
