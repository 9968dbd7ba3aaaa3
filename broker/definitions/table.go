package definitions

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// ToTable converts JSON arguments to an AMQP field table the way
// RabbitMQ's import does (rabbit_misc:to_amqp_table, checked on 3.10.8
// against the tables it then holds): fields in key order (Erlang's order
// for maps of up to 32 keys; larger ones it keeps in hash order), an integer as
// 'l' (signed 64-bit), any other number as 'd', a string as 'S', a bool as
// 't', an array as 'A' and an object as 'F', recursively. null is refused,
// as RabbitMQ refuses it, and so is an integer outside 64 bits.
//
// Numbers should be [json.Number], as Parse leaves them, so that 10 and
// 10.0 stay apart; Go's int, int64, uint64 and float64 are taken as well
// (a float64 is always 'd').
func ToTable(args map[string]any) (amqp091.Table, error) {
	return appendTable(nil, args, 0)
}

const maxDepth = 64 // as amqp091's decoder allows

func appendTable(t amqp091.Table, m map[string]any, depth int) (amqp091.Table, error) {
	if depth > maxDepth {
		return nil, errors.New("definitions: arguments nested deeper than " + strconv.Itoa(maxDepth))
	}
	for _, k := range sortedKeys(m) {
		if len(k) > math.MaxUint8 {
			return nil, errors.New("definitions: argument name longer than 255 bytes: " + strconv.Quote(k[:32]+"..."))
		}
		v, err := toValue(m[k], depth)
		if err != nil {
			return nil, errors.New("definitions: argument '" + k + "': " + strings.TrimPrefix(err.Error(), "definitions: "))
		}
		t = t.Append(k, v)
	}
	if t == nil {
		t = amqp091.Table{}
	}
	return t, nil
}

func toValue(v any, depth int) (amqp091.Value, error) {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return amqp091.Value{}, errors.New("integer " + s + " does not fit 64 bits")
			}
			return amqp091.Int64Value(i), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return amqp091.Value{}, errors.New("number " + s + " is out of range")
		}
		return amqp091.DoubleValue(f), nil
	case int:
		return amqp091.Int64Value(int64(v)), nil
	case int64:
		return amqp091.Int64Value(v), nil
	case uint64:
		if v > math.MaxInt64 {
			return amqp091.Value{}, errors.New("integer " + strconv.FormatUint(v, 10) + " does not fit 64 bits")
		}
		return amqp091.Int64Value(int64(v)), nil
	case float64:
		return amqp091.DoubleValue(v), nil
	case string:
		return amqp091.StringValue(v), nil
	case bool:
		return amqp091.BoolValue(v), nil
	case []any:
		if depth >= maxDepth {
			return amqp091.Value{}, errors.New("nested deeper than " + strconv.Itoa(maxDepth))
		}
		a := amqp091.Array{}
		for _, e := range v {
			ev, err := toValue(e, depth+1)
			if err != nil {
				return amqp091.Value{}, err
			}
			a = a.Append(ev)
		}
		return amqp091.ArrayValue(a), nil
	case map[string]any:
		t, err := appendTable(nil, v, depth+1)
		if err != nil {
			return amqp091.Value{}, err
		}
		return amqp091.TableValue(t), nil
	case nil:
		return amqp091.Value{}, errors.New("null is not allowed")
	}
	return amqp091.Value{}, errors.New("a value of a type JSON does not have")
}

// FromTable converts an AMQP field table to JSON arguments as RabbitMQ's
// export does (rabbit_misc:amqp_table): integers of every width, and
// timestamps (their seconds), as integer json.Numbers; 'f' and 'd' as
// json.Numbers that read back as floats ("1.0", never "1"); 'S' and 'x'
// as strings, or, when not UTF-8, as RabbitMQ's "Not UTF-8, base64 is: ..."
// text; 't' as a bool; 'A' as []any; 'F' as map[string]any; 'V' as the
// string "undefined" (Erlang's atom for it, which RabbitMQ's JSON encoder
// writes as a string).
// A decimal becomes its value as a float (RabbitMQ writes "scale.value",
// which is not the number). A NaN or infinite float, which JSON cannot
// hold, becomes nil. A malformed table yields the fields before the fault.
func FromTable(t amqp091.Table) map[string]any {
	m := map[string]any{}
	it := t.Iter()
	for it.Next() {
		m[string(it.Key())] = fromValue(it.Value())
	}
	return m
}

func fromValue(v amqp091.Value) any {
	switch v.Type {
	case amqp091.TypeBool:
		return v.Bool()
	case amqp091.TypeInt8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeInt32, amqp091.TypeInt64:
		return json.Number(strconv.FormatInt(v.Int(), 10))
	case amqp091.TypeUint8, amqp091.TypeUint16, amqp091.TypeUint32, amqp091.TypeUint64, amqp091.TypeTimestamp:
		return json.Number(strconv.FormatUint(v.Uint(), 10))
	case amqp091.TypeFloat, amqp091.TypeDouble:
		return floatNumber(v.Float())
	case amqp091.TypeDecimal:
		d := v.Decimal()
		f, _ := new(big.Rat).SetFrac(big.NewInt(int64(d.Value)), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)).Float64()
		return floatNumber(f)
	case amqp091.TypeLongstr, amqp091.TypeBytes:
		return utf8Safe(v.Bytes())
	case amqp091.TypeTable:
		return FromTable(v.Table())
	case amqp091.TypeVoid:
		return "undefined"
	case amqp091.TypeArray:
		a := []any{}
		it := v.Array().Iter()
		for it.Next() {
			a = append(a, fromValue(it.Value()))
		}
		return a
	}
	return nil
}

func floatNumber(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return json.Number(s)
}

// utf8Safe is RabbitMQ's rabbit_misc:utf8_safe: text stays, other bytes are
// shown as base64 in lines of 76.
func utf8Safe(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	enc := base64.StdEncoding.EncodeToString(b)
	var sb strings.Builder
	sb.WriteString("Not UTF-8, base64 is: ")
	for len(enc) > 76 {
		sb.WriteString(enc[:76])
		sb.WriteByte('\n')
		enc = enc[76:]
	}
	sb.WriteString(enc)
	return sb.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
