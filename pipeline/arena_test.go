package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// TestArena checks the rule decode.Arena sets the decoders: once emitted,
// a unit taken from an arena is read by nobody after its release. Every
// shipped and hostile capture is decoded as `read` decodes it (mapped,
// staged, deferred work, transient units), once with an arena whose slabs
// are small enough to be reused a few units after they are released, and
// once without; the units' JSON (bytes included) must agree. A unit read
// after its release reads cleared or reused memory, and differs (a B*
// message names its CompressedMessages as parent by number; an AMQP
// 0-9-1 message keeps its method and header frames). Run with -race: a
// release the readers are not ordered before is a race.
func TestArena(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	hostile, _ := filepath.Glob("../testdata/hostile/*.pcap*")
	for _, path := range hostile {
		switch filepath.Base(path) {
		case "pgsql-zstd-windows-20.pcapng", "pgsql-zstd-tiny-60m.pcapng":
			// A minute between them, for what the shipped zstd
			// captures test already.
		default:
			files = append(files, path)
		}
	}
	reused, bufs := 0, 0
	for _, path := range files {
		want, _, _ := decodeForArena(t, path, nil)
		arena := decode.NewArena(4)
		arena.Poison = true
		got, n, b := decodeForArena(t, path, arena)
		if len(got) != len(want) {
			t.Fatalf("%s: %d units with an arena, %d without", path, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: unit %d differs with an arena:\n%s\nwithout:\n%s", path, i+1, got[i], want[i])
			}
		}
		reused += n
		bufs += b
	}
	// (Few shipped captures gather messages large enough for their
	// buffers to be pooled: the protocols' stable-input tests do.)
	if reused < 1000 {
		t.Fatalf("the arena reused %d slabs: the test tests little", reused)
	}
	t.Logf("the arena reused %d slabs and %d buffers", reused, bufs)
}

// decodeForArena decodes path as read does, rendering each batch of
// units on another goroutine and then releasing it to arena. It returns
// the units' JSON and how many times the arena reused a slab and a
// buffer.
func decodeForArena(t *testing.T, path string, arena *decode.Arena) (lines []string, reused, bufs int) {
	t.Helper()
	in, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	opt := decode.DefaultOptions()
	opt.Transient, opt.StableInput, opt.Arena = true, in.Stable(), arena
	opt.Defer = new(decode.Deferred)
	batches := make(chan []*decode.Unit, 2)
	done := make(chan struct{})
	var p *Pipeline
	go func() {
		defer close(done)
		for b := range batches {
			for _, u := range b {
				p.Stage(u)
				lines = append(lines, string(output.AppendJSON(nil, u, output.JSONOptions{Raw: true})))
			}
			arena.Release(b)
		}
	}()
	var cur []*decode.Unit
	p = New(Config{Options: opt, Staged: true, Sink: func(u *decode.Unit) {
		cur = append(cur, u)
		if len(cur) == 5 {
			batches <- cur
			cur = nil
		}
	}})
	in.Read(p, nil)
	p.Finish()
	batches <- cur
	close(batches)
	<-done
	if arena != nil {
		st := arena.Stats()
		reused, bufs = st.Reused, st.BytesReused
	}
	return lines, reused, bufs
}
