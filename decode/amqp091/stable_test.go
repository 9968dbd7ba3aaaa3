package amqp091

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// TestStableInput: with decode.Options.StableInput, units keep the
// input's bytes where they lie in it, and are the units decoded without
// it, whatever the cut of the stream: frames within one Feed, frames
// completed across calls (taken over from the stream's buffer), bodies
// kept as pieces, credentials redacted in copies of their own (the input
// is read-only here), other protocols' bytes as garbage.
func TestStableInput(t *testing.T) {
	opt := *decode.DefaultOptions()
	stablecheck.Captures(t, New, opt, 4<<20, "../../testdata/*.pcap*", "../../testdata/corpus/amqp091-large.pcapng")
	// As `read` decodes: a transient caller, on stable input, seldom
	// asking for field trees (text).
	transient := opt
	transient.Transient, transient.FieldsSeldom = true, true
	stablecheck.Captures(t, New, transient, 4<<20, "../../testdata/*.pcap*", "../../testdata/corpus/amqp091-large.pcapng")
	// And with its units recycled once released (decode.Arena): nothing
	// reads a unit, nor its message, after that.
	arena := transient
	arena.Arena = decode.NewArena(0)
	stablecheck.Captures(t, New, arena, 4<<20, "../../testdata/*.pcap*", "../../testdata/corpus/amqp091-large.pcapng")
	client, server := conversation(3, 300<<10, 128<<10)
	for _, chunk := range []int{7, 1000, 65536} {
		for _, o := range []decode.Options{opt, arena} {
			if err := stablecheck.Check(New, o, stablecheck.Split([2][]byte{client, server}, chunk, true, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	opt.MaxMessage = 1 << 12 // bodies cut
	opt.ShowSecrets = true
	if err := stablecheck.Check(New, opt, stablecheck.Split([2][]byte{client, server}, 1460, true, 2)); err != nil {
		t.Fatal(err)
	}
}

// TestStableInputAllocs: whole frames in stable input allocate nothing
// that the same frames copied do not.
func TestStableInputAllocs(t *testing.T) {
	client, _ := conversation(0, 0, 128<<10)
	msgs := publishes(32)
	copied, stable := stablecheck.Allocs(New, client, decode.DirF, msgs)
	if stable > copied {
		t.Errorf("%.1f allocations per Feed of 32 messages with stable input, %.1f without", stable, copied)
	}
}

// TestTransientAllocs: for a transient caller (decode.Options.Transient),
// units and messages come in larger slabs, so that a run of small
// messages costs fewer allocations.
func TestTransientAllocs(t *testing.T) {
	client, _ := conversation(0, 0, 128<<10)
	msgs := publishes(256)
	kept, transient := stablecheck.TransientAllocs(New, client, decode.DirF, msgs)
	t.Logf("%.1f allocations per Feed of 256 messages, %.1f for a transient caller", kept, transient)
	if transient > kept/2 {
		t.Errorf("transient caller: %.1f allocations per Feed of 256 messages, want at most half of %.1f", transient, kept)
	}
}

// publishes is n small messages published on channel 1, their frames
// back to back.
func publishes(n int) []byte {
	var msgs []byte
	for range n {
		msgs = AppendMessage(msgs, 1, &BasicPublish{Exchange: []byte("amq.direct"), RoutingKey: []byte("orders")}, &Properties{}, []byte("0123456789abcdef"), 128<<10)
	}
	return msgs
}
