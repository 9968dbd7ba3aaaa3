// Package lineedit is the one-line editor under the filter bar and the
// command line: insertion at a cursor, word and line deletion, and a
// rendering that can underline a range (where a filter fails to parse).
package lineedit
