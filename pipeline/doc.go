// Package pipeline wires a capture source to protocol decoders and sinks:
// it implements [capture.Handler], decides per connection who the client is
// and which protocol is spoken (SYN, then the protocol header, then
// --decode-as and well-known ports), runs one stateful [decode.Decoder] per
// connection, numbers the units it emits and keeps the per-connection
// counters the outputs and the TUI show. Under a memory budget
// (decode.Options.Budget) each connection has one account, the one its
// capture source opened (capture.Flow.Account) when the source charges
// the same budget, which its decoder charges too; the source's drops
// become warning units on the connection ([Pipeline.Warning]).
//
// It is the arrow between the boxes of ARCHITECTURE.md: it knows the
// interfaces of both sides and the details of neither.
package pipeline
