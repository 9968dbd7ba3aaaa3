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
package tui
