package filter

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/wiretap-dev/wiretap/decode"
)

// MaxDepth bounds how deeply parentheses and negations may nest, so that a
// hostile expression cannot exhaust the stack.
const MaxDepth = 64

// Error is a compile error. Pos and Len give the byte range of the
// offending text in the expression, for the filter bar to underline.
type Error struct {
	Pos  int    // byte offset, from 0
	Len  int    // bytes to underline, at least 1 unless Pos is the end
	Msg  string // what is wrong, without the position
	Hint string // a suggestion ("did you mean amqp.method?"), or empty
}

// Error renders the error with its column counted from 1, as editors do:
// `filter: unknown field "amqp.methd" at column 1; did you mean amqp.method?`.
func (e *Error) Error() string {
	s := "filter: " + e.Msg + " at column " + strconv.Itoa(e.Pos+1)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Filter is a compiled display filter. It is immutable and safe for
// concurrent use.
type Filter struct {
	expr     string
	root     *node // nil matches everything
	dissects bool
	deep     bool // see Shallow
}

// String returns the expression the filter was compiled from.
func (f *Filter) String() string {
	if f == nil {
		return ""
	}
	return f.expr
}

// Dissects reports whether Match needs units' field trees (the expression
// names a field that is not virtual), which makes it much slower.
func (f *Filter) Dissects() bool { return f != nil && f.dissects }

// Shallow reports whether Match reads nothing of a unit but its plain
// fields: N, Offset, Len, its time, Conn, Type, Channel and HasChannel,
// Dir, Proto, Secret, and the N of its Parent. A unit rebuilt with those
// alone, such as a record of a unit whose bytes were put aside, then gets
// the answer the whole unit gets. The fields read from elsewhere are the
// tree fields, summary, error, warning, amqp.checksum(.algorithm),
// amqp.message_id, and the bytes amqp and pgsql give when tested (present
// alone, they are shallow). A filter that matches everything is shallow.
func (f *Filter) Shallow() bool { return f == nil || !f.deep }

type nodeOp uint8

const (
	nAnd nodeOp = iota
	nOr
	nNot
	nExists
	nTest
)

type relation uint8

const (
	rEq relation = iota
	rLt
	rLe
	rGt
	rGe
	rContains
	rMatches
	rIn
)

// node is one node of the expression tree. And and Or are n-ary so that
// long chains do not nest.
type node struct {
	op   nodeOp
	kids []*node

	// nExists and nTest
	field string
	virt  vid

	// nTest: the test is rel, negated by neg, over any occurrence of the
	// field, or all of them when all is set (and at least one exists).
	rel relation
	neg bool
	all bool
	lit *literal
	re  *regexp.Regexp
	set []setElem

	// memo, for tree fields compiled with a Memo, remembers what units
	// hold for the field.
	memo *fieldMemo

	// fast, when set, says the test can skip the general value machinery:
	// an integer virtual field ordered against an integer literal, or a
	// string virtual field tested for equality (see fastTest).
	fast fastKind
}

type fastKind uint8

const (
	fastNone fastKind = iota
	fastInt
	fastString
)

// setElem is a member of an "in" set: a value, or a range lo..hi when hi
// is set.
type setElem struct{ lo, hi *literal }

// Compile parses a display filter. An expression of only white space
// compiles to a filter that matches every unit. Errors are *[Error].
func Compile(expr string) (*Filter, error) { return CompileWith(expr, nil) }

// CompileWith is Compile with a memory of what units hold for tree
// fields, shared by the filters of one browsing session (see [Memo]); nil
// is Compile.
func CompileWith(expr string, memo *Memo) (*Filter, error) {
	names, open := knownNames()
	p := parser{lex: lexer{src: expr}, names: names, open: open, memo: memo}
	if err := p.advance(); err != nil {
		return nil, err
	}
	f := &Filter{expr: expr}
	if p.tok.kind == tEOF {
		return f, nil
	}
	root, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		if p.tok.kind == tRParen {
			return nil, p.errTok(`unexpected ")" without a matching "("`)
		}
		e := p.errTok("unexpected " + p.describe() + " after a complete expression")
		e.Hint = "join tests with && or ||"
		return nil, e
	}
	f.root, f.dissects, f.deep = root, p.dissects, deep(root)
	return f, nil
}

type parser struct {
	lex      lexer
	tok      token
	names    []string
	open     []string // open tables: any name under them is valid
	memo     *Memo
	dissects bool
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errTok(msg string) *Error {
	n := p.tok.end - p.tok.pos
	return &Error{Pos: p.tok.pos, Len: n, Msg: msg}
}

// describe names the current token for "expected X, found Y" messages.
func (p *parser) describe() string {
	switch p.tok.kind {
	case tEOF:
		return "end of filter"
	case tString:
		return "string " + shorten(p.tok.text)
	case tChar:
		return "character " + shorten(p.tok.text)
	}
	return quoteText(p.tok.text)
}

func (p *parser) isWord(words ...string) bool {
	if p.tok.kind != tWord {
		return false
	}
	for _, w := range words {
		if p.tok.text == w {
			return true
		}
	}
	return false
}

func (p *parser) or(depth int) (*node, error) {
	n, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tOr || p.isWord("or") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		m, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		n = join(nOr, n, m)
	}
	return n, nil
}

func (p *parser) and(depth int) (*node, error) {
	n, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tAnd || p.isWord("and") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		m, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		n = join(nAnd, n, m)
	}
	return n, nil
}

// join appends m to n when n is already an op node, so chains stay flat.
func join(op nodeOp, n, m *node) *node {
	if n.op == op {
		n.kids = append(n.kids, m)
		return n
	}
	return &node{op: op, kids: []*node{n, m}}
}

func (p *parser) unary(depth int) (*node, error) {
	if depth >= MaxDepth {
		return nil, p.errTok("expression nested too deeply (more than " + strconv.Itoa(MaxDepth) + " levels)")
	}
	switch {
	case p.tok.kind == tNot || p.isWord("not"):
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		if n.op == nNot { // !!x is x
			return n.kids[0], nil
		}
		return &node{op: nNot, kids: []*node{n}}, nil
	case p.tok.kind == tLParen:
		open := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tRParen {
			return nil, p.errTok(`empty "()"`)
		}
		n, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			if p.tok.kind == tEOF {
				return nil, &Error{Pos: open.pos, Len: 1, Msg: `unclosed "("`}
			}
			return nil, p.errTok("expected \")\", && or ||, found " + p.describe())
		}
		return n, p.advance()
	}
	return p.test()
}

var keywords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "contains": true, "matches": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"any_eq": true, "all_ne": true, "all_eq": true, "any_ne": true, "any": true, "all": true,
}

// test parses: [ "any" | "all" ] field [ relation value ].
func (p *parser) test() (*node, error) {
	quant := ""
	if p.isWord("any", "all") {
		quant = p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if p.tok.kind != tWord || keywords[p.tok.text] || !isNameStart(p.tok.text[0]) {
		return nil, p.errTok("expected a field name, found " + p.describe())
	}
	n := &node{op: nExists, field: p.tok.text}
	if err := p.resolve(n); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.relation(n) {
		if quant != "" {
			return nil, p.errTok(`expected a comparison after "` + quant + " " + n.field + `", found ` + p.describe())
		}
		switch p.tok.kind {
		case tEOF, tRParen, tAnd, tOr:
		default:
			if !p.isWord("and", "or") {
				return nil, p.errTok("expected a relation (==, !=, <, >, contains, matches, in) or && || after " +
					n.field + ", found " + p.describe())
			}
		}
		return n, nil
	}
	switch quant {
	case "any":
		n.all = false
	case "all":
		n.all = true
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.operand(n); err != nil {
		return nil, err
	}
	n.fast = fastFor(n)
	return n, nil
}

// resolve checks the field name and decides how Match reads it.
func (p *parser) resolve(n *node) error {
	if v, ok := virtualByName[n.field]; ok {
		n.virt = v
		return nil
	}
	if !isKnown(p.names, p.open, n.field) {
		e := p.errTok("unknown field " + strconv.Quote(n.field))
		if s := nearest(p.names, n.field); s != "" {
			e.Hint = "did you mean " + s + "?"
		}
		return e
	}
	p.dissects = true
	n.memo = p.memo.field(n.field)
	return nil
}

// relation turns n into a test if the current token is a relation, which
// it leaves current.
func (p *parser) relation(n *node) bool {
	t := p.tok
	switch t.kind {
	case tRel:
		switch t.text {
		case "==":
			n.rel = rEq
		case "!=":
			n.rel, n.neg, n.all = rEq, true, true
		case "===":
			n.rel, n.all = rEq, true
		case "!==":
			n.rel, n.neg = rEq, true
		case "<":
			n.rel = rLt
		case "<=":
			n.rel = rLe
		case ">":
			n.rel = rGt
		case ">=":
			n.rel = rGe
		case "~":
			n.rel = rMatches
		default:
			return false
		}
	case tWord:
		switch t.text {
		case "eq", "any_eq":
			n.rel = rEq
		case "ne", "all_ne":
			n.rel, n.neg, n.all = rEq, true, true
		case "all_eq":
			n.rel, n.all = rEq, true
		case "any_ne":
			n.rel, n.neg = rEq, true
		case "lt":
			n.rel = rLt
		case "le":
			n.rel = rLe
		case "gt":
			n.rel = rGt
		case "ge":
			n.rel = rGe
		case "contains":
			n.rel = rContains
		case "matches":
			n.rel = rMatches
		case "in":
			n.rel = rIn
		default:
			return false
		}
	default:
		return false
	}
	n.op = nTest
	return true
}

// operand parses what follows the relation.
func (p *parser) operand(n *node) error {
	switch n.rel {
	case rMatches:
		if p.tok.kind != tString {
			return p.errTok("matches needs a quoted regular expression, found " + p.describe())
		}
		re, err := regexp.Compile(p.tok.val)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
			return p.errTok("invalid regular expression: " + msg)
		}
		n.re = re
		return p.advance()
	case rIn:
		return p.set(n)
	}
	l, err := p.literal()
	if err != nil {
		return err
	}
	n.lit = l
	return nil
}

// literal parses one value and advances past it.
func (p *parser) literal() (*literal, error) {
	switch p.tok.kind {
	case tString, tChar:
	case tWord:
		if p.isWord("and", "or", "not") {
			e := p.errTok("expected a value, found " + p.describe())
			e.Hint = "quote it to compare with the word"
			return nil, e
		}
	default:
		return nil, p.errTok("expected a value, found " + p.describe())
	}
	l := newLiteral(p.tok)
	return l, p.advance()
}

// set parses { elem [,] elem ... } where elem is value or value..value.
func (p *parser) set(n *node) error {
	if p.tok.kind != tLBrace {
		return p.errTok(`expected "{" to start a set, found ` + p.describe())
	}
	open := p.tok
	if err := p.advance(); err != nil {
		return err
	}
	for {
		switch p.tok.kind {
		case tRBrace:
			if len(n.set) == 0 {
				return p.errTok("empty set")
			}
			return p.advance()
		case tEOF:
			return &Error{Pos: open.pos, Len: 1, Msg: `unclosed "{"`}
		case tComma:
			if len(n.set) == 0 {
				return p.errTok("expected a value, found \",\"")
			}
			if err := p.advance(); err != nil {
				return err
			}
		}
		lo, err := p.literal()
		if err != nil {
			return err
		}
		e := setElem{lo: lo}
		if p.tok.kind == tDotDot {
			if err := p.advance(); err != nil {
				return err
			}
			if e.hi, err = p.literal(); err != nil {
				return err
			}
		}
		n.set = append(n.set, e)
	}
}

// knownNames returns the registered field names, sorted, and those of
// them that are open tables. The lists are shared and made again only
// when the registry changes.
func knownNames() (names, open []string) {
	fs := decode.FieldNames()
	known.mu.Lock()
	defer known.mu.Unlock()
	if len(fs) == 0 || len(fs) != len(known.names) || &fs[0] != known.from {
		known.names, known.open = make([]string, len(fs)), nil
		for i, f := range fs {
			known.names[i] = f.Name
			if f.Open {
				known.open = append(known.open, f.Name)
			}
		}
		known.from = nil
		if len(fs) > 0 {
			known.from = &fs[0]
		}
	}
	return known.names, known.open
}

// known caches knownNames' lists, made from the registry's slice from.
var known struct {
	mu          sync.Mutex
	from        *decode.FieldName
	names, open []string
}

// isKnown reports whether name is registered, is the parent of a
// registered name (amqp.method.arguments for
// amqp.method.arguments.routing_key), as containers in trees are, or is
// an entry of an open table (amqp.method.properties.headers.x-trace-id).
func isKnown(names, open []string, name string) bool {
	for _, o := range open {
		if len(name) > len(o)+1 && name[len(o)] == '.' && strings.HasPrefix(name, o) {
			return true
		}
	}
	i := sort.SearchStrings(names, name)
	if i < len(names) && names[i] == name {
		return true
	}
	prefix := name + "."
	j := sort.SearchStrings(names, prefix)
	return j < len(names) && strings.HasPrefix(names[j], prefix)
}

func isNameStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

// fieldNames returns the registered field names, sorted.
func fieldNames() []string {
	names, _ := knownNames()
	return names
}
