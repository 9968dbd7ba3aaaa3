package pgwire

// SetMaxWaiting sets how many CompressedMessages may wait to be collected
// under decode.Options.Defer, for a test; it returns what restores it.
func SetMaxWaiting(n int) (restore func()) {
	old := maxWaiting
	maxWaiting = n
	return func() { maxWaiting = old }
}

// SetMaxWaitingBytes sets what the waiting CompressedMessages may hold,
// for a test; it returns what restores it.
func SetMaxWaitingBytes(n int) (restore func()) {
	old := maxWaitingBytes
	maxWaitingBytes = n
	return func() { maxWaitingBytes = old }
}

// Waiting reports how many CompressedMessages wait to be collected in a
// decoder New built, and what their units hold.
func Waiting(d any) (n, bytes int) {
	c := &d.(*Decoder).comp
	return len(c.waiting), c.waitingBytes
}
