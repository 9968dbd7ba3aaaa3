package auth

import (
	"regexp"
	"unicode/utf8"
)

// pattern is one permission regular expression, compiled once.
//
// RabbitMQ matches with Erlang's re:run(Name, Regexp) without options:
// PCRE, unanchored (configure "q" grants "aqb"), and byte-wise, since
// neither side is flagged unicode ("^.$" refuses "é", two bytes). Go's
// regexp works on UTF-8 runes, so a pattern or a name holding bytes above
// 0x7F is turned into one rune per byte (Latin-1) before matching, which
// gives PCRE's byte semantics; ASCII, the usual case, is matched as it is.
// The empty pattern is RabbitMQ's "^$".
type pattern struct {
	src string
	all bool // ".*" or alike: every name, without running the regexp
	re  *regexp.Regexp
}

func compilePattern(src string) (*pattern, error) {
	p := &pattern{src: src}
	switch src {
	case ".*", "^.*", ".*$":
		p.all = true
		return p, nil
	case "":
		src = "^$"
	}
	re, err := regexp.Compile(latin1(src))
	if err != nil {
		return nil, &RegexpError{Pattern: p.src, Err: err}
	}
	p.re = re
	return p, nil
}

func (p *pattern) match(name string) bool {
	if p.all {
		return true
	}
	if isASCII(name) {
		return p.re.MatchString(name)
	}
	return p.re.MatchString(latin1(name))
}

// RegexpError is a permission pattern Go cannot compile. Most of PCRE is
// accepted; what RE2 lacks (look-around, back-references, possessive and
// atomic groups) is refused here though RabbitMQ would take it.
type RegexpError struct {
	Pattern string
	Err     error
}

func (e *RegexpError) Error() string {
	return "auth: invalid permission regexp '" + e.Pattern + "': " + e.Err.Error()
}

func (e *RegexpError) Unwrap() error { return e.Err }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// latin1 returns s with every byte as the rune of the same value.
func latin1(s string) string {
	if isASCII(s) {
		return s
	}
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = utf8.AppendRune(b, rune(s[i]))
	}
	return string(b)
}
