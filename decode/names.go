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
	// pending are the functions RegisterFieldNamesFunc was given, not yet
	// called.
	pending []func() []FieldName
	// sorted is FieldNames' answer, made on first use after a change: the
	// filter bar compiles on every keypress.
	sorted []FieldName
)

// RegisterFieldNames makes field names known to the filter language's
// completion and help. Protocol packages call it from init.
func RegisterFieldNames(fs ...FieldName) {
	RegisterFieldNamesFunc(func() []FieldName { return fs })
}

// RegisterFieldNamesFunc is RegisterFieldNames for names built by fn,
// which is called the first time the names are asked for (FieldNames),
// if ever. Protocol packages call it from init: most runs of the program
// (read without --filter, every command but the TUI's) never need the
// names, which cost each package thousands of allocations to build.
// Names registered both ways are taken in the order of registration.
func RegisterFieldNamesFunc(fn func() []FieldName) {
	namesMu.Lock()
	defer namesMu.Unlock()
	pending = append(pending, fn)
	sorted = nil
}

// registerNames calls the functions registered and adds their names, in
// order of registration; namesMu is held.
func registerNames() {
	for _, fn := range pending {
		for _, f := range fn() {
			names[f.Name] = f
		}
	}
	pending = nil
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
		registerNames()
		out = make([]FieldName, 0, len(names))
		for _, f := range names {
			out = append(out, f)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		sorted = out[:len(out):len(out)]
	}
	return sorted
}
