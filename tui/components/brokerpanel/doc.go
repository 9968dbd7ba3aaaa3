// Package brokerpanel provides the TUI's broker panel: a read-only,
// full-screen view of the embedded broker through [state.Source]
// snapshots (overview, exchanges, queues with rates, bindings,
// connections, channels, consumers, users and vhosts, permissions) and
// the result of a route explain ([state.Route]).
//
// The panel knows nothing of the broker's internals: the root model takes
// a [Snapshot] about once a second while the panel is open, and rates are
// the counters' differences between two snapshots. Enter on a connection,
// channel, consumer or queue reports a [JumpMsg] that the root turns into
// a connection choice or a display filter on the unit list.
package brokerpanel
