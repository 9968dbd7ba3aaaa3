package tui

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode/filter"
)

// TestDefaultLangShallow checks that the default language's Shallow
// agrees with decode/filter's for the expression it compiled last and for
// others, and says no for an expression that does not compile.
func TestDefaultLangShallow(t *testing.T) {
	lang := DefaultLang()
	exprs := []string{`frame.len > 100`, `amqp.method == "basic.publish"`, `summary contains "x"`, `amqp.method.arguments.routing_key == "k"`}
	for _, compiled := range exprs {
		if _, err := lang.Compile(compiled); err != nil {
			t.Fatal(err)
		}
		for _, e := range exprs {
			f, err := filter.Compile(e)
			if err != nil {
				t.Fatal(err)
			}
			if got := lang.Shallow(e); got != f.Shallow() {
				t.Errorf("after compiling %q: Shallow(%q) = %v, want %v", compiled, e, got, f.Shallow())
			}
		}
	}
	if lang.Shallow(`frame.len >`) {
		t.Error("an expression that does not compile is shallow")
	}
}
