package broker

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/queue"
)

// TestMain runs the package's tests with message poisoning on (a message
// read, held or written after its last release panics or is found), but
// for benchmarks, which measure the broker as it runs; WIRETAP_POISON=0
// turns it off. At the end every message allocated must have been freed:
// each test's brokers are closed, which lets go of what their queues held.
func TestMain(m *testing.M) {
	flag.Parse()
	poison := os.Getenv("WIRETAP_POISON") != "0"
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		poison = false
	}
	queue.SetPoisoning(poison)
	code := m.Run()
	if poison {
		queue.FlushQuarantine()
		if n := queue.LiveMessages(); n != 0 && code == 0 {
			fmt.Fprintf(os.Stderr, "broker: %d messages allocated by the tests were never freed\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

// checkLedger fails t when a closed broker still holds messages or counts
// bytes against its watermark: a reference taken and never released.
func checkLedger(t testing.TB, b *Broker) {
	t.Helper()
	if n := b.MessagesHeld(); n != 0 {
		t.Errorf("broker: %d messages still held after close", n)
	}
	if n := b.mem.used.Load(); n != 0 {
		t.Errorf("broker: %d bytes still counted against the watermark after close", n)
	}
}

// productionMode turns poisoning off for the rest of a test that measures
// allocations: a poisoned message is quarantined, not reused.
func productionMode(t testing.TB) {
	was := queue.SetPoisoning(false)
	t.Cleanup(func() { queue.SetPoisoning(was) })
}

// TestPublishCycleAllocatesNothing: in steady state a message's whole way,
// from its publish frames through routing, enqueueing and delivery to its
// basic.ack, allocates nothing, for one queue and a fanout to three, with
// and without acks: the message comes from the pool and goes back to it.
func TestPublishCycleAllocatesNothing(t *testing.T) {
	productionMode(t)
	for _, c := range cycleCases {
		t.Run(c.name, func(t *testing.T) {
			cy := newCycle(t, c.kind, c.queues, c.size, c.noAck)
			cy.publish(t) // the buffers' first growth
			if n := testing.AllocsPerRun(1000, func() { cy.publish(t) }); n != 0 {
				t.Errorf("%v allocations per message", n)
			}
			if n := cy.pub.c.b.MessagesHeld(); n != 0 {
				t.Errorf("%d messages held after every delivery was settled", n)
			}
		})
	}
}
