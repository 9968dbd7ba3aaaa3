// Package queue provides the message store of one queue of wiretap's
// embedded broker, behaving as a RabbitMQ 3.10 classic queue does, and the
// texts and headers RabbitMQ writes around it.
//
// [Queue] holds a queue's ready messages: publish order within each
// priority level (x-max-priority; priorities above it count as the
// maximum), requeue to the original position, per-queue and per-message
// TTL (fixed at enqueue, expired from the head only), and x-max-length /
// x-max-length-bytes with the three x-overflow modes. It is a plain data
// structure, not safe for concurrent use: the broker holds the queue's lock
// around each call, and does consumers, deliveries, acknowledgements and
// dead-letter routing itself. Per priority, a ring buffer in publish order
// and a heap of requeued entries keep publish, delivery and requeue free
// of allocations in the steady state.
//
// [ParseArgs] validates queue.declare arguments, [Message.ParseProperties]
// a publish's properties, each refusing exactly what RabbitMQ refuses with
// RabbitMQ's reply text, checked against the running broker by the live
// tests (Erlang's layout of the reason included: [ArgError.ReplyText]).
// [DeadLetterHeader] builds the content header of a dead-lettered copy,
// byte for byte as RabbitMQ does: x-death, x-first-death-*, the expiration
// removed.
//
// See https://www.rabbitmq.com/docs/ttl, https://www.rabbitmq.com/docs/maxlength,
// https://www.rabbitmq.com/docs/priority and https://www.rabbitmq.com/docs/dlx.
package queue
