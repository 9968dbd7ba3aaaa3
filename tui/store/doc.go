// Package store holds the units the TUI shows: an append-only table of
// decoded units in output order, indexed by connection and by container
// (CompressedMessages and the B* messages it carried), with the
// request/answer pairing the "jump to answer" key and the latency
// statistics read.
//
// A Store is owned by the UI goroutine. Background work (filtering,
// searching, statistics) runs over a [Store.Snapshot], which stays valid
// while the store grows because units are only ever appended.
package store
