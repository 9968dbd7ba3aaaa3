// Package keys holds the TUI's key bindings, all in one KeyMap built by
// DefaultKeyMap and passed down to every component (never global), so the
// help screen lists exactly what the program does.
package keys
