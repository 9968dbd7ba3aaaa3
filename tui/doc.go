// Package tui is wiretap's interactive terminal program (bubbletea v2):
// connections, units, the selected unit's field tree and its bytes, a
// display filter and text search, request/answer navigation, marks, a
// statistics view and export to pcapng and JSON.
//
// Sources of any kind feed it through [Options.Units]; [Run] runs the
// program in the terminal, [New] builds the model for tests.
//
// Layout of the package: the root model (this package) only dispatches
// messages and lays panes out; every pane is a component in
// tui/components/<name> with Update, View and SetSize; units live in
// tui/store; keys in tui/keys (DefaultKeyMap) and colours in tui/styles
// (DefaultStyles).
//
// Responsiveness on millions of units: filters run on background
// goroutines (a first screenful, then the rest on every processor) and
// share a filter.Memo of what units hold; the bar's reports are acted on
// in key order; [Run] renders at most once per frame (pace.go) and reads
// the terminal through tui/internal/ttyin, which reports a lone Escape
// without the input parser's 50 ms wait.
package tui
