package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// TestReadReusesStageMemory reads a consumer's stream of deliveries long
// enough that read reuses the memory its stage makes their summaries in
// (pipeline.LendStage) many times over, each batch's once it is written:
// every delivery's line must show its own tag, none a tag of a later
// batch written over it.
func TestReadReusesStageMemory(t *testing.T) {
	const messages = 40000 // 120,000 units: some thirty batches
	var chunks []chunk
	chunks = append(chunks, chunk{true, []byte("AMQP\x00\x00\x09\x01")})
	var b []byte
	for tag := uint64(1); tag <= messages; tag++ {
		m := &amqp091.BasicDeliver{ConsumerTag: []byte("ctag-1"), DeliveryTag: tag, Exchange: []byte("fan"), RoutingKey: []byte("")}
		b = amqp091.AppendMessage(b, 1, m, &amqp091.Properties{}, []byte("sixteen bytes..."), 131072)
		if tag%100 == 0 {
			chunks = append(chunks, chunk{false, b})
			b = nil
		}
	}
	path := filepath.Join(t.TempDir(), "deliveries.pcapng")
	writeCapture(t, path, []synthFlow{{client: "10.0.0.1:40000", server: "10.0.0.2:5672", chunks: chunks}})
	out, stderr, code, _ := runWiretap(t, "read", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	next := uint64(1)
	for line := range strings.Lines(out) {
		i := strings.Index(line, "Basic.Deliver ")
		if i < 0 {
			continue
		}
		want := "Basic.Deliver ctag=ctag-1 tag=" + strconv.FormatUint(next, 10) + " "
		if !strings.HasPrefix(line[i:], want) {
			t.Fatalf("delivery %d: %q, want it to begin %q", next, line[i:], want)
		}
		next++
	}
	if next != messages+1 {
		t.Fatalf("%d deliveries shown, want %d", next-1, messages)
	}
}
