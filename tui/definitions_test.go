package tui

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestDefinitionsExport: :definitions export FILE writes what the broker
// gives, and says so; a source that is not the broker says it has none.
func TestDefinitionsExport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "defs.json")
	d := newDriver(t, Options{Title: "broker 127.0.0.1:5672", Live: true,
		ExportDefinitions: func(w io.Writer) error {
			_, err := io.WriteString(w, `{"queues":[]}`)
			return err
		}}, 120, 30)
	d.keys(":")
	d.typeText("definitions export " + path)
	d.keys("enter")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != `{"queues":[]}` {
		t.Fatalf("file %q, %v", b, err)
	}
	d.contains("wrote the broker's definitions to " + path)

	d2 := newDriver(t, Options{Title: "file.pcapng"}, 120, 30)
	d2.keys(":")
	d2.typeText("definitions export " + path)
	d2.keys("enter")
	d2.contains("not the broker")
}
