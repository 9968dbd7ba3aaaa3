// Package help is the "?" screen: every binding of the key map, by
// section, plus the mouse, the commands of the ":" line and the filter
// language at a glance.
package help
