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
//
// A caller that lets go of every unit once it is written (`read`) gives
// the decoders an [Arena]: units, what [Slots] keeps beside them and the
// bytes they own alone are then recycled once the caller releases them,
// and a decoder must read nothing of a unit after emitting it.
package decode
