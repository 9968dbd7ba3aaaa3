// Package findcheck checks a protocol's decode.Finder against the field
// trees it stands in for; the protocols' tests and fuzz targets use it.
package findcheck

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/wiretap-dev/wiretap/decode"
)

// Names returns the names to look up on u: every name in its tree, every
// registered field name, and a few that no tree holds.
func Names(tree []*decode.Field) []string {
	fixed, fixedSet := fixedNames()
	var extra []string
	var seen map[string]bool
	decode.Walk(tree, func(f *decode.Field) bool {
		if n := f.Name; n != "" && !fixedSet[n] && !seen[n] {
			if seen == nil {
				seen = map[string]bool{}
			}
			seen[n] = true
			extra = append(extra, n)
		}
		return true
	})
	if len(extra) == 0 {
		return fixed
	}
	return append(extra, fixed...)
}

// fixedNames is the part of Names that does not depend on the tree, built
// once: building it per unit was most of FuzzPipeline's time.
var fixedNames = sync.OnceValues(func() ([]string, map[string]bool) {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range decode.FieldNames() {
		add(n.Name)
	}
	for _, n := range []string{"amqp.", "amqp.method.arguments.", "amqp.method.arguments.nope",
		"amqp.method.properties.headers.x", "pgsql.", "pgsql.nope", "nope"} {
		add(n)
	}
	return slices.Clip(out), seen
})

// Check looks up every name of Names on u and reports the first
// occurrence where a handled lookup disagrees with the tree.
func Check(u *decode.Unit) error {
	tree := u.Fields()
	byName := map[string][]*decode.Field{}
	decode.Walk(tree, func(f *decode.Field) bool {
		if f.Name != "" {
			byName[f.Name] = append(byName[f.Name], f)
		}
		return true
	})
	for _, name := range Names(tree) {
		want := byName[name]
		for k := 0; k <= len(want); k++ {
			got, ok, handled := u.FindField(name, k)
			if !handled {
				break
			}
			if k == len(want) {
				if ok {
					return fmt.Errorf("unit %d (%s): %s occurrence %d found, the tree has %d: %+v", u.N, u.Type, name, k, len(want), got)
				}
				break
			}
			if !ok {
				return fmt.Errorf("unit %d (%s): %s occurrence %d not found, the tree has %d", u.N, u.Type, name, k, len(want))
			}
			if err := same(&got, want[k]); err != nil {
				return fmt.Errorf("unit %d (%s): %s occurrence %d: %v", u.N, u.Type, name, k, err)
			}
		}
	}
	return nil
}

func same(got, want *decode.Field) error {
	if got.Key != want.Key || got.Name != want.Name || got.Display != want.Display || got.Encoding != want.Encoding ||
		got.Offset != want.Offset || got.Length != want.Length || got.Kind != want.Kind {
		return fmt.Errorf("finder gives %+v, tree %+v", *got, *want)
	}
	gb, gok := got.Value.([]byte)
	wb, wok := want.Value.([]byte)
	if gok || wok {
		if gok != wok || !bytes.Equal(gb, wb) {
			return fmt.Errorf("finder value %#v, tree %#v", got.Value, want.Value)
		}
		return nil
	}
	if !reflect.DeepEqual(got.Value, want.Value) {
		return fmt.Errorf("finder value %#v, tree %#v", got.Value, want.Value)
	}
	return nil
}
