// Package output renders units for headless use: the one-line text format,
// the JSON-lines schema of INTERFACES.md, and (through decode/pgwire) libpq's
// trace format. Writers append to a caller's buffer and never use fmt or
// reflection, so printing keeps up with decoding.
package output
