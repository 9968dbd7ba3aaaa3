// Command ansi2html turns a terminal screen with ANSI colours (the output of
// `tmux capture-pane -e -p`) into an HTML page that renders it faithfully:
// the 16 colours of the Tango palette, the 256-colour cube and greys,
// 24-bit colours, bold, faint, italic, underline, strike-through and
// reverse video. Other escape sequences are dropped. scripts/screenshots.sh
// feeds the page to headless Chromium for the README's screenshots.
//
//	tmux capture-pane -e -p -t pane | go run ./scripts/ansi2html -title main > main.html
package main
