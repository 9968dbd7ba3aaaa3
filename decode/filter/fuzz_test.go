package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
)

// FuzzCompile checks that Compile never panics or runs away, that its
// errors point inside the expression, and that whatever compiles can be
// matched and completed.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`amqp.method == "basic.publish"`,
		`amqp.channel == 2 && frame.len > 0x3e8 || !(pgsql.type in {"DataRow", "Query"})`,
		`summary matches "(?i)^basic\\." and warning contains "x"`,
		`all amqp.header.properties.headers.key != 'a' or ip.addr == 10.0.0.0/8`,
		`frame.time >= "2024-01-02T03:04:05.6Z" && conn in {1..3 7}`,
		`amqp.body contains de:ad:be:ef || summary ~ r"\d+\"x"`,
		`"\x41\101\u00e9\U0001F600`,
		strings.Repeat("(", 200) + "amqp",
		strings.Repeat("!", 200) + "amqp",
	} {
		f.Add(s)
	}
	units := []*decode.Unit{publish(nil), header(nil), body(), transfer(decode.ChecksumMismatch), dataRow(), query(), nested(), {}}
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := Compile(expr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile(%q): error %T is not *Error", expr, err)
			}
			if e.Pos < 0 || e.Len < 0 || e.Pos+e.Len > len(expr) {
				t.Fatalf("Compile(%q): error range [%d,+%d) outside the expression", expr, e.Pos, e.Len)
			}
			if !strings.HasPrefix(e.Error(), "filter: ") {
				t.Fatalf("Compile(%q): error %q lacks the prefix", expr, e.Error())
			}
		} else {
			for _, u := range units {
				flt.Match(u)
			}
		}
		for _, c := range []int{0, len(expr) / 2, len(expr)} {
			from, _ := Complete(expr, c)
			if from < 0 || from > c {
				t.Fatalf("Complete(%q, %d): from %d", expr, c, from)
			}
		}
	})
}
