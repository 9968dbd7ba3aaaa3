package route

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Match is one binding as route explain shows it: whether it matches a
// message, and why.
type Match struct {
	Binding    Binding
	RoutingKey string // the routing key it was matched against
	Matched    bool
	// Why says it in words: `"a" took "orders", "*" took "eu", "#" took
	// no words`, `x-match=any: "format" is "doc", not "pdf"; "type"
	// missing`.
	Why string
	// Words (topic exchanges) is how the binding key's words took the
	// routing key's words; for a binding that does not match, as far as
	// the attempt that got furthest went.
	Words []WordMatch
	// XMatch and Headers (headers exchanges) are the binding's mode and
	// each of its arguments (x-match aside) with its outcome, sorted by
	// key as RabbitMQ compares them.
	XMatch  XMatch
	Headers []HeaderMatch
}

// WordMatch is one word of a topic binding key and the routing key's
// words it took.
type WordMatch struct {
	Pattern string   // the binding key's word: a literal, "*" or "#"
	From    int      // the index of the first routing key word it took
	Took    []string // one word for a literal or "*"; any number for "#"
}

// HeaderOutcome is how one headers binding argument fared.
type HeaderOutcome uint8

// Header outcomes.
const (
	HeaderMatched     HeaderOutcome = iota + 1 // the message has it, with an equal value
	HeaderPresent                              // a void argument: the message has the key, which is all it asks
	HeaderMissing                              // the message lacks the key
	HeaderDiffers                              // the message has it with another value
	HeaderTypeDiffers                          // with a value of a type never equal to the argument's (a string for a number)
	HeaderIgnored                              // an x- argument, not compared under x-match all or any
)

var outcomeNames = [...]string{
	HeaderMatched: "matched", HeaderPresent: "present", HeaderMissing: "missing",
	HeaderDiffers: "differs", HeaderTypeDiffers: "type differs", HeaderIgnored: "ignored",
}

// String names the outcome ("type differs").
func (o HeaderOutcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "HeaderOutcome(" + strconv.Itoa(int(o)) + ")"
}

// HeaderMatch is one headers binding argument and what the message had
// under its key. Binding aliases the index's copy of the arguments,
// Message the headers passed to Explain.
type HeaderMatch struct {
	Key     string
	Binding amqp091.Value
	Message amqp091.Value // zero (Type 0) when the message lacks the key
	Outcome HeaderOutcome
}

// Explain returns every binding, in the order added, with whether it
// matches a message with this routing key and headers and why: the
// destinations of the matching ones are what Route returns. It allocates
// and is meant for route explain, not for routing.
func (ix *Index) Explain(key []byte, headers amqp091.Table) []Match {
	return ix.explain(key, headers, nil)
}

// ExplainRouted is Explain for only the bindings whose destination is in
// routed (what Route returned for the message): the ones that matched,
// and any other binding to the same destinations. It compares each
// binding's destination and explains only those: 22 µs for a publish to a
// topic exchange with 1,000 bindings to 1,000 queues, where Explain takes
// milliseconds.
func (ix *Index) ExplainRouted(key []byte, headers amqp091.Table, routed []Dest) []Match {
	if len(routed) == 0 {
		return nil
	}
	return ix.explain(key, headers, routed)
}

// explain explains every binding, or only those to a destination in
// only when only is not nil.
func (ix *Index) explain(key []byte, headers amqp091.Table, only []Dest) []Match {
	n := ix.n
	if only != nil {
		n = len(only)
	}
	ms := make([]Match, 0, n)
	var words []string
	var hdrs []field
	switch ix.kind {
	case Topic:
		words = splitWords(string(key))
	case Headers:
		hdrs, _ = appendFields(nil, headers)
	}
	for b := ix.head; b != nil; b = b.next {
		if only != nil && !slices.Contains(only, b.dest.Dest) {
			continue
		}
		m := Match{Binding: Binding{Dest: b.dest.Dest, Key: b.key, Args: b.args}, RoutingKey: string(key)}
		switch ix.kind {
		case Fanout:
			m.Matched, m.Why = true, "fanout: every binding matches, whatever the key"
		case Direct:
			if m.Matched = b.key == string(key); m.Matched {
				m.Why = "routing key " + strconv.Quote(b.key) + " is the binding key"
			} else {
				m.Why = "routing key " + strconv.Quote(string(key)) + " is not the binding key " + strconv.Quote(b.key)
			}
		case Topic:
			m.Matched, m.Words, m.Why = explainTopic(splitWords(b.key), words)
		case Headers:
			p := b.pattern
			m.XMatch = p.mode
			m.Matched = headersMatch(p.compared, hdrs, p.mode.all())
			m.Headers, m.Why = explainHeaders(p, hdrs, m.Matched)
		default:
			m.Why = "exchange type " + ix.kind.String() + " routes nothing"
		}
		ms = append(ms, m)
	}
	return ms
}

// explainTopic matches a binding key's words against a routing key's the
// way route does, but keeping how: with p[i:] matching w[j:] known for
// every i and j, a match is read off taking as few words for each "#" as
// will do; a failure is told from the furthest the pattern got.
func explainTopic(p, w []string) (bool, []WordMatch, string) {
	m, n := len(p), len(w)
	// ok[i][j]: p[i:] matches w[j:].
	ok := make([][]bool, m+1)
	for i := range ok {
		ok[i] = make([]bool, n+1)
	}
	ok[m][n] = true
	for i := m - 1; i >= 0; i-- {
		for j := n; j >= 0; j-- {
			switch p[i] {
			case "#":
				ok[i][j] = ok[i+1][j] || j < n && ok[i][j+1]
			case "*":
				ok[i][j] = j < n && ok[i+1][j+1]
			default:
				ok[i][j] = j < n && w[j] == p[i] && ok[i+1][j+1]
			}
		}
	}
	if ok[0][0] {
		steps := make([]WordMatch, 0, m)
		j := 0
		for i := range p {
			k := j + 1
			if p[i] == "#" {
				for k = j; !ok[i+1][k]; k++ {
				}
			}
			steps = append(steps, WordMatch{Pattern: p[i], From: j, Took: w[j:k]})
			j = k
		}
		return true, steps, describeWords(steps, "")
	}
	// from[i][j]: p[:i] can take w[:j], and the j at i-1 it came from.
	from := make([][]int, m+1)
	for i := range from {
		from[i] = make([]int, n+1)
		for j := range from[i] {
			from[i][j] = -1
		}
	}
	from[0][0] = 0
	bi, bj := 0, 0
	for i := 0; i < m; i++ {
		for j := 0; j <= n; j++ {
			if from[i][j] < 0 {
				continue
			}
			switch p[i] {
			case "#":
				for k := j; k <= n; k++ {
					if from[i+1][k] < 0 {
						from[i+1][k] = j
					}
				}
			case "*":
				if j < n && from[i+1][j+1] < 0 {
					from[i+1][j+1] = j
				}
			default:
				if j < n && w[j] == p[i] && from[i+1][j+1] < 0 {
					from[i+1][j+1] = j
				}
			}
		}
	}
	for i := 0; i <= m; i++ {
		for j := 0; j <= n; j++ {
			if from[i][j] >= 0 && (i > bi || i == bi && j > bj) {
				bi, bj = i, j
			}
		}
	}
	steps := make([]WordMatch, bi)
	for i, j := bi, bj; i > 0; i-- {
		k := from[i][j]
		steps[i-1] = WordMatch{Pattern: p[i-1], From: k, Took: w[k:j]}
		j = k
	}
	var why string
	switch {
	case bi == m:
		why = "routing key words left after the binding key: " + strconv.Quote(strings.Join(w[bj:], "."))
	case bj == n:
		why = "routing key ends before " + strconv.Quote(p[bi])
		if len(w) == 0 {
			why = "routing key has no words, the binding key needs " + strconv.Quote(p[bi])
		}
	default:
		why = "routing key word " + strconv.Itoa(bj+1) + " is " + strconv.Quote(w[bj]) + ", not " + strconv.Quote(p[bi])
	}
	return false, steps, describeWords(steps, why)
}

func describeWords(steps []WordMatch, tail string) string {
	var sb strings.Builder
	for _, s := range steps {
		if sb.Len() > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Quote(s.Pattern))
		if len(s.Took) == 0 {
			sb.WriteString(" took no words")
			continue
		}
		sb.WriteString(" took ")
		sb.WriteString(strconv.Quote(strings.Join(s.Took, ".")))
	}
	if len(steps) == 0 && tail == "" {
		return "empty binding key, empty routing key"
	}
	if tail != "" {
		if sb.Len() > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(tail)
	}
	return sb.String()
}

// explainHeaders walks the merge headersMatch does, to its end (the
// outcome is the same without its early exits), noting each argument.
func explainHeaders(p *headerPattern, data []field, matched bool) ([]HeaderMatch, string) {
	var hs []HeaderMatch
	j := 0
	compared := 0
	for _, f := range p.fields {
		if string(f.key) == "x-match" {
			continue
		}
		h := HeaderMatch{Key: string(f.key), Binding: f.val}
		if !p.mode.compared(f.key) {
			h.Outcome = HeaderIgnored
			hs = append(hs, h)
			continue
		}
		compared++
		for j < len(data) && string(data[j].key) < h.Key {
			j++
		}
		switch {
		case j == len(data) || string(data[j].key) != h.Key:
			h.Outcome = HeaderMissing
		default:
			h.Message = data[j].val
			switch {
			case f.val.Type == amqp091.TypeVoid:
				h.Outcome = HeaderPresent
			case looseEqual(f.val, data[j].val):
				h.Outcome = HeaderMatched
			case valueClass(f.val.Type) != valueClass(data[j].val.Type):
				h.Outcome = HeaderTypeDiffers
			default:
				h.Outcome = HeaderDiffers
			}
			j++
		}
		hs = append(hs, h)
	}
	var sb strings.Builder
	sb.WriteString("x-match=")
	sb.WriteString(p.mode.String())
	if compared == 0 {
		if p.mode.all() {
			sb.WriteString(" with nothing to compare: matches every message")
		} else {
			sb.WriteString(" with nothing to compare: matches no message")
		}
	}
	sb.WriteString(": ")
	for i, h := range hs {
		if i > 0 {
			sb.WriteString(", ")
		}
		k := strconv.Quote(h.Key)
		switch h.Outcome {
		case HeaderMatched:
			sb.WriteString(k + " = " + formatValue(h.Binding))
		case HeaderPresent:
			sb.WriteString(k + " present")
		case HeaderMissing:
			sb.WriteString(k + " missing")
		case HeaderDiffers:
			sb.WriteString(k + " is " + formatValue(h.Message) + ", not " + formatValue(h.Binding))
		case HeaderTypeDiffers:
			sb.WriteString(k + " is " + formatValue(h.Message) + " (" + typeName(h.Message.Type) + "), never equal to " +
				formatValue(h.Binding) + " (" + typeName(h.Binding.Type) + ")")
		case HeaderIgnored:
			sb.WriteString(k + " ignored (x- argument)")
		}
	}
	if matched {
		sb.WriteString(": matched")
	} else {
		sb.WriteString(": no match")
	}
	return hs, sb.String()
}

// valueClass groups the types RabbitMQ's == can find equal.
func valueClass(t amqp091.ValueType) byte {
	switch t {
	case amqp091.TypeInt8, amqp091.TypeUint8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeUint16,
		amqp091.TypeInt32, amqp091.TypeUint32, amqp091.TypeInt64, amqp091.TypeUint64,
		amqp091.TypeTimestamp, amqp091.TypeFloat, amqp091.TypeDouble:
		return 'n'
	case amqp091.TypeBytes:
		return byte(amqp091.TypeLongstr)
	}
	return byte(t)
}

// typeName is the type's name without its octet ("int32").
func typeName(t amqp091.ValueType) string {
	s := t.String()
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[i+1:]
	}
	return s
}

// formatValue writes a value for Why.
func formatValue(v amqp091.Value) string {
	switch v.Type {
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return strconv.Quote(string(v.Bytes()))
	case amqp091.TypeVoid:
		return "void"
	case amqp091.TypeBool:
		return strconv.FormatBool(v.Bool())
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case amqp091.TypeUint8, amqp091.TypeUint16, amqp091.TypeUint32, amqp091.TypeTimestamp:
		return strconv.FormatUint(v.Uint(), 10)
	case amqp091.TypeDecimal:
		d := v.Decimal()
		return strconv.Itoa(int(d.Value)) + "e-" + strconv.Itoa(int(d.Scale))
	case amqp091.TypeTable:
		return "a table of " + strconv.Itoa(countFields(v.Bytes(), true)) + " entries"
	case amqp091.TypeArray:
		return "an array of " + strconv.Itoa(countFields(v.Bytes(), false)) + " values"
	}
	if _, ok := numberOf(v); ok {
		return strconv.FormatInt(v.Int(), 10)
	}
	return v.Type.String()
}

func countFields(b []byte, keyed bool) int {
	it := amqp091.Table(b).Iter()
	if !keyed {
		it = amqp091.Array(b).Iter()
	}
	n := 0
	for it.Next() {
		n++
	}
	return n
}
