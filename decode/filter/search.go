package filter

import (
	"unicode"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/decode"
)

// Search reports whether text occurs, ignoring case, in u's type, summary,
// error or warnings, or in the text of any value in its field tree (byte
// values are searched as they are, not as hex). Empty text matches. The
// field tree is built only when the header does not match.
func Search(u *decode.Unit, text string) bool {
	if text == "" {
		return true
	}
	if u == nil {
		return false
	}
	if containsFold(u.Summary, text) || containsFold(u.Type, text) || containsFold(u.Err(), text) {
		return true
	}
	for _, w := range u.Warnings() {
		if containsFold(w, text) {
			return true
		}
	}
	return searchTree(u.Fields(), text)
}

func searchTree(fs []*decode.Field, text string) bool {
	for _, f := range fs {
		if b, ok := f.Value.([]byte); ok && f.Display == "" {
			if containsFold(string(b), text) {
				return true
			}
		} else if f.Value != nil || f.Display != "" {
			if containsFold(f.Text(), text) {
				return true
			}
		}
		if searchTree(f.Kids, text) {
			return true
		}
	}
	return false
}

// containsFold is strings.Contains under Unicode simple case folding,
// without allocating.
func containsFold(s, sub string) bool {
	if sub == "" {
		return true
	}
	for i := 0; i < len(s); {
		if hasPrefixFold(s[i:], sub) {
			return true
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	for prefix != "" {
		if s == "" {
			return false
		}
		a, na := utf8.DecodeRuneInString(s)
		b, nb := utf8.DecodeRuneInString(prefix)
		if a != b && !equalFoldRune(a, b) {
			return false
		}
		s, prefix = s[na:], prefix[nb:]
	}
	return true
}

func equalFoldRune(a, b rune) bool {
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		return a == b
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}
