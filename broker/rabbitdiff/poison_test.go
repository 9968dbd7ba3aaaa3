package rabbitdiff

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/queue"
)

// TestMain runs the workloads against a broker with message poisoning on
// (a message read, held or written after its last release panics or is
// found; WIRETAP_POISON=0 turns it off), and checks at the end that every
// message the brokers allocated was freed.
func TestMain(m *testing.M) {
	flag.Parse()
	poison := os.Getenv("WIRETAP_POISON") != "0"
	queue.SetPoisoning(poison)
	code := m.Run()
	if poison {
		queue.FlushQuarantine()
		if n := queue.LiveMessages(); n != 0 && code == 0 {
			fmt.Fprintf(os.Stderr, "rabbitdiff: %d messages allocated by the brokers were never freed\n", n)
			code = 1
		}
	}
	os.Exit(code)
}
