// Package compsim answers "what would protocol compression save on my
// traffic?": it re-encodes the backend messages of PostgreSQL connections
// as the "Protocol Compression (fourth attempt)" patch would send them
// (CompressedMessages 'z' containers, one compression frame flushed after
// every N messages, optionally ended at each transaction), counts the
// bytes on the wire, and produces the compressed streams themselves so
// that captures of compressed traffic can be synthesised.
//
// The encoders are klauspost/compress zstd (default level) and pierrec/lz4
// (fast); the patch uses the C libraries, whose output sizes differ by a
// few percent.
package compsim
