package filter

import (
	"strings"

	"github.com/wiretap-dev/wiretap/decode"
)

// Match reports whether u passes the filter. A nil filter matches every
// unit. Virtual fields are read from the unit's header; a tree field is
// looked up through the protocol's finder (decode.Finder) when it can
// answer, and otherwise the field tree is built (u.Fields), at most once
// per call and only when a test that needs it is reached. Match is safe for concurrent use.
func (f *Filter) Match(u *decode.Unit) bool {
	if f == nil || f.root == nil {
		return true
	}
	if u == nil {
		return false
	}
	c := evalCtx{u: u}
	return eval(f.root, &c)
}

// evalCtx carries one Match call's unit and its field tree, once built.
type evalCtx struct {
	u         *decode.Unit
	fields    []*decode.Field
	dissected bool
}

func (c *evalCtx) tree() []*decode.Field {
	if !c.dissected {
		c.dissected = true
		c.fields = c.u.Fields()
	}
	return c.fields
}

func eval(n *node, c *evalCtx) bool {
	if n.fast != fastNone {
		return fastTest(n, c.u)
	}
	switch n.op {
	case nAnd:
		for _, k := range n.kids {
			if !eval(k, c) {
				return false
			}
		}
		return true
	case nOr:
		for _, k := range n.kids {
			if eval(k, c) {
				return true
			}
		}
		return false
	case nNot:
		return !eval(n.kids[0], c)
	case nExists:
		if n.virt != vNone {
			var v value
			return virtualValue(c.u, n.virt, 0, &v)
		}
		if n.memo != nil {
			var v value
			if st := n.memo.lookup(c.u.N, &v); st != memoUnknown {
				return st == memoKept
			}
		}
		ok, handled := false, false
		if !c.dissected {
			_, ok, handled = c.u.FindField(n.field, 0)
		}
		if !handled {
			ok = exists(c.tree(), n.field)
		}
		if !ok && n.memo != nil {
			n.memo.markAbsent(c.u.N)
		}
		return ok
	}
	// nTest: any occurrence decides, or with all, any failing one does;
	// all over no occurrence is false (the field must exist, as in
	// Wireshark).
	found := false
	if n.virt != vNone {
		var v value
		for i := 0; virtualValue(c.u, n.virt, i, &v); i++ {
			found = true
			if test(n, &v) != n.all {
				return !n.all
			}
		}
		return found && n.all
	}
	if n.memo != nil {
		var v value
		switch n.memo.lookup(c.u.N, &v) {
		case memoAbsent:
			return false // a test over no occurrence fails, with any or all
		case memoKept:
			return test(n, &v) // one occurrence: any and all agree
		}
	}
	if !c.dissected {
		if r, found, handled := testFinder(c.u, n); handled {
			if !found && n.memo != nil {
				n.memo.markAbsent(c.u.N)
			}
			return r
		}
	}
	done, r := testTree(c.tree(), n, &found)
	if !found && n.memo != nil {
		n.memo.markAbsent(c.u.N)
	}
	if done {
		return r
	}
	return found && n.all
}

func exists(fs []*decode.Field, name string) bool {
	for _, f := range fs {
		if f.Name == name || exists(f.Kids, name) {
			return true
		}
	}
	return false
}

// testFinder runs n's test over every occurrence of n.field that the
// unit's protocol finder gives, without building the tree; handled false
// means the finder cannot answer and the tree must be searched.
//
// With a memo, a field that occurs once is kept there for the next runs.
func testFinder(u *decode.Unit, n *node) (r, found, handled bool) {
	for k := 0; ; k++ {
		f, ok, h := u.FindField(n.field, k)
		if !h {
			return false, false, false
		}
		if !ok {
			return found && n.all, found, true
		}
		found = true
		var v value
		v.setField(&f)
		if k == 0 && n.memo != nil && n.memo.valued.Load() != valuedNo {
			if _, more, _ := u.FindField(n.field, 1); !more {
				n.memo.keep(u.N, &v)
			}
		}
		if test(n, &v) != n.all {
			return !n.all, true, true
		}
	}
}

// testTree runs n's test over every occurrence of n.field in fs, depth
// first. done says an occurrence decided the result r.
func testTree(fs []*decode.Field, n *node, found *bool) (done, r bool) {
	for _, f := range fs {
		if f.Name == n.field {
			*found = true
			var v value
			v.setField(f)
			if test(n, &v) != n.all {
				return true, !n.all
			}
		}
		if len(f.Kids) > 0 {
			if done, r := testTree(f.Kids, n, found); done {
				return true, r
			}
		}
	}
	return false, false
}

// test applies n's relation (and negation) to one occurrence.
func test(n *node, v *value) bool {
	var r bool
	switch n.rel {
	case rEq:
		r = equal(v, n.lit)
	case rLt, rLe, rGt, rGe:
		c, ok := compare(v, n.lit)
		r = ok && (n.rel == rLt && c < 0 || n.rel == rLe && c <= 0 ||
			n.rel == rGt && c > 0 || n.rel == rGe && c >= 0)
	case rContains:
		r = contains(v, n.lit)
	case rMatches:
		switch v.kind {
		case kNone:
		case kString:
			r = n.re.MatchString(v.s)
		case kBytes:
			r = n.re.Match(v.b)
		default:
			r = n.re.MatchString(v.text())
		}
	case rIn:
		r = inSet(v, n.set)
	}
	return r != n.neg
}

func inSet(v *value, set []setElem) bool {
	for i := range set {
		e := &set[i]
		if e.hi == nil {
			if equal(v, e.lo) {
				return true
			}
			continue
		}
		lo, ok1 := compare(v, e.lo)
		hi, ok2 := compare(v, e.hi)
		if ok1 && ok2 && lo >= 0 && hi <= 0 {
			return true
		}
	}
	return false
}

// fastFor says whether test n can take a fast path: a virtual field that
// occurs at most once and whose value is an integer (frame.len, conn,
// amqp.channel, ...) ordered against an integer literal, or a string
// (type, amqp.method, pgsql.type, ...) tested for equality. On them, "any"
// and "all" agree, and test reduces to one comparison.
func fastFor(n *node) fastKind {
	if n.op != nTest || n.lit == nil {
		return fastNone
	}
	switch {
	case intVirtual(n.virt) && n.lit.num == nInt && n.rel <= rGe:
		return fastInt
	case stringVirtual(n.virt) && n.rel == rEq:
		return fastString
	}
	return fastNone
}

// fastTest is eval of a test marked by fastFor: what test gives on the
// field's one occurrence, false when it is absent.
func fastTest(n *node, u *decode.Unit) bool {
	var r bool
	if n.fast == fastInt {
		x, ok := intValue(u, n.virt)
		if !ok {
			return false
		}
		l := n.lit.i
		switch n.rel {
		case rEq:
			r = x == l
		case rLt:
			r = x < l
		case rLe:
			r = x <= l
		case rGt:
			r = x > l
		case rGe:
			r = x >= l
		}
	} else {
		if n.virt == vAMQPMethod && !n.neg {
			// Equal to a literal with a dot implies a method frame's type.
			return u.Proto == decode.ProtoAMQP091 && u.Type == n.lit.text && strings.IndexByte(n.lit.text, '.') >= 0
		}
		x, ok := stringValue(u, n.virt)
		if !ok {
			return false
		}
		r = x == n.lit.text
	}
	return r != n.neg
}
