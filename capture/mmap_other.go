//go:build !linux

package capture

import "os"

// mapping is a file mapped in memory; elsewhere than on Linux, files are
// read through a buffer.
type mapping struct{ mem []byte }

func mapFile(*os.File) *mapping { return nil }

func (m *mapping) advance(int64) {}

func (m *mapping) close() {}

func (m *mapping) rewind() {}
