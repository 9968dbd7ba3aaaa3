package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestCorpusCurrent: the files in testdata/hostile are what this source
// writes (compared uncompressed; run go generate to refresh them).
func TestCorpusCurrent(t *testing.T) {
	for _, c := range cases {
		name := c.file
		if c.gz {
			name += ".gz"
		}
		b, err := os.ReadFile(filepath.Join("../../testdata/hostile", name))
		if err != nil {
			t.Errorf("%v (go generate ./internal/hostilegen)", err)
			continue
		}
		if c.gz {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
		}
		if !bytes.Equal(b, c.build(1)) {
			t.Errorf("%s is not what hostilegen writes: go generate ./internal/hostilegen", name)
		}
	}
}
