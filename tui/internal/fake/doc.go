// Package fake generates synthetic decoded units for the TUI's tests and
// benchmarks: AMQP 0-9-1 (queue.declare, publisher confirms), AMQP 1.0
// (transfers with checksums ok, mismatch and absent, dispositions) and
// PostgreSQL (extended query protocol, CompressedMessages with nested B*
// messages), each with a field tree whose offsets point into Raw.
//
// The bytes are shaped like the real protocols but are not meant to be
// decodable by wiretap's decoders: only the TUI reads them.
package fake
