package filter

import (
	"slices"
	"strings"
)

// Completion states: what the expression expects at the cursor.
type cstate uint8

const (
	cField   cstate = iota // a field name, "!", "("
	cRel                   // a relation, && or ||, ")"
	cValue                 // a value
	cSetOpen               // "{"
	cSet                   // set members, "}"
	cAfter                 // && or ||, ")"
	cBad                   // the text before the cursor does not parse
)

var (
	relSymbols = []string{"==", "!=", "<", "<=", ">", ">=", "contains", "matches", "in", "&&", "||"}
	relWords   = []string{"contains", "matches", "in", "eq", "ne", "lt", "le", "gt", "ge", "and", "or"}
	relOps     = []string{"==", "!=", "===", "!==", "<", "<=", ">", ">=", "~"}
	logicOps   = []string{"&&", "||", "and", "or"}
)

// enumValues lists the values of virtual fields that have a fixed set.
var enumValues = map[string][]string{
	"amqp.checksum":           {`"ok"`, `"mismatch"`, `"absent"`},
	"amqp.checksum.algorithm": {`"crc-32"`, `"adler-32"`},
	"frame.dir":               {`"F"`, `"B"`},
	"proto":                   {`"amqp0-9-1"`, `"amqp1.0"`, `"pgsql"`},
}

// Complete proposes completions for the word that ends at byte offset
// cursor in expr: field names (registered and virtual) where a field is
// expected, relations and && || after a field, the values of fields with
// a fixed set of values ("ok", "mismatch", "absent" for amqp.checksum), and
// && || after a value. The caller replaces expr[replaceFrom:cursor] with
// the chosen candidate. Candidates are sorted for field names and in
// usefulness order otherwise; none means nothing to propose.
func Complete(expr string, cursor int) (replaceFrom int, candidates []string) {
	cursor = max(0, min(cursor, len(expr)))
	src := expr[:cursor]
	lx := lexer{src: src}
	var toks []token
	for {
		t, err := lx.next()
		if err != nil {
			// An unterminated string is a value being typed.
			if err.Msg == "unterminated string" && src[err.Pos] == '"' &&
				state(toks) == cValue {
				return err.Pos, filterPrefix(enumValues[lastField(toks)], src[err.Pos:])
			}
			// The first half of "==", "&&" or "||".
			if err.Pos == len(src)-1 {
				switch st, c := state(toks), src[err.Pos:]; {
				case st == cRel && c == "=":
					return err.Pos, filterPrefix(relOps, c)
				case (st == cRel || st == cAfter) && (c == "&" || c == "|"):
					return err.Pos, filterPrefix(logicOps, c)
				}
			}
			return cursor, nil
		}
		if t.kind == tEOF {
			break
		}
		toks = append(toks, t)
	}
	partial := ""
	from := cursor
	if n := len(toks); n > 0 && toks[n-1].end == cursor {
		switch last := toks[n-1]; last.kind {
		case tWord, tRel, tNot:
			partial, from = last.text, last.pos
			toks = toks[:n-1]
		case tAnd, tOr:
			// A complete && or || wants a space, not a completion.
			return cursor, nil
		}
	}
	switch st := state(toks); st {
	case cField:
		if partial == "!" {
			partial, from = "", cursor
		}
		if partial != "" && !isNameStart(partial[0]) {
			return from, nil
		}
		return from, filterPrefix(fieldNames(), partial)
	case cRel:
		if partial == "" {
			return from, slices.Clone(relSymbols)
		}
		if isNameStart(partial[0]) {
			return from, filterPrefix(relWords, partial)
		}
		return from, filterPrefix(relOps, partial)
	case cValue:
		vals := enumValues[lastField(toks)]
		if partial == "" {
			return from, slices.Clone(vals)
		}
		var out []string
		for _, v := range vals {
			if strings.HasPrefix(v, partial) || strings.HasPrefix(v[1:], partial) {
				out = append(out, v)
			}
		}
		return from, out
	case cAfter:
		if partial == "" {
			return from, slices.Clone(logicOps[:2])
		}
		return from, filterPrefix(logicOps, partial)
	}
	return from, nil
}

// state runs the completion state machine over complete tokens.
func state(toks []token) cstate {
	st := cField
	for _, t := range toks {
		word := ""
		if t.kind == tWord {
			word = t.text
		}
		logic := t.kind == tAnd || t.kind == tOr || word == "and" || word == "or"
		switch st {
		case cField:
			switch {
			case t.kind == tNot || t.kind == tLParen || word == "not" || word == "any" || word == "all":
			case t.kind == tWord && !keywords[word]:
				st = cRel
			default:
				return cBad
			}
		case cRel, cAfter:
			n := node{}
			switch {
			case logic:
				st = cField
			case t.kind == tRParen:
				st = cAfter
			case st == cRel && word == "in":
				st = cSetOpen
			case st == cRel && (t.kind == tRel || t.kind == tWord) && (&parser{tok: t}).relation(&n):
				st = cValue
			default:
				return cBad
			}
		case cValue:
			if t.kind != tWord && t.kind != tString && t.kind != tChar {
				return cBad
			}
			st = cAfter
		case cSetOpen:
			if t.kind != tLBrace {
				return cBad
			}
			st = cSet
		case cSet:
			if t.kind == tRBrace {
				st = cAfter
			}
		}
	}
	return st
}

// lastField returns the field of the test the tokens end in, when they
// end in a field and a relation.
func lastField(toks []token) string {
	if n := len(toks); n >= 2 && toks[n-2].kind == tWord {
		return toks[n-2].text
	}
	return ""
}

func filterPrefix(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}
