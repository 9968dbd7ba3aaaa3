package text

import "testing"

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"a\nb\tc\r":         "a⏎b c",
		"\x1b[31mred\x07":   "␛[31mred␇",
		"del\x7f c1\u009bx": "del␡ c1·x",
		"héllo, 世界":         "héllo, 世界",
		"bad\xffutf8":       "bad·utf8",
	} {
		if got := OneLine(in); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
	s := "nothing to do here"
	if n := testing.AllocsPerRun(100, func() { _ = OneLine(s) }); n != 0 {
		t.Errorf("%v allocs for a clean string", n)
	}
}
