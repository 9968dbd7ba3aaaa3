// Package pqtrace prints PostgreSQL units the way libpq's PQtrace does
// (src/interfaces/libpq/fe-trace.c, PostgreSQL 15) with
// PQTRACE_SUPPRESS_TIMESTAMPS: one line per message, tab-separated
// direction, length field and message name, then each field preceded by a
// space: integers in decimal, strings in double quotes, byte strings in
// single quotes with non-printable bytes as \xNN, single bytes bare.
//
// Messages carried inside a CompressedMessages are printed with direction
// "B*" before the CompressedMessages line that completes them, as the
// protocol-compression patch's libpq does.
//
// By default the printer fills in what libpq 15 leaves out (the contents
// of CopyData, SASL data after the Authentication code, the options of
// NegotiateProtocolVersion, frontend 'p' messages); with Options.Libpq15
// it reproduces libpq 15 exactly, including its "mismatched message
// length" lines. README-findings.md in the parent directory lists the
// differences.
package pqtrace
