package pgwire

// SetMaxWaiting sets how many CompressedMessages may wait to be collected
// under decode.Options.Defer, for a test; it returns what restores it.
func SetMaxWaiting(n int) (restore func()) {
	old := maxWaiting
	maxWaiting = n
	return func() { maxWaiting = old }
}
