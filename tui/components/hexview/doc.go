// Package hexview is the pane showing a unit's exact bytes as a hex dump,
// with the byte range of the selected field highlighted.
package hexview
