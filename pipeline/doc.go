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
// What of a unit need not be done on the decoding goroutine (the AMQP
// 1.0 immutability check, summaries made of a unit's bytes alone) is
// done as the pipeline emits it, or, with [Config.Staged], left to the
// caller's [Pipeline.Stage], which `wiretap read` runs on a goroutine of
// its own between decoding and rendering.
//
// It is the arrow between the boxes of ARCHITECTURE.md: it knows the
// interfaces of both sides and the details of neither.
package pipeline
