// Package mgmt provides the part of RabbitMQ's management HTTP API that
// tools use, served by the embedded broker (by default on 127.0.0.1:15672)
// with RabbitMQ 3.10's paths, JSON, status codes and error texts, so that
// rabbitmqadmin, client libraries' test suites (amqp091-go's recovery
// tests list /api/connections and DELETE one) and monitoring scripts work
// against it unchanged.
//
// [New] returns an [http.Handler] for /api/...: the overview, connections
// (GET and DELETE), channels, exchanges, queues, bindings, consumers,
// users, vhosts, permissions, whoami and definitions (GET and POST). It
// reads the broker only through [state.Source], one fresh snapshot per
// request, and keeps nothing of it but a few samples of each object's
// counters, from which it computes the "_details": {"rate": r} figures.
//
// Names in paths are URL-escaped ("/" is %2F) and split before they are
// unescaped. Every request authenticates with HTTP basic against
// [Users]; what a user sees follows RabbitMQ's tags: administrator sees
// everything, monitoring every connection and channel, management and
// policymaker their own and the vhosts they have permissions in. Lists
// take RabbitMQ's columns, sort, sort_reverse and page, page_size, name,
// use_regex parameters.
//
// Responses are rendered by an append-only JSON encoder into pooled
// buffers, with no reflection; in steady state rendering allocates nothing.
//
// The reference is RabbitMQ 3.10.8 itself: compare_test.go builds one
// topology on it, runs the same requests against its management plugin
// (enabled on port 15679 for the test, WIRETAP_MGMT_COMPARE=1) and over a
// fake broker holding the same objects, and checks that keys, value types,
// status codes and error bodies agree; it lists what is left out because
// the broker has no such figure (Erlang's reductions and garbage
// collection, queue memory, idle_since, per-channel message rates). See
// https://www.rabbitmq.com/docs/management#http-api and
// https://rawcdn.githack.com/rabbitmq/rabbitmq-server/v3.10.8/deps/rabbitmq_management/priv/www/api/index.html.
package mgmt
