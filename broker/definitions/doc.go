// Package definitions provides RabbitMQ's definitions file: the JSON
// document `rabbitmqctl export_definitions` and the management UI's
// "Export definitions" write, and `rabbitmqctl import_definitions` and
// the load_definitions setting read. It holds users (with password hashes
// in RabbitMQ's format), vhosts, permissions and topic permissions,
// runtime and global parameters, policies, queues, exchanges and
// bindings; the embedded broker exports its state as one and imports one
// at start-up, so topologies move between it and RabbitMQ.
//
// [Parse] accepts what RabbitMQ 3.6 to 3.10 write: tags as an array (3.10)
// or a comma-separated string (older, and 3.10's vhost metadata), vhost
// description and tags at the top level or in metadata, vhost limits as an
// object or as 3.10's list of pairs. It is strict about the types of the
// keys it knows and ignores the others. [Definitions.Write] writes what
// RabbitMQ 3.10 writes, indented, keys in RabbitMQ's (alphabetical) order.
//
// What goes into an export is the exporter's choice; RabbitMQ leaves out
// exclusive queues, the default exchange, amq.* exchanges and internal
// exchanges, and bindings from the default exchange.
//
// Queue, exchange and binding arguments, policy definitions and parameter
// values stay JSON-shaped (map[string]any, []any, string, bool,
// [json.Number]); [ToTable] and [FromTable] convert arguments to and from
// AMQP field tables with RabbitMQ's choice of types.
//
// See https://www.rabbitmq.com/definitions.html.
package definitions
