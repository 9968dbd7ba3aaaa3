package rabbitdiff

import (
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	if d := UnifiedDiff("a", "x\ny\n", "b", "x\ny\n"); d != "" {
		t.Errorf("equal texts: %q", d)
	}
	var a, b []string
	for i := range 20 {
		a = append(a, "line "+strconv.Itoa(i))
	}
	b = append(b, a...)
	b[2] = "changed 2"
	b = append(b[:15], b[16:]...) // line 15 removed
	b = append(b, "added")
	got := UnifiedDiff("rabbitmq", strings.Join(a, "\n")+"\n", "wiretap", strings.Join(b, "\n")+"\n")
	want := `--- rabbitmq
+++ wiretap
@@ -1,6 +1,6 @@
 line 0
 line 1
-line 2
+changed 2
 line 3
 line 4
 line 5
@@ -13,8 +13,8 @@
 line 12
 line 13
 line 14
-line 15
 line 16
 line 17
 line 18
 line 19
+added
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := UnifiedDiff("a", "", "b", "only\n"); got != "--- a\n+++ b\n@@ -0,0 +1,1 @@\n+only\n" {
		t.Errorf("from nothing: %q", got)
	}
}

func TestUnifiedDiffLarge(t *testing.T) {
	// Past the LCS table's bound the middle is all removed then added:
	// still a diff that turns a into b.
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString("a" + strconv.Itoa(i) + "\n")
		b.WriteString("b" + strconv.Itoa(i) + "\n")
	}
	d := UnifiedDiff("a", a.String(), "b", b.String())
	lines := strings.Split(d, "\n")
	if lines[2] != "@@ -1,3000 +1,3000 @@" {
		t.Errorf("hunk %q", lines[2])
	}
	removed, added := 0, 0
	for _, l := range lines[3:] {
		switch {
		case strings.HasPrefix(l, "-a"):
			removed++
		case strings.HasPrefix(l, "+b"):
			added++
		}
	}
	if removed != 3000 || added != 3000 {
		t.Errorf("%d removed, %d added", removed, added)
	}
}
