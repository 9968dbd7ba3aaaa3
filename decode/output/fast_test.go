package output

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fast time formatter writes what time.RFC3339Nano does, over the whole
// range a unit's time can take (1678 to 2262) and at the edges of days,
// months, leap years and fractions.
func TestRFC3339NanoMatchesTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(ns int64) {
		want := time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
		if got := string(appendRFC3339Nano(nil, ns)); got != want {
			t.Fatalf("%d: got %s, want %s", ns, got, want)
		}
	}
	for _, ns := range []int64{0, 1, -1, 1e9, -1e9, 951782400e9, 951868800e9 - 1, 4107542400e9, -9223372036854775807, 9223372036854775807, 1700000000123000000, 1700000000100000000} {
		check(ns)
	}
	for range 200000 {
		check(int64(r.Uint64()))
		check(r.Int64N(4e18) + r.Int64N(1000)*1e9)
	}
}

// AppendString's eight-bytes-at-a-time scan writes what the byte-by-byte
// one did: checked against strconv-free expectations on strings mixing
// plain text with every byte that must be escaped.
func TestAppendStringEscapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	special := []string{"\"", "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀"}
	for range 20000 {
		var sb strings.Builder
		for range r.IntN(40) {
			if r.IntN(4) == 0 {
				sb.WriteString(special[r.IntN(len(special))])
			} else {
				sb.WriteString(strings.Repeat("abcdefgh"[r.IntN(8):], 1+r.IntN(3)))
			}
		}
		s := sb.String()
		if got, want := string(AppendString(nil, s)), slowJSONString(s); got != want {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
		if got, want := string(appendPrintable(nil, s)), slowPrintable(s); got != want {
			t.Fatalf("%q: printable got %q, want %q", s, got, want)
		}
	}
}

// slowJSONString is AppendString as it was, one byte at a time.
func slowJSONString(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`+strconv.Itoa(int(r&0xF))...)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(append(b, '"'))
}

func slowPrintable(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xF])
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
