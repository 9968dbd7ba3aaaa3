//go:build !linux

package capture

// Only Linux tells how long work waited for a CPU; elsewhere the decoder
// is not paced.

func openPressureClock() (stallClock, func()) { return nil, nil }
func openThreadClock() (stallClock, func())   { return nil, nil }
func lockThread()                             {}
func unlockThread()                           {}
