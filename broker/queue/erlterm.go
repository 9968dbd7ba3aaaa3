package queue

import "strconv"

// RabbitMQ words its refusals by formatting an Erlang term with io_lib's
// "~p" (invalid expiration '10x': {leftover_string,"x"}), and clients,
// tests and people compare those texts. term is the small part of Erlang's
// term language those reasons use, and appendPretty lays it out as OTP 25's
// io_lib_pretty does, line breaks included: a term that does not fit in
// what is left of the line is broken after the tag of a tagged tuple, and a
// list of bytes that is not a printable string is filled line by line.

type termKind uint8

const (
	termAtom    termKind = iota // written as is: our atoms need no quotes
	termInteger                 // text holds the decimal digits, with any '-'
	termString                  // a list of bytes: "..." when printable, [1,2] when not
	termTuple
)

type term struct {
	kind  termKind
	text  string
	elems []term
}

func atomTerm(name string) term       { return term{kind: termAtom, text: name} }
func intTerm(v int64) term            { return term{kind: termInteger, text: strconv.FormatInt(v, 10)} }
func stringTerm(s string) term        { return term{kind: termString, text: s} }
func tupleTerm(elems ...term) term    { return term{kind: termTuple, elems: elems} }
func tagTerm(tag string, v term) term { return tupleTerm(atomTerm(tag), v) }

// printable says whether Erlang prints the bytes as a string: its
// printable_latin1_list, which is what "~p" asks.
func printable(s string) bool {
	if s == "" {
		return false // the empty list prints as []
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x20 && c <= 0x7e, c >= 0xa0:
		case c == '\n', c == '\r', c == '\t', c == '\v', c == '\b', c == '\f', c == 0x1b:
		default:
			return false
		}
	}
	return true
}

func (t term) appendFlat(dst []byte) []byte {
	switch t.kind {
	case termAtom, termInteger:
		return append(dst, t.text...)
	case termString:
		if !printable(t.text) {
			dst = append(dst, '[')
			for i := 0; i < len(t.text); i++ {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendUint(dst, uint64(t.text[i]), 10)
			}
			return append(dst, ']')
		}
		dst = append(dst, '"')
		for i := 0; i < len(t.text); i++ {
			switch c := t.text[i]; c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\v':
				dst = append(dst, '\\', 'v')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case 0x1b:
				dst = append(dst, '\\', 'e')
			default:
				dst = append(dst, c)
			}
		}
		return append(dst, '"')
	}
	dst = append(dst, '{')
	for i, e := range t.elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = e.appendFlat(dst)
	}
	return append(dst, '}')
}

// column returns the 1-based column after s, as io_lib_format counts
// it for "~p": characters since the last newline.
func column(s string) int {
	c := 1
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			c = 1
		} else {
			c++
		}
	}
	return c
}

// node is a term measured for layout: a leaf is written whole (atoms,
// integers, printable strings, empty lists and tuples), a list or tuple
// may be broken between its elements.
type node struct {
	kind   termKind // termString for a list, termTuple, or termAtom for any leaf
	tagged bool     // a tuple of two or more elements whose first is an atom
	flat   []byte
	kids   []node
}

func (n *node) leaf() bool { return n.kind == termAtom }
func (n *node) len() int   { return len(n.flat) }

func measure(t term) node {
	n := node{kind: termAtom, flat: t.appendFlat(nil)}
	switch {
	case t.kind == termString && !printable(t.text) && t.text != "":
		n.kind = termString
		for i := 0; i < len(t.text); i++ {
			n.kids = append(n.kids, measure(intTerm(int64(t.text[i]))))
		}
	case t.kind == termTuple && len(t.elems) > 0:
		n.kind = termTuple
		n.tagged = len(t.elems) > 1 && t.elems[0].kind == termAtom
		for _, e := range t.elems {
			n.kids = append(n.kids, measure(e))
		}
	}
	return n
}

// layout holds what stays fixed while one term is laid out, in
// io_lib_pretty's terms: the line length, the term's whole length (the
// most any line may hold of it) and the indentation chosen for the rest
// of a tagged tuple (-1: aligned after the tag).
type layout struct {
	ll, max, tind int
}

// appendPretty appends t as "~Wp" prints it when it starts at col (1-based)
// of a line of width ll.
func appendPretty(dst []byte, t term, col, ll int) []byte {
	n := measure(t)
	if n.leaf() || n.len() < ll-col {
		return append(dst, n.flat...)
	}
	l := layout{ll: ll, max: n.len(), tind: 1}
	for _, tind := range [...]int{-1, 4} {
		if c := (layout{ll: ll, max: n.len()}); c.fits(&n, col, tind, 0, 0) {
			l.tind = tind
			break
		}
	}
	return l.pp(dst, &n, col, col-1, 0, 0)
}

func lastDepth(rest []node, ld int) int {
	if len(rest) > 0 {
		return 0
	}
	return ld + 1
}

// sameLine says whether element e of a tail, its comma included in elen,
// stays on the line that has reached col.
func (l *layout) sameLine(e *node, col, ld1, w int) bool {
	elen := 1 + e.len()
	if !e.leaf() {
		return false
	}
	if ld1 == 0 {
		return elen+1 < l.ll-col && w+elen+1 <= l.max
	}
	return elen < l.ll-col-ld1 && w+elen+ld1 <= l.max
}

// pp lays n out at col; ind is the indentation of continuation lines, ld
// the closing characters that follow n, w what the line holds of the term.
func (l *layout) pp(dst []byte, n *node, col, ind, ld, w int) []byte {
	if n.leaf() || (n.len() < l.ll-col-ld && n.len()+w+ld <= l.max) {
		return append(dst, n.flat...)
	}
	if n.kind == termString {
		dst = append(dst, '[')
		return append(l.list(dst, n.kids, col+1, ind+1, ld, w+1), ']')
	}
	dst = append(dst, '{')
	if !n.tagged {
		return append(l.list(dst, n.kids, col+1, ind+1, ld, w+1), '}')
	}
	tag := &n.kids[0]
	tagInd := tag.len() + 2
	dst = append(dst, tag.flat...)
	if l.tind > 0 && tagInd > l.tind {
		dst = l.tail(dst, n.kids[1:], col+l.tind, col+tagInd, ind+l.tind, ld, w+1+tag.len())
	} else {
		dst = append(dst, ',')
		dst = l.list(dst, n.kids[1:], col+tagInd, ind+tagInd, ld, w+1+tag.len()+1)
	}
	return append(dst, '}')
}

func (l *layout) list(dst []byte, es []node, col0, ind, ld, w int) []byte {
	dst, we := l.element(dst, &es[0], col0, ind, lastDepth(es[1:], ld), w)
	return l.tail(dst, es[1:], col0, col0+we, ind, ld, w+we)
}

func (l *layout) tail(dst []byte, es []node, col0, col, ind, ld, w int) []byte {
	for i := range es {
		e := &es[i]
		ld1 := lastDepth(es[i+1:], ld)
		if l.sameLine(e, col, ld1, w) {
			dst = append(dst, ',')
			dst = append(dst, e.flat...)
			col += 1 + e.len()
			w += 1 + e.len()
			continue
		}
		dst = append(dst, ',', '\n')
		for j := 0; j < ind; j++ {
			dst = append(dst, ' ')
		}
		var we int
		dst, we = l.element(dst, e, col0, ind, ld1, 0)
		col, w = col0+we, we
	}
	return dst
}

// element returns the width e took, or ll when it is not a leaf or took
// several lines: that forces what follows onto a new line.
func (l *layout) element(dst []byte, e *node, col, ind, ld, w int) ([]byte, int) {
	if e.leaf() && e.len() < l.ll-col-ld && e.len()+w+ld <= l.max {
		return append(dst, e.flat...), e.len()
	}
	return l.pp(dst, e, col, ind, ld, w), l.ll
}

// fits is io_lib_pretty's cind: whether laying n out with the rest of
// tagged tuples indented by tind keeps every line start within bounds.
func (l *layout) fits(n *node, col, tind, ld, w int) bool {
	if n.leaf() || (n.len() < l.ll-col-ld && n.len()+w+ld <= l.max) {
		return true
	}
	if !n.tagged {
		return l.fitsList(n.kids, col+1, tind, ld, w+1)
	}
	tlen := n.kids[0].len()
	tagInd := tlen + 2
	tcol := col + tagInd
	if tind > 0 && tagInd > tind {
		col1 := col + tind
		if l.max+col1 > l.ll && col1 > l.ll/2 {
			return false
		}
		return l.fitsTail(n.kids[1:], col1, tcol, tind, ld, w+1+tlen)
	}
	if l.max+tcol >= l.ll && tcol >= l.ll/2 {
		return false
	}
	return l.fitsList(n.kids[1:], tcol, tind, ld, w+1+tlen+1)
}

func (l *layout) fitsList(es []node, col0, tind, ld, w int) bool {
	we, ok := l.fitsElement(&es[0], col0, tind, lastDepth(es[1:], ld), w)
	return ok && l.fitsTail(es[1:], col0, col0+we, tind, ld, w+we)
}

func (l *layout) fitsTail(es []node, col0, col, tind, ld, w int) bool {
	for i := range es {
		e := &es[i]
		ld1 := lastDepth(es[i+1:], ld)
		if l.sameLine(e, col, ld1, w) {
			col += 1 + e.len()
			w += 1 + e.len()
			continue
		}
		we, ok := l.fitsElement(e, col0, tind, ld1, 0)
		if !ok {
			return false
		}
		col, w = col0+we, we
	}
	return true
}

func (l *layout) fitsElement(e *node, col, tind, ld, w int) (int, bool) {
	if e.leaf() && e.len() < l.ll-col-ld && e.len()+w+ld <= l.max {
		return e.len(), true
	}
	return l.ll, l.fits(e, col, tind, ld, w)
}
