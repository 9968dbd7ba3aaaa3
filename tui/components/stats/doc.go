// Package stats is the statistics view: units and bytes per type, the
// rate of units over time as a chart of unicode blocks, and request/answer
// latency, overall and per connection, as a histogram with the buckets
// RabbitMQ users compare delivery latency with, plus percentiles.
package stats
