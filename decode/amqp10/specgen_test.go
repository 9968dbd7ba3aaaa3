package amqp10

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSpecGenUpToDate fails when regenerating spec_gen.go from the
// specification XML would change it (the CI check of go:generate).
func TestSpecGenUpToDate(t *testing.T) {
	const specs = "/usr/share/amqp/specs/1-0"
	if _, err := os.Stat(filepath.Join(specs, "types.bare.xml")); err != nil {
		needPeer(t, "the AMQP 1.0 spec XML (Debian's amqp-specs) is not installed")
	}
	if testing.Short() {
		t.Skip("builds the generator")
	}
	out := filepath.Join(t.TempDir(), "spec_gen.go")
	cmd := exec.Command("go", "run", "./internal/specgen", "-specs", specs, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("specgen: %v\n%s", err, b)
	}
	got, _ := os.ReadFile(out)
	have, _ := os.ReadFile("spec_gen.go")
	if !bytes.Equal(got, have) {
		t.Fatal("spec_gen.go is stale: run go generate ./decode/amqp10")
	}
}
