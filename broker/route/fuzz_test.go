package route

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// opReader turns fuzz bytes into choices; past the end every choice is 0.
type opReader struct {
	b     []byte
	dests []Dest
	// The words of binding keys and routing keys.
	patternWords, keyWords []string
}

func (r *opReader) more() bool { return len(r.b) > 0 }

func (r *opReader) pick(n int) int {
	if len(r.b) == 0 || n <= 1 {
		return 0
	}
	c := int(r.b[0])
	r.b = r.b[1:]
	return c % n
}

var (
	fuzzDests = []Dest{{Queue, "q1"}, {Queue, "q2"}, {Queue, "q3"}, {Queue, "q4"}, {Exchange, "x1"}, {Exchange, "x2"}}
	manyDests = func() []Dest {
		ds := []Dest{{Exchange, "x1"}, {Exchange, "x2"}}
		for i := range 3 * groupScan {
			ds = append(ds, Dest{Queue, "q" + strconv.Itoa(i)})
		}
		return ds
	}()
	// Binding-key words and routing-key words: the wildcards, empty
	// words, and a literal "*" or "#" in a routing key.
	fuzzPatternWords = []string{"a", "b", "*", "#", "", "a*"}
	fuzzKeyWords     = []string{"a", "b", "c", "", "*", "#", "a*"}
	// More literal words than a trie node scans.
	manyWords        = []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11"}
	manyPatternWords = append(append([]string{}, fuzzPatternWords...), manyWords...)
	manyKeyWords     = append(append([]string{}, fuzzKeyWords...), manyWords...)
	fuzzHeaderKeys   = []string{"a", "b", "c", "x-a", "x-match", "", "aa"}
	fuzzModes        = []string{"all", "any", "all-with-x", "any-with-x", "bogus", ""}
)

// fuzzValues are values whose equalities are RabbitMQ's subtle cases: one
// number in many widths and as floats, the string "1" and its bytes,
// signed and unsigned 64-bit extremes, 0.0 and -0.0, NaN, nested tables
// and arrays with types that differ.
func fuzzValues() []amqp091.Value {
	nested1 := amqp091.Table(nil).Append("a", amqp091.Int8Value(1))
	nested2 := amqp091.Table(nil).Append("a", amqp091.Int32Value(1))
	nested3 := amqp091.Table(nil).Append("a", amqp091.Int8Value(1)).Append("b", amqp091.StringValue("x"))
	nested4 := amqp091.Table(nil).Append("b", amqp091.StringValue("x")).Append("a", amqp091.Int8Value(1))
	return []amqp091.Value{
		amqp091.Int8Value(1), amqp091.Uint8Value(1), amqp091.Int16Value(1), amqp091.Uint16Value(1),
		amqp091.Int32Value(1), amqp091.Uint32Value(1), amqp091.Int64Value(1), amqp091.Uint64Value(1),
		amqp091.DoubleValue(1), amqp091.FloatValue(1), amqp091.DoubleValue(1.5), amqp091.FloatValue(1.5),
		amqp091.FloatValue(0.1), amqp091.DoubleValue(0.1),
		amqp091.StringValue("1"), amqp091.BytesValue([]byte("1")), amqp091.StringValue("a"), amqp091.StringValue(""),
		amqp091.BoolValue(true), amqp091.BoolValue(false), amqp091.VoidValue(),
		amqp091.DecimalValue(amqp091.Decimal{Scale: 0, Value: 1}), amqp091.DecimalValue(amqp091.Decimal{Scale: 1, Value: 10}),
		amqp091.TimestampValue(time.Unix(1, 0)),
		amqp091.Int64Value(-1), amqp091.Uint64Value(math.MaxUint64), amqp091.Int8Value(-1),
		amqp091.Int64Value(math.MaxInt64), amqp091.DoubleValue(1 << 63), amqp091.DoubleValue(-(1 << 63)),
		amqp091.Int64Value(math.MinInt64), amqp091.DoubleValue(math.Inf(1)),
		amqp091.DoubleValue(0), amqp091.DoubleValue(math.Copysign(0, -1)), amqp091.Int32Value(0),
		amqp091.DoubleValue(math.NaN()),
		amqp091.TableValue(nested1), amqp091.TableValue(nested2), amqp091.TableValue(nested3), amqp091.TableValue(nested4),
		amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.Int8Value(1))),
		amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.Int32Value(1))),
		amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.DoubleValue(0))),
		amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.DoubleValue(math.Copysign(0, -1)))),
		{Type: amqp091.TypeTimestamp}, // 'T' 0
	}
}

func (r *opReader) table(vals []amqp091.Value, headers bool) amqp091.Table {
	if r.pick(16) == 0 {
		// Bytes that are not a well-formed table.
		n := r.pick(8)
		t := make(amqp091.Table, 0, n)
		for range n {
			t = append(t, byte(r.pick(256)))
		}
		return t
	}
	var t amqp091.Table
	for n := r.pick(5); n > 0; n-- {
		k := fuzzHeaderKeys[r.pick(len(fuzzHeaderKeys))]
		if k == "x-match" && !headers {
			if r.pick(6) == 0 {
				t = t.Append(k, vals[r.pick(len(vals))])
			} else {
				t = t.Append(k, amqp091.StringValue(fuzzModes[r.pick(len(fuzzModes))]))
			}
			continue
		}
		t = t.Append(k, vals[r.pick(len(vals))])
	}
	return t
}

func (r *opReader) words(vocab []string) string {
	n := r.pick(5)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocab[r.pick(len(vocab))]
	}
	return strings.Join(ws, ".")
}

func (r *opReader) binding(k Kind, vals []amqp091.Value) Binding {
	b := Binding{Dest: r.dests[r.pick(len(r.dests))]}
	switch k {
	case Topic:
		b.Key = r.words(r.patternWords)
	default:
		b.Key = []string{"", "a", "b"}[r.pick(3)]
	}
	if k == Headers || r.pick(4) == 0 {
		b.Args = r.table(vals, false)
	}
	return b
}

// checkOps runs the operations the bytes describe on an Index and the
// reference and fails on the first disagreement.
func checkOps(t *testing.T, data []byte) {
	r := &opReader{b: data}
	kind := Kind(r.pick(4) + 1)
	ix, ref := New(kind), newRef(kind)
	// Sometimes many destinations, past what a group scans.
	r.dests, r.patternWords, r.keyWords = fuzzDests, fuzzPatternWords, fuzzKeyWords
	if r.pick(4) == 0 {
		r.dests, r.patternWords, r.keyWords = manyDests, manyPatternWords, manyKeyWords
	}
	if kind == Topic && r.pick(2) == 0 {
		ix.topic.cache.pinned = true
		ix.topic.cache.enable()
	}
	vals := fuzzValues()
	var added []Binding
	var dst []Dest
	for step := 0; r.more(); step++ {
		switch op := r.pick(10); {
		case op < 4:
			b := r.binding(kind, vals)
			if len(added) > 0 && r.pick(3) == 0 {
				// The same binding again, its arguments in another order.
				b = added[r.pick(len(added))]
				b.Args = reorder(b.Args)
			}
			if got, want := ix.Add(b), ref.add(b); got != want {
				t.Fatalf("step %d: %s Add(%v %q %x) = %v, reference %v", step, kind, b.Dest, b.Key, []byte(b.Args), got, want)
			}
			added = append(added, b)
		case op < 6:
			b := r.binding(kind, vals)
			if len(added) > 0 && r.pick(4) != 0 {
				b = added[r.pick(len(added))]
				b.Args = reorder(b.Args)
			}
			if got, want := ix.Remove(b.Dest, b.Key, b.Args), ref.remove(b.Dest, b.Key, b.Args); got != want {
				t.Fatalf("step %d: %s Remove(%v %q %x) = %v, reference %v", step, kind, b.Dest, b.Key, []byte(b.Args), got, want)
			}
		case op == 6:
			d := r.dests[r.pick(len(r.dests))]
			if got, want := ix.RemoveDest(d), ref.removeDest(d); got != want {
				t.Fatalf("step %d: %s RemoveDest(%v) = %d, reference %d", step, kind, d, got, want)
			}
		default:
			key := r.words(r.keyWords)
			if kind == Direct && r.pick(2) == 0 {
				key = []string{"", "a", "b"}[r.pick(3)]
			}
			headers := r.table(vals, true)
			want := ref.route(key, headers)
			// Twice: the second may come from the topic cache.
			for range 2 {
				dst = ix.Route([]byte(key), headers, dst[:0])
				checkRouted(t, step, kind, key, headers, dst, want)
			}
			// Routed by more keys too, as with CC and BCC.
			keys := [][]byte{[]byte(key)}
			for n := r.pick(3); n > 0; n-- {
				k := r.words(r.keyWords)
				keys = append(keys, []byte(k))
				for d := range ref.route(k, headers) {
					want[d] = true
				}
			}
			dst = ix.RouteKeys(keys, headers, dst[:0])
			checkRouted(t, step, kind, string(bytes.Join(keys, []byte(" "))), headers, dst, want)
			for i, m := range ix.Explain([]byte(key), headers) {
				if wantM := ref.matches(ref.list[i], key, headers); m.Matched != wantM {
					t.Fatalf("step %d: %s Explain(%q, %x): binding %d (%v %q %x) Matched %v, reference %v (%s)",
						step, kind, key, []byte(headers), i, m.Binding.Dest, m.Binding.Key, []byte(m.Binding.Args), m.Matched, wantM, m.Why)
				}
				if m.Why == "" {
					t.Fatalf("step %d: binding %d has no Why", step, i)
				}
				if err := checkExplained(kind, m, key); err != "" {
					t.Fatalf("step %d: %s Explain(%q, %x): binding %d (%q %x): %s", step, kind, key, []byte(headers), i, m.Binding.Key, []byte(m.Binding.Args), err)
				}
			}
		}
		checkBindings(t, step, ix, ref)
	}
}

func checkRouted(t *testing.T, step int, kind Kind, key string, headers amqp091.Table, got []Dest, want map[Dest]bool) {
	t.Helper()
	seen := map[Dest]bool{}
	for _, d := range got {
		if seen[d] {
			t.Fatalf("step %d: %s Route(%q, %x) = %v: %v twice", step, kind, key, []byte(headers), got, d)
		}
		seen[d] = true
		if !want[d] {
			t.Fatalf("step %d: %s Route(%q, %x) = %v, reference %v", step, kind, key, []byte(headers), got, want)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("step %d: %s Route(%q, %x) = %v, reference %v", step, kind, key, []byte(headers), got, want)
	}
}

func checkBindings(t *testing.T, step int, ix *Index, ref *refIndex) {
	t.Helper()
	bs := ix.Bindings(nil)
	if ix.Len() != len(ref.list) || len(bs) != len(ref.list) {
		t.Fatalf("step %d: Len %d, Bindings %d, reference %d", step, ix.Len(), len(bs), len(ref.list))
	}
	for i, b := range bs {
		e := ref.list[i]
		if b.Dest != e.dest || b.Key != e.key || string(b.Args) != string(e.args) {
			t.Fatalf("step %d: binding %d is %v %q %x, reference %v %q %x", step, i, b.Dest, b.Key, []byte(b.Args), e.dest, e.key, []byte(e.args))
		}
	}
}

// reorder returns an encoding of the table that RabbitMQ holds equal:
// the entries in another order (reversed by key), and each value in
// another spelling of itself where it has one ('l' as 'L', 's' as 'U', a
// true bool as another non-zero octet, 0.0 as -0.0). Bytes that are not a
// well-formed table come back as they are.
func reorder(t amqp091.Table) amqp091.Table {
	if t.Validate() != nil {
		return t
	}
	type entry struct {
		key string
		raw []byte
	}
	var es []entry
	it := t.Iter()
	for it.Next() {
		raw := append([]byte(nil), t[it.Offset():it.End()]...)
		v := raw[1+len(it.Key()):] // type octet, then the value
		switch v[0] {
		case 'l':
			v[0] = 'L'
		case 'L':
			v[0] = 'l'
		case 's':
			v[0] = 'U'
		case 'U':
			v[0] = 's'
		case 't':
			if v[1] != 0 {
				v[1] = 3 - v[1]%3 // 1 -> 2, 2 -> 1
			}
		case 'd', 'f':
			if v[1]&0x7f == 0 && !slices.ContainsFunc(v[2:], func(b byte) bool { return b != 0 }) {
				v[1] ^= 0x80
			}
		}
		es = append(es, entry{string(it.Key()), raw})
	}
	// Entries with one key keep their order: RabbitMQ's sort is stable,
	// so their order is part of the identity.
	slices.SortStableFunc(es, func(a, b entry) int { return -strings.Compare(a.key, b.key) })
	var out amqp091.Table
	for _, e := range es {
		out = append(out, e.raw...)
	}
	return out
}

// TestAgainstReference is the fuzz target's check on generated sequences
// with fixed seeds, so it runs in every test run.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 7))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		size := 50 + rng.IntN(400)
		if i%8 == 0 {
			size *= 10 // long enough for groups of many destinations
		}
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		data[0] = byte(i) // every kind
		checkOps(t, data)
		if t.Failed() {
			t.Logf("input %x", data)
			return
		}
	}
}

func FuzzIndex(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range 8 {
		data := make([]byte, 200)
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		data[0] = byte(i)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOps(t, data)
	})
}

// checkExplained checks that a Match's parts agree with its verdict.
func checkExplained(kind Kind, m Match, key string) string {
	switch kind {
	case Topic:
		words := refSplit(key)
		pattern := refSplit(m.Binding.Key)
		if m.Matched && len(m.Words) != len(pattern) {
			return "a match that does not account for every binding word"
		}
		at := 0
		for i, w := range m.Words {
			if w.Pattern != pattern[i] || w.From != at || !slices.Equal(w.Took, words[at:at+len(w.Took)]) {
				return "step " + strconv.Itoa(i) + " does not follow on"
			}
			if w.Pattern != "#" && (len(w.Took) != 1 || w.Pattern != "*" && w.Took[0] != w.Pattern) {
				return "step " + strconv.Itoa(i) + " took the wrong words"
			}
			at += len(w.Took)
		}
		if m.Matched && at != len(words) {
			return "a match that leaves words"
		}
	case Headers:
		good, bad := 0, 0
		for _, h := range m.Headers {
			switch h.Outcome {
			case HeaderMatched, HeaderPresent:
				good++
			case HeaderMissing, HeaderDiffers, HeaderTypeDiffers:
				bad++
			case HeaderIgnored:
			default:
				return "outcome " + h.Outcome.String()
			}
		}
		if want := m.XMatch.all() && bad == 0 || !m.XMatch.all() && good > 0; want != m.Matched {
			return "outcomes " + strconv.Itoa(good) + " good, " + strconv.Itoa(bad) + " bad under " + m.XMatch.String() + " but Matched " + strconv.FormatBool(m.Matched)
		}
	}
	return ""
}
