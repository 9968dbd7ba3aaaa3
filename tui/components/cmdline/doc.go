// Package cmdline is the ":" command line: goto, filter, search, conn,
// save, export, follow, stats, quit. It parses; the TUI executes.
package cmdline
