package main

import (
	"strings"
	"testing"
)

func TestConvert(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain and escaped", "a<b & c>", "a&lt;b &amp; c&gt;"},
		{"bright foreground", "\x1b[94mX\x1b[0mY", `<span style="color:#729fcf;">X</span>Y`},
		{"basic background", "\x1b[44mX\x1b[49mY", `<span style="background:#3465a4;">X</span>Y`},
		{"256 cube", "\x1b[38;5;196mX", `<span style="color:#ff0000;">X</span>`},
		{"256 grey", "\x1b[48;5;236mX", `<span style="background:#303030;">X</span>`},
		{"truecolor", "\x1b[38;2;1;2;3mX", `<span style="color:#010203;">X</span>`},
		{"bold underline reset by 22 24", "\x1b[1;4mX\x1b[22;24mY", `<span style="font-weight:bold;text-decoration:underline;">X</span>Y`},
		{"reverse of the defaults", "\x1b[7mX\x1b[27mY", `<span style="color:#1e1e1e;background:#d3d7cf;">X</span>Y`},
		{"reverse of colours", "\x1b[31;42;7mX", `<span style="color:#4e9a06;background:#cc0000;">X</span>`},
		{"runs merge", "\x1b[31mA\x1b[31mB", `<span style="color:#cc0000;">AB</span>`},
		{"empty SGR resets", "\x1b[31mA\x1b[mB", `<span style="color:#cc0000;">A</span>B`},
		{"other CSI and OSC dropped", "\x1b[2J\x1b]0;title\x07A\x1b]8;;http://x\x1b\\B", "AB"},
		{"sub-parameters", "\x1b[4:3mA\x1b[4:0mB", `<span style="text-decoration:underline;">A</span>B`},
		{"cut escape at the end", "A\x1b[3", "A"},
		{"multibyte text", "│▶ ✗", "│▶ ✗"},
	} {
		var b strings.Builder
		if err := convert(&b, tc.in); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := b.String(); got != tc.want {
			t.Errorf("%s: convert(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestColor256(t *testing.T) {
	for n, want := range map[int]string{1: "#cc0000", 16: "#000000", 21: "#0000ff", 231: "#ffffff", 232: "#080808", 255: "#eeeeee"} {
		if got := color256(n); got != want {
			t.Errorf("color256(%d) = %s, want %s", n, got, want)
		}
	}
}
