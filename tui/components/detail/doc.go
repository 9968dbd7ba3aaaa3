// Package detail is the pane showing one unit: a header (number, time,
// connection, direction, checksum verdict, warnings, error) and its field
// tree, collapsible, each value with its wire encoding. The field under
// the cursor is what the hex pane highlights.
package detail
