package route

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// XMatch is a headers binding's x-match argument.
type XMatch uint8

// The x-match modes of RabbitMQ 3.10. Under All and Any, binding
// arguments whose keys start "x-" are not compared; under the -with-x
// modes they are. x-match itself never is.
const (
	All      XMatch = iota // every compared argument must match (the default)
	Any                    // one compared argument must match
	AllWithX               // all, comparing x- arguments too
	AnyWithX               // any, comparing x- arguments too
)

var xMatchNames = [...]string{All: "all", Any: "any", AllWithX: "all-with-x", AnyWithX: "any-with-x"}

// String returns the mode as x-match spells it ("all-with-x").
func (m XMatch) String() string {
	if int(m) < len(xMatchNames) {
		return xMatchNames[m]
	}
	return "XMatch(" + strconv.Itoa(int(m)) + ")"
}

func (m XMatch) all() bool   { return m == All || m == AllWithX }
func (m XMatch) withX() bool { return m == AllWithX || m == AnyWithX }

// parseXMatch reads the mode from a binding's sorted arguments as
// RabbitMQ does: the first x-match entry, if it is a longstr naming a
// mode; anything else is all (CheckBinding refuses it up front).
func parseXMatch(fs []field) XMatch {
	for _, f := range fs {
		if string(f.key) != "x-match" {
			continue
		}
		if f.val.Type == amqp091.TypeLongstr {
			for m, name := range xMatchNames {
				if string(f.val.Bytes()) == name {
					return XMatch(m)
				}
			}
		}
		break
	}
	return All
}

// compared reports whether a binding argument takes part in matching.
func (m XMatch) compared(key []byte) bool {
	if string(key) == "x-match" {
		return false
	}
	return m.withX() || !bytes.HasPrefix(key, []byte("x-"))
}

// headerPattern is a headers binding as the index matches it.
type headerPattern struct {
	b    *binding
	mode XMatch
	// fields are the arguments sorted by key, aliasing the index's copy;
	// compared are those the mode compares (x-match and, but for the
	// -with-x modes, x- keys left out: headers_match skips them without
	// looking at the headers, so leaving them out changes nothing), with
	// their hashed forms.
	fields   []field
	compared []field
	// always: an all binding with nothing to compare matches every
	// message; otherwise the keys it is found under in byAnchor.
	always  bool
	anchors []string
	// Where the pattern is in h.always (slots[0]) or in the byAnchor list
	// of each anchor, so that removing it costs the same however many
	// bindings share an anchor.
	slots []int
	mark  uint64 // the Route call that last tried it
}

func newHeaderPattern(b *binding, canon amqp091.Table) *headerPattern {
	fs, _ := appendFields(nil, canon)
	p := &headerPattern{b: b, mode: parseXMatch(fs), fields: fs}
	for _, f := range fs {
		if !p.mode.compared(f.key) {
			continue
		}
		var a []byte
		if f.val.Type != amqp091.TypeVoid {
			a = append(append(a, 'v', byte(len(f.key))), f.key...)
			var ok bool
			if a, ok = appendAnchorValue(a, f.val); ok {
				f.norm = a[2+len(f.key):]
			} else {
				a = a[:0]
			}
		}
		if f.norm == nil {
			a = append(append(a, 'k'), f.key...)
		}
		p.compared = append(p.compared, f)
		anchor := string(a)
		if p.mode.all() {
			// One argument that must match is enough to find the
			// binding by; the first whose value is hashed is the
			// most selective.
			if len(p.anchors) == 0 || anchor[0] == 'v' && p.anchors[0][0] != 'v' {
				p.anchors = append(p.anchors[:0], anchor)
			}
			continue
		}
		if !slices.Contains(p.anchors, anchor) {
			p.anchors = append(p.anchors, anchor)
		}
	}
	p.always = p.mode.all() && len(p.anchors) == 0
	return p
}

// headersIndex finds a headers exchange's bindings by their arguments:
// each binding is filed under anchors, a key and value it compares ("v",
// the key's length, the key and the value's hashed form) or a key whose
// presence it tests ("k" and the key: void arguments, which match on
// presence, and tables, arrays and NaN, which are not hashed). A message
// looks up only the anchors its own headers make, then checks the
// bindings found with RabbitMQ's full algorithm. An all binding is filed
// under one argument it requires (a message without it cannot match),
// an any binding under each of its arguments (one of them must match).
// Values are hashed in a form equal for values RabbitMQ finds equal
// ([appendAnchorValue]: 1, 1.0 and an int8 1 alike). So a message never
// scans bindings whose arguments it has none of.
type headersIndex struct {
	always   []*headerPattern
	byAnchor map[string][]*headerPattern
	// How many anchors of each kind are filed, so a message skips the
	// lookups that cannot find anything.
	keyAnchors, valueAnchors int
	hdrs                     []field // the message's headers, sorted, with hashed forms
	spans                    []anchorSpan
	abuf, kbuf               []byte
}

// anchorSpan locates a header's value anchor in headersIndex.abuf; norm
// is where its hashed form starts, -1 when it has none.
type anchorSpan struct{ start, norm, end int }

func (h *headersIndex) add(p *headerPattern) {
	if p.always {
		p.slots = []int{len(h.always)}
		h.always = append(h.always, p)
		return
	}
	if h.byAnchor == nil {
		h.byAnchor = make(map[string][]*headerPattern)
	}
	p.slots = make([]int, len(p.anchors))
	for i, a := range p.anchors {
		p.slots[i] = len(h.byAnchor[a])
		h.byAnchor[a] = append(h.byAnchor[a], p)
		h.count(a, 1)
	}
}

func (h *headersIndex) count(anchor string, delta int) {
	if anchor[0] == 'k' {
		h.keyAnchors += delta
	} else {
		h.valueAnchors += delta
	}
}

func (h *headersIndex) remove(p *headerPattern) {
	if p.always {
		h.always = removeSlot(h.always, p.slots[0], "")
		return
	}
	for i, a := range p.anchors {
		ps := removeSlot(h.byAnchor[a], p.slots[i], a)
		h.count(a, -1)
		if len(ps) == 0 {
			delete(h.byAnchor, a)
		} else {
			h.byAnchor[a] = ps
		}
	}
}

// removeSlot removes ps[i], moving the last pattern into its place and
// noting its new slot in the list of anchor a ("" for h.always).
func removeSlot(ps []*headerPattern, i int, a string) []*headerPattern {
	last := len(ps) - 1
	if i < last {
		moved := ps[last]
		ps[i] = moved
		if a == "" {
			moved.slots[0] = i
		} else {
			moved.slots[slices.Index(moved.anchors, a)] = i
		}
	}
	ps[last] = nil
	return ps[:last]
}

func (h *headersIndex) route(headers amqp091.Table, gen uint64, dst []Dest) []Dest {
	for _, p := range h.always {
		if rec := p.b.dest; rec.mark != gen {
			rec.mark = gen
			dst = append(dst, rec.Dest)
		}
	}
	if len(h.byAnchor) == 0 {
		return dst
	}
	// A malformed table routes by the headers before the fault.
	h.hdrs, _ = appendFields(h.hdrs[:0], headers)
	// Every header's value anchor, in one buffer; the hashed forms are
	// sliced out of it once it has stopped growing.
	h.abuf, h.spans = h.abuf[:0], h.spans[:0]
	for i := range h.hdrs {
		f := &h.hdrs[i]
		sp := anchorSpan{start: len(h.abuf), norm: -1}
		if f.val.Type != amqp091.TypeVoid {
			h.abuf = append(append(h.abuf, 'v', byte(len(f.key))), f.key...)
			n := len(h.abuf)
			var ok bool
			if h.abuf, ok = appendAnchorValue(h.abuf, f.val); ok {
				sp.norm = n
			} else {
				h.abuf = h.abuf[:sp.start]
			}
		}
		sp.end = len(h.abuf)
		h.spans = append(h.spans, sp)
	}
	for i := range h.hdrs {
		f, sp := &h.hdrs[i], h.spans[i]
		f.norm = nil
		if sp.norm >= 0 {
			f.norm = h.abuf[sp.norm:sp.end:sp.end]
		}
	}
	for i := range h.hdrs {
		f, sp := &h.hdrs[i], h.spans[i]
		if h.keyAnchors > 0 {
			h.kbuf = append(append(h.kbuf[:0], 'k'), f.key...)
			dst = h.check(h.byAnchor[string(h.kbuf)], gen, dst)
		}
		if h.valueAnchors > 0 && sp.norm >= 0 {
			dst = h.check(h.byAnchor[string(h.abuf[sp.start:sp.end])], gen, dst)
		}
	}
	clear(h.hdrs) // they alias the message
	return dst
}

// check appends the destinations of the candidates that match.
func (h *headersIndex) check(ps []*headerPattern, gen uint64, dst []Dest) []Dest {
	for _, p := range ps {
		if p.mark == gen {
			continue
		}
		p.mark = gen
		rec := p.b.dest
		if rec.mark == gen {
			continue // routed there already: no need to know
		}
		if headersMatch(p.compared, h.hdrs, p.mode.all()) {
			rec.mark = gen
			dst = append(dst, rec.Dest)
		}
	}
	return dst
}

// headersMatch is RabbitMQ 3.10's headers_match: a merge of the binding's
// compared arguments and the message's headers, both sorted by key,
// under x-match all (isAll) or any. Duplicate keys are met in that merge
// as RabbitMQ meets them (each header satisfies at most one argument).
func headersMatch(pattern, data []field, isAll bool) bool {
	allMatch, anyMatch := true, false
	i, j := 0, 0
	for i < len(pattern) {
		if j == len(data) {
			return !isAll && anyMatch
		}
		p, d := &pattern[i], &data[j]
		switch c := bytes.Compare(p.key, d.key); {
		case c > 0:
			j++
			continue
		case c < 0:
			allMatch = false
			i++
		default:
			if p.val.Type == amqp091.TypeVoid || p.equal(d) {
				anyMatch = true
			} else {
				allMatch = false
			}
			i++
			j++
		}
		if isAll && !allMatch {
			return false
		}
		if !isAll && anyMatch {
			return true
		}
	}
	if isAll {
		return allMatch
	}
	return anyMatch
}
