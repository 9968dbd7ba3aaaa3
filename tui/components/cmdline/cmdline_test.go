package cmdline

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]ExecMsg{
		"goto 12":                  {"goto", "12"},
		":123":                     {"goto", "123"},
		"w  out.pcapng ":           {"save", "out.pcapng"},
		"export x.json":            {"export", "x.json"},
		`filter amqp.channel == 2`: {"filter", "amqp.channel == 2"},
		"q":                        {"quit", ""},
	} {
		got, ok := Parse(in)
		if !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v, want %+v", in, got, ok, want)
		}
	}
	if _, ok := Parse("frobnicate"); ok {
		t.Error("unknown command parsed")
	}
}
