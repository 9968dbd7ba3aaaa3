package rabbitdiff

import (
	"testing"
	"time"
)

// FuzzBuild feeds arbitrary server bytes to the transcript builder: it
// must not panic and must render the same bytes the same way. The corpus
// in testdata/fuzz/FuzzBuild holds server streams recorded from RabbitMQ.
func FuzzBuild(f *testing.F) {
	_, server := watchFrames()
	f.Add(server)
	f.Add([]byte("AMQP\x00\x00\x09\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs := []Recording{{ServerBytes: b}}
		a := Build(recs, Options{Prefix: "rd00000000."}).String()
		if again := Build(recs, Options{Prefix: "rd00000000."}).String(); a != again {
			t.Errorf("two renderings differ:\n%s", UnifiedDiff("a", a, "b", again))
		}
		Build(recs, Options{Strict: true})
	})
}

// FuzzWatch feeds arbitrary client and server bytes, whole and in pieces,
// to the relay's watchdog parser.
func FuzzWatch(f *testing.F) {
	client, server := watchFrames()
	f.Add(client, server, uint8(7))
	f.Fuzz(func(t *testing.T, client, server []byte, step uint8) {
		var w watch
		now := time.Now()
		n := int(step) + 1
		for i := n; i < len(client)+n; i += n {
			w.client(client[:min(i, len(client))], now)
		}
		for i := n; i < len(server)+n; i += n {
			w.server(server[:min(i, len(server))], now)
		}
		w.oldest()
		var whole watch
		whole.client(client, now)
		whole.server(server, now)
		_, _, _, a := w.oldest()
		_, _, _, b := whole.oldest()
		if a != b {
			t.Errorf("in pieces of %d pending=%v, whole pending=%v", n, a, b)
		}
	})
}
