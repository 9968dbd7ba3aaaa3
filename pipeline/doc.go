// Package pipeline wires a capture source to protocol decoders and sinks:
// it implements [capture.Handler], decides per connection who the client is
// and which protocol is spoken (SYN, then the protocol header, then
// --decode-as and well-known ports), runs one stateful [decode.Decoder] per
// connection, numbers the units it emits and keeps the per-connection
// counters the outputs and the TUI show.
//
// It is the arrow between the boxes of ARCHITECTURE.md: it knows the
// interfaces of both sides and the details of neither.
package pipeline
