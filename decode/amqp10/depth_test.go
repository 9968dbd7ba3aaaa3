package amqp10

import (
	"strings"
	"testing"
)

// TestTooDeepSaysSo: a value nested past maxDepth ends in a field whose
// value says why (JSON renders Value, and showed null for it).
func TestTooDeepSaysSo(t *testing.T) {
	for _, levels := range []int{maxDepth + 2, 200} {
		v := AppendString(nil, "bottom")
		for range levels {
			v = AppendList(nil, v)
		}
		f := Materialize(v, 0, "value")
		for f != nil && len(f.Kids) > 0 {
			f = f.Kids[len(f.Kids)-1]
		}
		s, _ := f.Value.(string)
		if !strings.Contains(s, "nested") {
			t.Errorf("%d levels: deepest field %q = %#v (display %q), want a value saying it is nested too deeply", levels, f.Key, f.Value, f.Display)
		}
	}
}
