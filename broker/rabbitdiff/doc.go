// Package rabbitdiff provides the differential test harness that judges
// wiretap's embedded broker against RabbitMQ 3.10: the same client workload
// runs against both, every server frame is recorded, and the two normalised
// transcripts are compared.
//
// The pieces:
//
//   - [Relay] listens on a loopback port, forwards each connection to a
//     broker and records both directions' bytes ([Recording]). A watchdog
//     closes a connection whose client has waited longer than
//     [Relay.StallTimeout] for the reply to a synchronous method, so a
//     broker that does not answer fails a workload in seconds instead of
//     hanging it.
//   - [Build] decodes the recorded server-to-client bytes with decode/amqp091
//     into a [Transcript]: one line per server frame, per connection and
//     channel. Within a channel, synchronous replies (the -ok methods,
//     closes, basic.return, publisher confirms, basic.get-ok and their
//     content) form one ordered sequence and consumer deliveries
//     (basic.deliver with its content, server-sent basic.cancel) another,
//     because RabbitMQ's channel and queue are separate processes and the
//     two interleave differently from run to run. [Options.Strict] keeps one
//     sequence. Normalised: the run's name prefix ("<run>."), server-named
//     queues, consumer tags and direct reply-to names (<gen1>, <ctag1>,
//     <replyto1>, numbered by first appearance), the time in x-death
//     entries, the values (not the keys) of connection.start's server
//     properties other than capabilities, channel-0 heartbeats, and how
//     publisher confirms are coalesced (each ack or nack is expanded to
//     the delivery tags it confirms and runs are merged, so "ack 3
//     multiple" and "ack 1, ack 2, ack 3" read alike). Everything else,
//     reply texts and field-table value types included, is compared as is.
//   - [RawClient] speaks AMQP 0-9-1 frame by frame on top of decode/amqp091
//     for what a real client library will not send: tune counter-proposals,
//     oversized frames, a wrong frame-end octet, content without a method.
//   - [Workload] is a client scenario; [Workloads] lists them all (written
//     with github.com/rabbitmq/amqp091-go, the raw client, and pika and
//     py-amqp scripts under testdata/ run by Debian's /usr/bin/python3).
//     [Record] runs one through a fresh relay and returns its transcript;
//     [UnifiedDiff] shows how two transcripts differ.
//
// Workloads are written to be deterministic: each waits (at most 5 s) for
// what it expects before its next step, so the transcripts of two runs
// against RabbitMQ are identical, which TestRabbitMQSelfConsistent checks.
// Every workload uses names under its own per-run prefix and the harness
// deletes what a workload registered with [Env.Queue] and [Env.Exchange]
// afterwards, over a connection of its own outside the transcript.
package rabbitdiff
