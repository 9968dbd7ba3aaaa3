package filter

import (
	"slices"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	for _, tc := range []struct {
		expr   string // the cursor is at '@', or at the end
		from   int
		want   []string // exact candidates, when set
		has    []string // candidates that must be offered
		hasNot []string
	}{
		{expr: "amqp.meth", from: 0, has: []string{"amqp.method", "amqp.method.arguments.routing_key"}, hasNot: []string{"amqp.channel"}},
		{expr: "amqp.method", from: 0, has: []string{"amqp.method", "amqp.method.arguments.exchange"}},
		{expr: "", from: 0, has: []string{"amqp.method", "frame.len", "pgsql.type", "conn"}},
		{expr: "amqp.channel == 2 && pgsql.t", from: 21, want: []string{"pgsql.type"}},
		{expr: "!(fra", from: 2, has: []string{"frame.len", "frame.number"}, hasNot: []string{"amqp"}},
		{expr: "not fra", from: 4, has: []string{"frame.len"}},
		{expr: "amqp.method ", from: 12, want: relSymbols},
		{expr: "amqp.method c", from: 12, want: []string{"contains"}},
		{expr: "amqp.method !", from: 12, want: []string{"!=", "!=="}},
		{expr: "!", from: 1, has: []string{"amqp", "frame.len"}},
		{expr: "amqp.method !=", from: 12, want: []string{"!=", "!=="}},
		{expr: "amqp.method =", from: 12, want: []string{"==", "==="}},
		{expr: "amqp.method &", from: 12, want: []string{"&&"}},
		{expr: "amqp.method == 1 |", from: 17, want: []string{"||"}},
		{expr: "amqp.method == |", from: 16, want: nil},
		{expr: "frame.len <", from: 10, want: []string{"<", "<="}},
		{expr: "amqp.checksum == ", from: 17, want: []string{`"ok"`, `"mismatch"`, `"absent"`}},
		{expr: "amqp.checksum == mis", from: 17, want: []string{`"mismatch"`}},
		{expr: `amqp.checksum == "mis`, from: 17, want: []string{`"mismatch"`}},
		{expr: `frame.dir eq `, from: 13, want: []string{`"F"`, `"B"`}},
		{expr: `frame.len == 5 `, from: 15, want: []string{"&&", "||"}},
		{expr: `frame.len == 5 a`, from: 15, want: []string{"and"}},
		{expr: `(amqp) `, from: 7, want: []string{"&&", "||"}},
		{expr: `conn in {1 2} `, from: 14, want: []string{"&&", "||"}},
		{expr: `summary contains "x`, from: 17, want: nil},
		{expr: `amqp.method == "basic.publish" && amqp.ch@annel == 2`, from: 34, has: []string{"amqp.channel"}, hasNot: []string{"amqp.method"}},
		{expr: `== `, from: 3, want: nil},
	} {
		expr, cursor := tc.expr, len(tc.expr)
		if i := strings.IndexByte(expr, '@'); i >= 0 {
			expr, cursor = expr[:i]+expr[i+1:], i
		}
		from, got := Complete(expr, cursor)
		if from != tc.from {
			t.Errorf("Complete(%q, %d): from %d, want %d", expr, cursor, from, tc.from)
		}
		if tc.want != nil || (tc.has == nil && tc.hasNot == nil) {
			if !slices.Equal(got, tc.want) {
				t.Errorf("Complete(%q, %d) = %q, want %q", expr, cursor, got, tc.want)
			}
		}
		for _, h := range tc.has {
			if !slices.Contains(got, h) {
				t.Errorf("Complete(%q, %d) = %q, missing %q", expr, cursor, got, h)
			}
		}
		for _, h := range tc.hasNot {
			if slices.Contains(got, h) {
				t.Errorf("Complete(%q, %d) offers %q", expr, cursor, h)
			}
		}
		if !slices.IsSorted(got) && tc.has != nil {
			t.Errorf("Complete(%q): field names not sorted", expr)
		}
	}
}

// TestCompleteThenCompile checks that a completed field name compiles.
func TestCompleteThenCompile(t *testing.T) {
	from, got := Complete("frame.le", 8)
	if len(got) != 1 {
		t.Fatalf("got %q", got)
	}
	expr := "frame.le"[:from] + got[0] + " > 10"
	if _, err := Compile(expr); err != nil {
		t.Errorf("Compile(%q): %v", expr, err)
	}
}

func TestCompleteCursorOutOfRange(t *testing.T) {
	for _, c := range []int{-5, 100} {
		from, _ := Complete("amqp", c)
		if from < 0 || from > len("amqp") {
			t.Errorf("cursor %d: from %d", c, from)
		}
	}
}
