package pgwire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// TestFinderKnowsEveryName: the finder says a pgsql.* name missing from
// pgNames is in no tree, so every name the dissectors can produce must be
// there: every pgsql.* string in dissect.go and every registered name.
func TestFinderKnowsEveryName(t *testing.T) {
	loadTables()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "dissect.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.HasPrefix(s, "pgsql.") {
			return true
		}
		seen++
		if _, ok := pgNames[s]; !ok {
			t.Errorf("%s: %s is not in the finder's names", fset.Position(lit.Pos()), s)
		}
		return true
	})
	if seen < 50 {
		t.Fatalf("only %d pgsql.* names in dissect.go", seen)
	}
	registered := map[string]bool{}
	for _, n := range decode.FieldNames() {
		if n.Proto == decode.ProtoPgSQL {
			registered[n.Name] = true
			if _, ok := pgNames[n.Name]; !ok {
				t.Errorf("registered name %s is not in the finder's names", n.Name)
			}
		}
	}
	for n, want := range pgNames {
		if !registered[n] {
			t.Errorf("the finder knows %s, which is not registered", n)
		}
		if got, ok := lookupName(n); !ok || got != want {
			t.Errorf("lookupName(%s) = %+v, %v; pgNames holds %+v", n, got, ok, want)
		}
	}
}
