package decode

import (
	"sort"
	"sync"
)

// FieldName describes a filterable field for completion and help.
type FieldName struct {
	Name  string // "amqp.method.arguments.routing_key"
	Proto Proto
	Doc   string // one short line
	// Open says the field is a table whose entries are named by the
	// traffic (AMQP headers, arguments, client properties): any name
	// under it (amqp.method.properties.headers.x-trace-id) is valid.
	Open bool
}

var (
	namesMu sync.RWMutex
	names   = map[string]FieldName{}
	// sorted is FieldNames' answer, made on first use after a change: the
	// filter bar compiles on every keypress.
	sorted []FieldName
)

// RegisterFieldNames makes field names known to the filter language's
// completion and help. Protocol packages call it from init.
func RegisterFieldNames(fs ...FieldName) {
	namesMu.Lock()
	defer namesMu.Unlock()
	for _, f := range fs {
		names[f.Name] = f
	}
	sorted = nil
}

// FieldNames returns every registered field name, sorted. The slice is
// shared: callers must not modify it.
func FieldNames() []FieldName {
	namesMu.RLock()
	out := sorted
	namesMu.RUnlock()
	if out != nil {
		return out
	}
	namesMu.Lock()
	defer namesMu.Unlock()
	if sorted == nil {
		out = make([]FieldName, 0, len(names))
		for _, f := range names {
			out = append(out, f)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		sorted = out[:len(out):len(out)]
	}
	return sorted
}
