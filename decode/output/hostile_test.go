package output

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// manyKeys is a level of n fields whose keys repeat every 1000, as in a
// hostile AMQP headers table or AMQP 1.0 map.
func manyKeys(n int) []*decode.Field {
	fs := make([]*decode.Field, n)
	for i := range fs {
		fs[i] = &decode.Field{Key: "k" + strconv.Itoa(i%1000), Value: int64(i)}
	}
	return fs
}

// TestRepeatedKeysLinear: numbering repeated keys of a large level costs
// no key comparisons (a map counts them); it used to compare each key with
// every earlier one, which took minutes for 200k keys.
func TestRepeatedKeysLinear(t *testing.T) {
	const n = 200000
	r := fieldRender{left: -1}
	b := r.appendMap(nil, manyKeys(n))
	if r.compares != 0 {
		t.Errorf("%d key comparisons for a level of %d keys, want 0", r.compares, n)
	}
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if len(m) != n {
		t.Errorf("%d keys in the object, want %d (each repeat numbered)", len(m), n)
	}
	if v, ok := m["k7#200"]; !ok || v != 199007 {
		t.Errorf(`"k7#200" = %d, %v; want 199007`, v, ok)
	}

	// Small levels scan, within smallLevel² comparisons.
	small := fieldRender{left: -1}
	small.appendMap(nil, manyKeys(smallLevel))
	if small.compares > smallLevel*smallLevel {
		t.Errorf("%d comparisons for %d keys", small.compares, smallLevel)
	}
}

// TestFieldsElided: a unit longer than MaxFieldBytes has no tree, a tree
// longer than MaxFields stops there; both say so in "fields_elided".
func TestFieldsElided(t *testing.T) {
	u := sampleUnit()
	u.Len = 2 << 20
	var m map[string]any
	if err := json.Unmarshal(AppendJSON(nil, u, JSONOptions{}), &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["fields"]; ok {
		t.Error("fields rendered for a unit of 2 MiB")
	}
	if s, _ := m["fields_elided"].(string); !strings.Contains(s, "2097152 bytes") || !strings.Contains(s, "1048576") {
		t.Errorf("fields_elided = %q", s)
	}
	// MaxFieldBytes < 0: no limit.
	m = nil
	json.Unmarshal(AppendJSON(nil, u, JSONOptions{MaxFieldBytes: -1}), &m)
	if _, ok := m["fields"]; !ok || m["fields_elided"] != nil {
		t.Errorf("MaxFieldBytes -1: fields %v, fields_elided %v", m["fields"], m["fields_elided"])
	}

	// 300k fields, 1000 rendered.
	u = sampleUnit()
	u.Dissect = func(*decode.Unit) []*decode.Field {
		return []*decode.Field{{Key: "a", Value: "x"}, {Key: "big", Kind: decode.KindMap, Kids: manyKeys(300000)}}
	}
	m = nil
	if err := json.Unmarshal(AppendJSON(nil, u, JSONOptions{MaxFields: 1000}), &m); err != nil {
		t.Fatal(err)
	}
	big, _ := m["fields"].(map[string]any)["big"].(map[string]any)
	if len(big) != 998 { // "a", "big" and 998 of its keys
		t.Errorf("%d keys of big rendered, want 998", len(big))
	}
	if s, _ := m["fields_elided"].(string); !strings.HasPrefix(s, "299002 fields not rendered") {
		t.Errorf("fields_elided = %q", s)
	}
}
