// Package route provides the routing indexes of the embedded broker's
// exchanges: for each exchange, its bindings and the structure its type
// finds destinations by, matching as RabbitMQ 3.10 does, and fast.
//
// One [Index] per exchange ([New]) holds that exchange's bindings. A
// binding is identified by its destination, key and arguments, as in
// RabbitMQ: two bindings differing only in their arguments are two
// bindings, in every index, and removing one leaves the other routing.
// Arguments are compared in a canonical form, sorted by key (RabbitMQ
// sorts field tables before comparing), with values normalised to what
// RabbitMQ's term equality sees.
//
// [Index.Route] appends the destinations of the matching bindings, each
// once, without allocating in steady state:
//
//   - fanout: one ready, deduplicated slice of destinations, rebuilt as
//     bindings come and go; no binding is looked at per message.
//   - direct: a map from routing key to its ready destinations.
//   - topic: a trie of binding-key words with "*" and "#" edges, as
//     RabbitMQ keeps one. Words are split on '.', empty words are words,
//     the empty key has none; "*" takes exactly one word, "#" any number.
//     Literal words are interned, so a message hashes each of its words
//     once; each "#" node is matched once per message, so no node is
//     matched more than once per word and patterns like "#.#.#.a" cost
//     no more than that (RabbitMQ's walk is exponential in them). Routes
//     are cached per routing key where it pays: a bounded cache (512
//     two-way sets) switched on when walks have been costly and off when
//     keys do not repeat, emptied whenever a binding changes.
//   - headers: x-match all (the default), any, all-with-x and any-with-x;
//     arguments starting "x-" are ignored except under the -with-x
//     modes; a void argument matches on the header's presence; values
//     compare as RabbitMQ 3.10's Erlang == does (numbers of any width and
//     floats by value, a longstr equal to a byte array of the same bytes,
//     nested tables and arrays with their types). Bindings are filed
//     under an argument they need (all) or each argument (any), so a
//     message looks up only its own headers' keys and values and checks
//     just the bindings found there.
//
// Route returns the exchanges an exchange is bound to among the
// destinations, without following them; a [Resolver] walks
// exchange-to-exchange bindings and alternate exchanges to the queues,
// visiting each exchange once so a cycle ends. [Index.Explain] and
// [Resolver.Explain] say, for route explain, which bindings matched and
// why. [CheckBinding] refuses what RabbitMQ refuses at bind time.
//
// The broker's part: on queue.bind and exchange.bind it calls
// [CheckBinding] (a refusal is a 406 with the error's Text) and then
// Add; on unbind, Remove (unbinding what does not exist is no error in
// RabbitMQ, hence the bool); when a queue or exchange is deleted,
// RemoveDest on every exchange bound to it; on publish, [RoutingKeys]
// (the routing key and those of the CC and BCC headers; a refusal is a
// 406) and one [Resolver.Resolve], or [Resolver.ResolveKeys] for several
// keys, from the exchange named (the default exchange, which has no
// index, routes to the queues the keys name); an empty result is what
// mandatory returns. A binding's arguments are copied; a
// message's key and headers are not kept past the call.
//
// Nothing here is safe for concurrent use: the broker holds the
// exchange's lock around every call on its Index, and keeps a Resolver
// per channel.
package route
