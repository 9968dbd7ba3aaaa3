// Package decode provides the protocol-neutral half of wiretap's pipeline:
// units (one per frame or message on the wire), their field trees, the
// per-connection [Decoder] contract, protocol detection, and the byte
// accumulation every stateful decoder needs.
//
// Protocol codecs live in sub-packages (amqp091, amqp10, pgwire); they
// import this package, never the reverse. The pipeline that wires bytes from
// a capture source to decoders and sinks lives in decode/pipeline.
//
// A Unit carries what is needed to print its summary line; its field tree is
// built on demand by [Unit.Fields], so large bodies are only decoded when
// someone looks at them.
package decode
