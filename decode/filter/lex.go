package filter

import (
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // field name, keyword or unquoted literal
	tString         // "quoted" or r"raw"; val holds the unescaped text
	tChar           // 'c'; val holds the character
	tLParen         // (
	tRParen         // )
	tLBrace         // {
	tRBrace         // }
	tComma          // ,
	tDotDot         // ..
	tRel            // == != === !== < <= > >= ~
	tAnd            // &&
	tOr             // ||
	tNot            // !
)

// token is one lexeme; pos and end are byte offsets into the expression.
type token struct {
	kind     tokKind
	pos, end int
	text     string // the source text
	val      string // unescaped value of tString and tChar
}

// isWordByte reports whether c can be part of a bare word. Words carry field
// names (amqp.method), numbers (0x1f, -1, 2.5e3) and unquoted values
// (basic.publish, 10.0.0.1, 2024-01-02T15:04:05Z, aa:bb:cc); bytes at or
// above 0x80 admit UTF-8 text.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == ':' || c == '/' || c == '+' || c >= 0x80
}

// lexer scans an expression one token at a time.
type lexer struct {
	src string
	pos int
}

// next returns the next token. On a lexical error it returns the error and
// a token whose pos and end span the offending text.
func (l *lexer) next() (token, *Error) {
	for l.pos < len(l.src) {
		switch l.src[l.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			l.pos++
			continue
		}
		break
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := l.src[start]
	tok := func(k tokKind, n int) (token, *Error) {
		l.pos = start + n
		return token{kind: k, pos: start, end: l.pos, text: l.src[start:l.pos]}, nil
	}
	at := func(i int) byte {
		if start+i < len(l.src) {
			return l.src[start+i]
		}
		return 0
	}
	switch c {
	case '(':
		return tok(tLParen, 1)
	case ')':
		return tok(tRParen, 1)
	case '{':
		return tok(tLBrace, 1)
	case '}':
		return tok(tRBrace, 1)
	case ',':
		return tok(tComma, 1)
	case '~':
		return tok(tRel, 1)
	case '=':
		if at(1) == '=' {
			if at(2) == '=' {
				return tok(tRel, 3)
			}
			return tok(tRel, 2)
		}
		return token{}, l.failHint(start, 1, `unexpected "="`, `use "==" to compare`)
	case '!':
		if at(1) == '=' {
			if at(2) == '=' {
				return tok(tRel, 3)
			}
			return tok(tRel, 2)
		}
		return tok(tNot, 1)
	case '<', '>':
		if at(1) == '=' {
			return tok(tRel, 2)
		}
		return tok(tRel, 1)
	case '&':
		if at(1) == '&' {
			return tok(tAnd, 2)
		}
		return token{}, l.failHint(start, 1, `unexpected "&"`, `use "&&" for and`)
	case '|':
		if at(1) == '|' {
			return tok(tOr, 2)
		}
		return token{}, l.failHint(start, 1, `unexpected "|"`, `use "||" for or`)
	case '"':
		return l.quoted(start, start+1, false)
	case '\'':
		return l.char(start)
	case '.':
		if at(1) == '.' {
			return tok(tDotDot, 2)
		}
	case 'r':
		if at(1) == '"' {
			return l.quoted(start, start+2, true)
		}
	}
	if !isWordByte(c) {
		_, n := utf8.DecodeRuneInString(l.src[start:])
		return token{}, l.fail(start, n, "unexpected "+quoteText(l.src[start:start+n]))
	}
	i := start
	for i < len(l.src) && isWordByte(l.src[i]) {
		// ".." ends a word so that set ranges read naturally: {1..5}.
		if l.src[i] == '.' && i+1 < len(l.src) && l.src[i+1] == '.' {
			break
		}
		i++
	}
	return tok(tWord, i-start)
}

func (l *lexer) fail(pos, n int, msg string) *Error { return l.failHint(pos, n, msg, "") }

func (l *lexer) failHint(pos, n int, msg, hint string) *Error {
	l.pos = len(l.src)
	return &Error{Pos: pos, Len: n, Msg: msg, Hint: hint}
}

// quoted scans a double-quoted string whose body starts at body. Escapes
// are Wireshark's: \" \' \\ \a \b \f \n \r \t \v \NNN (octal) \xNN
// \uNNNN \UNNNNNNNN. In a raw string (r"...") a backslash is kept as it is
// and only keeps a following quote from ending the string.
func (l *lexer) quoted(start, body int, raw bool) (token, *Error) {
	var b strings.Builder
	plain := true // no escape seen: the value is a substring of src
	i := body
	for i < len(l.src) {
		c := l.src[i]
		if c == '"' {
			l.pos = i + 1
			t := token{kind: tString, pos: start, end: l.pos, text: l.src[start:l.pos]}
			if plain {
				t.val = l.src[body:i]
			} else {
				t.val = b.String()
			}
			return t, nil
		}
		if c != '\\' {
			if !plain {
				b.WriteByte(c)
			}
			i++
			continue
		}
		if plain {
			plain = false
			b.WriteString(l.src[body:i])
		}
		if raw {
			b.WriteByte('\\')
			if i+1 < len(l.src) {
				b.WriteByte(l.src[i+1])
			}
			i += 2
			continue
		}
		n, err := l.escape(i, &b)
		if err != nil {
			return token{}, err
		}
		i += n
	}
	return token{}, l.fail(start, len(l.src)-start, "unterminated string")
}

// escape decodes the escape sequence at src[i] (a backslash) into b and
// returns its length.
func (l *lexer) escape(i int, b *strings.Builder) (int, *Error) {
	if i+1 >= len(l.src) {
		return 0, l.fail(i, 1, "unterminated string")
	}
	c := l.src[i+1]
	switch c {
	case '\'', '"', '\\':
		b.WriteByte(c)
		return 2, nil
	case 'a':
		b.WriteByte('\a')
		return 2, nil
	case 'b':
		b.WriteByte('\b')
		return 2, nil
	case 'f':
		b.WriteByte('\f')
		return 2, nil
	case 'n':
		b.WriteByte('\n')
		return 2, nil
	case 'r':
		b.WriteByte('\r')
		return 2, nil
	case 't':
		b.WriteByte('\t')
		return 2, nil
	case 'v':
		b.WriteByte('\v')
		return 2, nil
	case 'x':
		v, n := hexDigits(l.src[i+2:], 2)
		if n == 0 {
			return 0, l.fail(i, 2, `invalid escape "\x": want hex digits`)
		}
		b.WriteByte(byte(v))
		return 2 + n, nil
	case 'u', 'U':
		want := 4
		if c == 'U' {
			want = 8
		}
		v, n := hexDigits(l.src[i+2:], want)
		if n != want || v > utf8.MaxRune || v >= 0xd800 && v < 0xe000 {
			return 0, l.fail(i, 2+n, "invalid escape "+quoteText(l.src[i:i+2+n]))
		}
		b.WriteRune(rune(v))
		return 2 + n, nil
	}
	if c >= '0' && c <= '7' {
		v, n := 0, 0
		for n < 3 && i+1+n < len(l.src) && l.src[i+1+n] >= '0' && l.src[i+1+n] <= '7' {
			v = v*8 + int(l.src[i+1+n]-'0')
			n++
		}
		if v > 0xff {
			return 0, l.fail(i, 1+n, "invalid escape "+quoteText(l.src[i:i+1+n])+": octal value above \\377")
		}
		b.WriteByte(byte(v))
		return 1 + n, nil
	}
	_, n := utf8.DecodeRuneInString(l.src[i+1:])
	return 0, l.fail(i, 1+n, "invalid escape "+quoteText(l.src[i:i+1+n]))
}

// char scans a C-style character constant ('a', '\n', '\x0a'), which
// stands for the character's code.
func (l *lexer) char(start int) (token, *Error) {
	var b strings.Builder
	i := start + 1
	if i < len(l.src) && l.src[i] == '\\' {
		n, err := l.escape(i, &b)
		if err != nil {
			return token{}, err
		}
		i += n
	} else if i < len(l.src) && l.src[i] != '\'' {
		_, n := utf8.DecodeRuneInString(l.src[i:])
		b.WriteString(l.src[i : i+n])
		i += n
	}
	if i >= len(l.src) || l.src[i] != '\'' || b.Len() == 0 {
		end := strings.IndexByte(l.src[start+1:], '\'')
		n := len(l.src) - start
		if end >= 0 {
			n = end + 2
		}
		return token{}, l.failHint(start, n, "invalid character constant", "use double quotes for strings")
	}
	l.pos = i + 1
	return token{kind: tChar, pos: start, end: l.pos, text: l.src[start:l.pos], val: b.String()}, nil
}

// hexDigits reads up to max hex digits from the front of s.
func hexDigits(s string, max int) (v, n int) {
	for n < max && n < len(s) {
		d := unhex(s[n])
		if d < 0 {
			break
		}
		v = v<<4 | d
		n++
	}
	return v, n
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// quoteText quotes s for an error message, keeping it short.
func quoteText(s string) string { return `"` + shorten(s) + `"` }

// shorten cuts s to a length fit for an error message.
func shorten(s string) string {
	const max = 32
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
