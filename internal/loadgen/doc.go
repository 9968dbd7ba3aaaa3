// Package loadgen is wiretap's load generator: producers and consumers that
// push messages through an AMQP 0-9-1 broker as fast as it takes them (or
// at a set rate) and report rates and latencies the way RabbitMQ's PerfTest
// does. The "wiretap bench" command runs it; scripts/broker-vs-rabbitmq.sh
// compares brokers with it and scripts/bench-vs-tshark.sh makes large
// captures with it.
//
// Each producer and each consumer has its own connection and channel, as
// in PerfTest, through one of two clients: wiretap's own (frames encoded
// and parsed by decode/amqp091, batched writes, no allocation per message)
// or github.com/rabbitmq/amqp091-go, so a comparison between brokers does
// not rest on wiretap's codec alone. Both report the same Result. The
// topology (exchange wiretap.bench-<type>, one or more queues, extra
// non-matching bindings) is declared before and deleted after the run.
//
// A message body starts with the time it was published (8 bytes,
// big-endian Unix nanoseconds) and the producer's sequence number (4
// bytes), so consumers measure latency from publish to delivery without any
// clock but their own host's. With publisher confirms (Config.ConfirmBatch >
// 0) each producer keeps at most that many messages unconfirmed and the
// report adds confirm latency. Latencies are kept in a log-linear histogram
// (percentiles within 0.2%) and counted exactly in the ranges <=1 ms,
// <=5 ms, <=50 ms, <=500 ms, <=1000 ms and >1 s.
//
// A run always ends by itself: Config.Duration is required, and the
// measured time is that duration, after an optional warm-up; setting up and
// stopping are not counted.
package loadgen
