package amqp10

import (
	"testing"

	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/internal/stablecheck"
)

// TestStableInput: with decode.Options.StableInput, units keep the
// input's bytes where they lie in it, and are the units decoded without
// it, whatever the cut of the stream: frames within one Feed, frames
// completed across calls (taken over from the stream's buffer),
// deliveries kept as pieces and joined by their last transfer, SASL
// credentials redacted in copies of their own (the input is read-only
// here), other protocols' bytes as garbage.
func TestStableInput(t *testing.T) {
	opt := *decode.DefaultOptions()
	stablecheck.Captures(t, New, opt, 4<<20, "../../testdata/*.pcap*")
	// As `read` decodes: a transient caller, on stable input, seldom
	// asking for field trees (text).
	transient := opt
	transient.Transient, transient.FieldsSeldom = true, true
	stablecheck.Captures(t, New, transient, 4<<20, "../../testdata/*.pcap*")
	// And with its units recycled once released (decode.Arena): nothing
	// reads a unit after that.
	arena := transient
	arena.Arena = decode.NewArena(0)
	stablecheck.Captures(t, New, arena, 4<<20, "../../testdata/*.pcap*")
	hdr := []byte("AMQP\x00\x01\x00\x00")
	sasl := append(append([]byte("AMQP\x03\x01\x00\x00"), protonSASLInit...), hdr...)
	for _, per := range []int{100, 4000, 70000} {
		stream := append(append([]byte(nil), sasl...), transfersOf(benchMessage(256<<10), per)...)
		for _, chunk := range []int{7, 1460, 65536} {
			for _, o := range []decode.Options{opt, arena} {
				if err := stablecheck.Check(New, o, stablecheck.Split([2][]byte{stream, rabbitSASLMechanisms}, chunk, true, uint64(per))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	opt.MaxMessage = 100 << 10 // deliveries given up
	opt.ShowSecrets = true
	stream := append(append([]byte(nil), sasl...), transfersOf(benchMessage(256<<10), 4000)...)
	if err := stablecheck.Check(New, opt, stablecheck.Split([2][]byte{stream, nil}, 1460, true, 3)); err != nil {
		t.Fatal(err)
	}
}

// TestStableInputAllocs: whole frames in stable input allocate nothing
// that the same frames copied do not.
func TestStableInputAllocs(t *testing.T) {
	var stream []byte
	for range 32 {
		stream = append(stream, transfersOf(benchMessage(100), 4000)...)
	}
	copied, stable := stablecheck.Allocs(New, nil, decode.DirF, stream)
	if stable > copied {
		t.Errorf("%.1f allocations per Feed of 32 transfers with stable input, %.1f without", stable, copied)
	}
}

// TestTransientAllocs: for a transient caller (decode.Options.Transient),
// units and messages come in larger slabs, so that a run of small transfers costs
// fewer allocations.
func TestTransientAllocs(t *testing.T) {
	var stream []byte
	for range 256 {
		stream = append(stream, transfersOf(benchMessage(100), 4000)...)
	}
	kept, transient := stablecheck.TransientAllocs(New, nil, decode.DirF, stream)
	t.Logf("%.1f allocations per Feed of 256 transfers, %.1f for a transient caller", kept, transient)
	if transient > kept/2 {
		t.Errorf("transient caller: %.1f allocations per Feed of 256 transfers, want at most half of %.1f", transient, kept)
	}
}

// TestStableInputSASLInAMQPFrame: a sasl-init or sasl-response sent in
// an AMQP frame (type 0, not 1) is still redacted, in bytes of its own:
// the input (read-only here, as a mapped capture is) is never written.
// Found by FuzzDecoder: the unit kept the caller's bytes, and the
// redaction wrote into them.
func TestStableInputSASLInAMQPFrame(t *testing.T) {
	hdr := []byte("AMQP\x03\x01\x00\x00")
	mechs := AppendFrame(nil, FrameTypeSASL, 0, AppendComposite(nil, DescriptorSASLMechanisms, AppendSymbolArray(nil, "PLAIN")))
	for _, body := range [][]byte{
		AppendComposite(nil, DescriptorSASLInit, AppendSymbol(nil, "PLAIN"), AppendBinary(nil, []byte("\x00guest\x00secret"))),
		AppendComposite(nil, DescriptorSASLResponse, AppendBinary(nil, []byte("secret"))),
	} {
		stream := append(append([]byte(nil), hdr...), AppendFrame(nil, FrameTypeAMQP, 0, body)...)
		calls := stablecheck.Split([2][]byte{stream, append(append([]byte(nil), hdr...), mechs...)}, 1<<20, false, 1)
		if err := stablecheck.Check(New, *decode.DefaultOptions(), calls); err != nil {
			t.Fatal(err)
		}
	}
}
