package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"strconv"
	"strings"
)

// Default colours of the page and the 16 ANSI colours (Tango).
const (
	defaultFG = "#d3d7cf"
	defaultBG = "#1e1e1e"
)

var palette = [16]string{
	"#2e3436", "#cc0000", "#4e9a06", "#c4a000", "#3465a4", "#75507b", "#06989a", "#d3d7cf",
	"#555753", "#ef2929", "#8ae234", "#fce94f", "#729fcf", "#ad7fa8", "#34e2e2", "#eeeeec",
}

// color256 returns colour n of the xterm 256-colour table.
func color256(n int) string {
	switch {
	case n < 16:
		return palette[n]
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + 40*v
		}
		return rgb(level(n/36), level(n/6%6), level(n%6))
	default:
		g := 8 + 10*(n-232)
		return rgb(g, g, g)
	}
}

func rgb(r, g, b int) string { return fmt.Sprintf("#%02x%02x%02x", r&255, g&255, b&255) }

// style is the graphic rendition in force; "" colours are the defaults.
type style struct {
	fg, bg                                     string
	bold, faint, italic, under, strike, invert bool
}

// css returns the inline style of s, "" for the default rendition.
func (s style) css() string {
	fg, bg := s.fg, s.bg
	if s.invert {
		fg, bg = bg, fg
		if fg == "" {
			fg = defaultBG
		}
		if bg == "" {
			bg = defaultFG
		}
	}
	var b strings.Builder
	if fg != "" {
		b.WriteString("color:" + fg + ";")
	}
	if bg != "" {
		b.WriteString("background:" + bg + ";")
	}
	if s.bold {
		b.WriteString("font-weight:bold;")
	}
	if s.faint {
		b.WriteString("opacity:.65;")
	}
	if s.italic {
		b.WriteString("font-style:italic;")
	}
	switch {
	case s.under && s.strike:
		b.WriteString("text-decoration:underline line-through;")
	case s.under:
		b.WriteString("text-decoration:underline;")
	case s.strike:
		b.WriteString("text-decoration:line-through;")
	}
	return b.String()
}

// sgr applies the parameters of one SGR sequence (CSI ... m) to s.
func (s *style) sgr(params string) {
	if params == "" {
		*s = style{}
		return
	}
	ps := strings.Split(params, ";")
	num := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		// Sub-parameters (4:3, 38:2::r:g:b) keep only their first part.
		p, _, _ := strings.Cut(ps[i], ":")
		n, err := strconv.Atoi(p)
		if err != nil {
			return -1
		}
		return n
	}
	// extended reads a 38/48 colour starting at ps[i+1]; it returns the
	// colour and how many parameters it used.
	extended := func(i int) (string, int) {
		switch num(i + 1) {
		case 5:
			if n := num(i + 2); n >= 0 && n < 256 {
				return color256(n), 2
			}
			return "", 2
		case 2:
			return rgb(num(i+2), num(i+3), num(i+4)), 4
		}
		return "", 0
	}
	for i := 0; i < len(ps); i++ {
		switch n := num(i); {
		case n == 0 || n == -1 && ps[i] == "":
			*s = style{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.faint = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.under = !strings.HasPrefix(ps[i], "4:0")
		case n == 7:
			s.invert = true
		case n == 9:
			s.strike = true
		case n == 22:
			s.bold, s.faint = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.under = false
		case n == 27:
			s.invert = false
		case n == 29:
			s.strike = false
		case n >= 30 && n <= 37:
			s.fg = palette[n-30]
		case n == 38:
			c, used := extended(i)
			s.fg = c
			i += used
		case n == 39:
			s.fg = ""
		case n >= 40 && n <= 47:
			s.bg = palette[n-40]
		case n == 48:
			c, used := extended(i)
			s.bg = c
			i += used
		case n == 49:
			s.bg = ""
		case n == 58: // underline colour: not rendered
			_, used := extended(i)
			i += used
		case n >= 90 && n <= 97:
			s.fg = palette[n-90+8]
		case n >= 100 && n <= 107:
			s.bg = palette[n-100+8]
		}
	}
}

// convert writes the HTML of the screen in src (without the page around
// it) to w: one <span> per run of text in one rendition.
func convert(w io.Writer, src string) error {
	bw := bufio.NewWriter(w)
	var cur style
	open := ""
	var text strings.Builder
	flush := func() {
		if text.Len() == 0 {
			return
		}
		css := cur.css()
		if css != open {
			if open != "" {
				bw.WriteString("</span>")
			}
			if css != "" {
				bw.WriteString(`<span style="` + css + `">`)
			}
			open = css
		}
		bw.WriteString(html.EscapeString(text.String()))
		text.Reset()
	}
	for i := 0; i < len(src); {
		c := src[i]
		if c != 0x1b {
			text.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(src) {
			break
		}
		switch src[i+1] {
		case '[': // CSI: parameters, intermediates, a final byte 0x40-0x7e
			j := i + 2
			for j < len(src) && (src[j] < 0x40 || src[j] > 0x7e) {
				j++
			}
			if j >= len(src) {
				i = j
				continue
			}
			if src[j] == 'm' {
				flush()
				cur.sgr(src[i+2 : j])
			}
			i = j + 1
		case ']', 'P', '_', '^': // OSC, DCS, APC, PM: up to BEL or ST
			j := i + 2
			for j < len(src) && src[j] != 0x07 && !(src[j] == 0x1b && j+1 < len(src) && src[j+1] == '\\') {
				j++
			}
			if j < len(src) && src[j] == 0x1b {
				j++
			}
			i = j + 1
		default:
			i += 2
		}
	}
	flush()
	if open != "" {
		bw.WriteString("</span>")
	}
	return bw.Flush()
}

const page = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>%s</title><style>
html, body { margin: 0; background: %s; }
pre { margin: 0; padding: 8px; color: %s; background: %s;
  font: %dpx/%dpx "DejaVu Sans Mono", monospace; font-variant-ligatures: none; }
</style></head><body><pre>`

func main() {
	title := flag.String("title", "wiretap", "page title")
	size := flag.Int("font-size", 13, "font size in CSS pixels")
	line := flag.Int("line-height", 15, "line height in CSS pixels (DejaVu Sans Mono's box drawing joins at 1.16 x the font size)")
	flag.Parse()
	src, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ansi2html:", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, page, html.EscapeString(*title), defaultBG, defaultFG, defaultBG, *size, *line)
	if err := convert(out, strings.TrimRight(string(src), "\n")); err != nil {
		fmt.Fprintln(os.Stderr, "ansi2html:", err)
		os.Exit(1)
	}
	out.WriteString("</pre></body></html>\n")
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "ansi2html:", err)
		os.Exit(1)
	}
}
