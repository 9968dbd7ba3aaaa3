// Package styles holds every colour and text attribute the TUI uses, in one
// Styles value built by DefaultStyles, plus the symbols that carry the same
// meaning without colour (NO_COLOR terminals, screenshots in print).
package styles
