package decode

// Pending reports whether work is waiting to be settled (for the tests:
// nothing else asks).
func (d *Deferred) Pending() bool { return d != nil && d.finish != nil }
