// Package loadgen is wiretap's load generator: producers and consumers that
// push messages through an AMQP 0-9-1 broker as fast as it takes them and
// report rates and latencies the way RabbitMQ's PerfTest does. The
// "wiretap bench" command runs it; scripts/bench-vs-tshark.sh uses it to make
// large captures.
//
// Each producer and each consumer has its own connection and channel, as
// in PerfTest. A message body starts with the time it was published (8
// bytes, big-endian Unix nanoseconds) and the producer's sequence number (4
// bytes), so consumers measure latency from publish to delivery without any
// clock but their own host's. With publisher confirms (Config.ConfirmBatch >
// 0) each producer keeps at most that many messages unconfirmed and the
// report adds confirm latency.
//
// A run always ends by itself: Config.Duration is required.
package loadgen
