package pipeline

import (
	"path/filepath"
	"testing"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/output"
)

// TestFieldsOnAnotherGoroutine checks the contract the TUI and the
// parallel printer rely on: once emitted, a unit's Dissect reads nothing the
// decoder goes on to change, so field trees can be built on another
// goroutine while decoding continues. Run with -race.
func TestFieldsOnAnotherGoroutine(t *testing.T) {
	files, _ := filepath.Glob("../testdata/*.pcap*")
	for _, path := range files {
		ch := make(chan *decode.Unit, 1)
		done := make(chan int)
		go func() {
			var buf []byte
			n := 0
			for u := range ch {
				buf = output.AppendJSON(buf[:0], u, output.JSONOptions{Raw: true})
				n++
			}
			done <- n
		}()
		p := New(Config{Sink: func(u *decode.Unit) { ch <- u }})
		capture.ReadFile(path, p, nil)
		p.Finish()
		close(ch)
		if n := <-done; n == 0 {
			t.Errorf("%s: no units", path)
		}
	}
}
