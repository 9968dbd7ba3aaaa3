// Package pgwire decodes the PostgreSQL frontend/backend protocol, versions
// 3.0 and 3.2, as described in the PostgreSQL documentation chapter
// "Frontend/Backend Protocol" (protocol-message-formats.html), plus the
// CompressedMessages ('z') extension proposed on pgsql-hackers in
// "Protocol Compression (fourth attempt)".
//
// The package has three layers:
//
//   - a codec: [ReadHeader] frames typed messages, [MessageName] names them
//     the way libpq's trace does, and one type per message family
//     ([StartupMessage], [Query], [Parse], [Bind], [DataRow],
//     [RowDescription], [ErrorResponse], [CopyResponse],
//     [CompressedMessages], [XLogData], ...) decodes in place from a body
//     without allocating in steady state (slices point into the body) and
//     encodes by appending; errors name the message, what was short and
//     where;
//   - a per-connection [decode.Decoder] built by [New] (a [decode.Factory])
//     that follows the startup phase (SSL/GSS negotiation, authentication
//     exchanges, TLS switch), COPY and streaming replication, inflates
//     CompressedMessages with a streaming context per connection (zstd on
//     a goroutine of its own, overlapping the decoding, when
//     [decode.Options.Defer] lets containers wait), redacts secrets, and
//     resynchronises after gaps;
//   - field trees with Wireshark's pgsql.* names, built lazily by
//     [decode.Unit.Fields], and a [decode.Finder] that answers a filter's
//     lookup of one field (pgsql.query, pgsql.tag, the error fields, ...)
//     without building the tree, and tells at once from the type byte
//     that a message cannot hold it.
//
// Sub-packages: pqtrace prints units exactly as libpq's PQtrace does;
// compsim estimates and produces compressed backend streams.
package pgwire
