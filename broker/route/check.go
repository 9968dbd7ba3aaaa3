package route

import (
	"math"
	"strconv"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// InvalidBindingError is a binding RabbitMQ refuses (its
// binding_invalid): the broker answers it with 406 PRECONDITION_FAILED
// and Text.
type InvalidBindingError struct {
	Text string // RabbitMQ's words: "Invalid x-match field value <<\"some\">>; expected all, any, all-with-x, or any-with-x"
}

func (e *InvalidBindingError) Error() string { return "route: invalid binding: " + e.Text }

// CheckBinding returns an [*InvalidBindingError] for arguments RabbitMQ
// 3.10 refuses on an exchange of kind k: only a headers exchange looks at
// them, and wants x-match, when present, to be a longstr naming a mode.
// Add does not check: an unknown x-match there means all, as RabbitMQ's
// own parser falls back to.
func CheckBinding(k Kind, args amqp091.Table) error {
	if k != Headers {
		return nil
	}
	fs, _ := appendFields(nil, args)
	for _, f := range fs {
		if string(f.key) != "x-match" {
			continue
		}
		if f.val.Type != amqp091.TypeLongstr {
			return &InvalidBindingError{Text: "Invalid x-match field type " + f.val.Type.RabbitName() +
				" (value " + erlTerm(f.val, 0) + "); expected longstr"}
		}
		switch string(f.val.Bytes()) {
		case "all", "any", "all-with-x", "any-with-x":
			return nil
		}
		return &InvalidBindingError{Text: "Invalid x-match field value " + erlTerm(f.val, 0) +
			"; expected all, any, all-with-x, or any-with-x"}
	}
	return nil
}

// erlTerm writes a parsed value as Erlang's ~p does, for RabbitMQ's
// error texts (without ~p's line breaks in long terms).
func erlTerm(v amqp091.Value, depth int) string {
	switch v.Type {
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return erlBinary(v.Bytes())
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return erlFloat(v.Float())
	case amqp091.TypeUint8, amqp091.TypeUint16, amqp091.TypeUint32, amqp091.TypeTimestamp:
		return strconv.FormatUint(v.Uint(), 10)
	case amqp091.TypeBool:
		return strconv.FormatBool(v.Bool())
	case amqp091.TypeVoid:
		return "undefined"
	case amqp091.TypeDecimal:
		n := v.Uint()
		return "{" + strconv.FormatUint(n>>32, 10) + "," + strconv.FormatUint(n&0xFFFFFFFF, 10) + "}"
	case amqp091.TypeTable, amqp091.TypeArray:
		if depth >= maxNesting {
			return "[...]"
		}
		keyed := v.Type == amqp091.TypeTable
		it := v.Table().Iter()
		if !keyed {
			it = v.Array().Iter()
		}
		var sb strings.Builder
		sb.WriteByte('[')
		for n := 0; it.Next(); n++ {
			if n > 0 {
				sb.WriteByte(',')
			}
			sb.WriteByte('{')
			if keyed {
				sb.WriteString(erlBinary(it.Key()))
				sb.WriteByte(',')
			}
			sb.WriteString(it.Value().Type.RabbitName())
			sb.WriteByte(',')
			sb.WriteString(erlTerm(it.Value(), depth+1))
			sb.WriteByte('}')
		}
		sb.WriteByte(']')
		return sb.String()
	}
	return strconv.FormatInt(v.Int(), 10)
}

// erlBinary writes <<"text">> for printable Latin-1 bytes, <<1,2,3>>
// otherwise, as ~p does.
func erlBinary(b []byte) string {
	printable := true
	for _, c := range b {
		if c < 0x20 && !strings.ContainsRune("\n\r\t\v\b\f\x1b", rune(c)) || c >= 0x7f && c < 0xa0 {
			printable = false
			break
		}
	}
	var sb strings.Builder
	sb.WriteString("<<")
	if printable && len(b) > 0 {
		sb.WriteByte('"')
		for _, c := range b {
			switch c {
			case '"', '\\':
				sb.WriteByte('\\')
				sb.WriteByte(c)
			case '\n':
				sb.WriteString(`\n`)
			case '\r':
				sb.WriteString(`\r`)
			case '\t':
				sb.WriteString(`\t`)
			case '\v':
				sb.WriteString(`\v`)
			case '\b':
				sb.WriteString(`\b`)
			case '\f':
				sb.WriteString(`\f`)
			case 0x1b:
				sb.WriteString(`\e`)
			default:
				sb.WriteByte(c)
			}
		}
		sb.WriteByte('"')
	} else {
		for i, c := range b {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(int(c)))
		}
	}
	sb.WriteString(">>")
	return sb.String()
}

// erlFloat writes a float as Erlang does: the shortest digits that read
// back, in fixed or exponent notation, whichever is shorter (fixed on a
// tie) below 2^53, exponent from there on: 100.0, 1.0e3, 0.0001, 1.2e-4,
// 9.007199254740992e15.
func erlFloat(f float64) string {
	s := strconv.FormatFloat(f, 'e', -1, 64) // "-1.2345e+04"
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	e := strings.IndexByte(s, 'e')
	if e < 0 { // Inf or NaN, which Erlang cannot hold
		return sign + s
	}
	digits := strings.Replace(s[:e], ".", "", 1)
	exp, _ := strconv.Atoi(s[e+1:])
	expForm := digits[:1] + "." + digits[1:]
	if len(digits) == 1 {
		expForm += "0"
	}
	expForm += "e" + strconv.Itoa(exp)
	var fixed string
	switch {
	case exp < 0:
		fixed = "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits)-1 <= exp:
		fixed = digits + strings.Repeat("0", exp-len(digits)+1) + ".0"
	default:
		fixed = digits[:exp+1] + "." + digits[exp+1:]
	}
	if len(expForm) < len(fixed) || math.Abs(f) >= 1<<53 {
		return sign + expForm
	}
	return sign + fixed
}
