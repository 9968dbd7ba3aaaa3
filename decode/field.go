package decode

import (
	"encoding/hex"
	"strconv"
	"time"
)

// Kind says how a Field's children are shaped in JSON.
type Kind uint8

const (
	// KindValue is a leaf (or a leaf with explanatory children that JSON
	// omits unless it has no value).
	KindValue Kind = iota
	// KindMap renders children as a JSON object keyed by their Key.
	KindMap
	// KindList renders children as a JSON array.
	KindList
)

// Field is one node of a unit's field tree.
type Field struct {
	// Key is the short name shown in the tree and used as the JSON key
	// ("routing-key", "delivery-mode").
	Key string
	// Name is the Wireshark-style dotted name the filter language reads
	// ("amqp.method.arguments.routing_key"). Empty means not filterable.
	Name string
	// Value is typed: nil, bool, int64, uint64, float64, string, []byte,
	// time.Time. Containers have nil Value.
	Value any
	// Display overrides the default rendering of Value in the tree.
	Display string
	// Encoding is the wire encoding, shown in the detail view
	// ("shortstr", "smallulong 0x52", "table").
	Encoding string
	// Offset and Length give the field's byte range within Unit.Raw.
	// Length 0 means the field has no range of its own.
	Offset int
	Length int
	Kind   Kind
	Kids   []*Field
}

// Add appends a child and returns it.
func (f *Field) Add(c *Field) *Field { f.Kids = append(f.Kids, c); return c }

// Text renders the field's value for display.
func (f *Field) Text() string {
	if f.Display != "" {
		return f.Display
	}
	return FormatValue(f.Value)
}

// FormatValue renders a typed field value as text.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case []byte:
		if len(x) > 64 {
			return hex.EncodeToString(x[:64]) + "..."
		}
		return hex.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case interface{ String() string }:
		return x.String()
	}
	return "?"
}

// Walk calls fn for every field in the forest, depth first, parents first.
// Returning false from fn skips the field's children.
func Walk(fs []*Field, fn func(*Field) bool) {
	for _, f := range fs {
		if fn(f) {
			Walk(f.Kids, fn)
		}
	}
}

// Find returns the first field in the forest with the given dotted Name.
func Find(fs []*Field, name string) *Field {
	var found *Field
	Walk(fs, func(f *Field) bool {
		if found != nil {
			return false
		}
		if f.Name == name {
			found = f
			return false
		}
		return true
	})
	return found
}
