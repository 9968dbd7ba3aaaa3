// Package tshark runs Wireshark's tshark on a capture file and returns the
// protocol frames its dissectors found, in a form that can be compared frame
// for frame with wiretap's own units: per TCP stream and direction, the
// sequence of AMQP 0-9-1 frames (channel and class.method), AMQP 1.0 frames
// (performatives, SASL frames, empty frames) and PostgreSQL messages.
//
// It is a test oracle, not part of wiretap: tests use it to check that
// wiretap decodes real captures the way an independent implementation does.
// Names follow wiretap's --format json "type" key (INTERFACES.md), not
// tshark's Info column: "basic.publish", "content-header", "transfer",
// "sasl.init", "RowDescription".
//
// tshark is asked for a few fields with -T fields; when one TCP segment holds
// several protocol frames tshark reports each field once per frame, joined
// by an aggregator, and [Parse] lines the occurrences up again frame by
// frame (a method class and method id belong to each method frame in turn,
// an AMQP 1.0 performative to each non-empty AMQP frame, and so on).
//
// [Run] runs tshark and returns []Frame; [Sequences] groups frames by
// stream and direction; [Diff] compares two lists of frames (tshark's and
// wiretap's units turned into Frames) and says where they part.
//
// Known differences between tshark 4.0's dissectors and the protocols,
// which callers comparing against tshark must allow for:
//
//   - The AMQP 0-9-1 client's protocol header ("AMQP\x00\x00\x09\x01") is
//     shown as "AMQP (unknown version)" with no fields. [Parse] reports it
//     as a protocol-header frame with Inferred set (an 8-byte AMQP payload
//     with nothing dissected).
//   - tshark's method tables lack exchange.unbind-ok (40.51) and
//     connection.update-secret/-ok (10.70/10.71), shown as "Unknown"; this
//     package names methods from its own table built from RabbitMQ's spec,
//     so they come out right.
//   - The first frame of a multi-frame AMQP 1.0 transfer is flagged
//     [Malformed Packet] (tshark decodes the partial payload as a whole
//     message); the frame itself is still reported.
//   - A frame header that claims more bytes than the capture holds (a 2 GiB
//     frame) leaves tshark waiting for reassembly: the rest of that
//     direction is reported as TCP segments, so no frames at all.
package tshark
