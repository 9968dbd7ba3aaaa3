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
//   - [ParseFrame] splits a stream into frames, [Transfer] reads a
//     transfer's fields in place, [ParseMessage] locates a message's
//     sections and bare message, [Message.VerifyChecksum] checks it; the
//     Append functions encode values, composites, frames and footers.
//   - [New] is the per-connection [decode.Factory]: it emits one unit per
//     protocol header and per frame, reassembles deliveries, verifies
//     checksums, and builds field trees on demand.
//
// # Units
//
// Unit.Type is "protocol-header", "empty", a performative's name ("open",
// "transfer", ...) or "sasl.mechanisms" ... "sasl.outcome"; "error" marks
// bytes that could not be framed. A transfer that completes a delivery
// carries Unit.MessageID, Unit.Checksum (ok, mismatch or absent) and the
// message itself ([MessageOf]); its field tree has a "message" subtree
// (amqp.message_id, amqp.checksum, amqp.bare_message, the sections).
// Offsets are relative to Unit.Raw; for a message reassembled from several
// transfers, fields lying in earlier frames have no range, and
// [CompletedMessage] maps message offsets onto Raw. SASL secrets (PLAIN's
// password, any sasl-response) are overwritten with '*' in Raw and shown
// as decode.Redacted unless Options.ShowSecrets; Unit.Secret is set.
// After a capture gap the decoder resumes at the next plausible frame
// header.
//
// # Immutability
//
// [Immutability] pairs messages entering a broker with the same messages
// leaving it and reports whether their bare messages are byte-identical.
// The pipeline owns one per capture, calls [Immutability.Observe] for
// every unit in output order before the unit reaches a sink (it annotates
// the leaving transfer's field tree and warnings), and prints
// [Immutability.Summary] at the end of a headless run.
//
// The spec tables (primitive encodings, described types, restricted
// choices) are generated from the specification's XML.
package amqp10

//go:generate go run ./internal/specgen -specs /usr/share/amqp/specs/1-0 -o spec_gen.go
