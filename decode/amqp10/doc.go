// Package amqp10 decodes AMQP 1.0 (OASIS AMQP 1.0, ISO/IEC 19464) as it
// crosses the wire: protocol headers, frames (§2.3), the type system
// (types.xml, §1), performatives (§2.7), SASL (§5.3), and messages
// reassembled from transfers (§3.2), with RabbitMQ's end-to-end checksums
// over the bare message verified and the immutability of bare messages
// through a broker checked.
//
// The package has three layers, each usable on its own:
//
//   - [Scan], [Value], [Items] and [Composite] locate encoded values in
//     place without allocating; they are the hot path.
//   - [ParseFrame] splits a stream into frames; [Transfer] and the other
//     performative views read the fields the pipeline needs.
//   - [New] is the per-connection [decode.Factory]: it emits one unit per
//     protocol header and per frame, reassembles deliveries, verifies
//     checksums, and builds field trees on demand.
//
// [Immutability] pairs messages entering a broker with the same messages
// leaving it and reports whether their bare messages are byte-identical.
//
// The spec tables (primitive encodings, described types, restricted
// choices) are generated from the specification's XML.
package amqp10

//go:generate go run ./internal/specgen -specs /usr/share/amqp/specs/1-0 -o spec_gen.go
