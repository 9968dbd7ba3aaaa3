// Command bigcap makes a large capture for the end-to-end measurements
// (scripts/tui-vs-termshark.sh) out of a small real one: it reassembles
// every TCP connection of the input, then writes the connections again
// -copies times as synthesised TCP (capture/pcapng.Synth), each copy from
// its own client address and shifted in time past the previous copy, so a
// decoder sees -copies times the input's connections and units.
//
//	go run ./e2e/internal/bigcap -in testdata/amqp091-pika.pcapng -copies 2000 -out big.pcapng
//
// The bytes inside the connections are the input's, unchanged; only the
// TCP/IP framing is new (segments of at most -mss bytes, handshakes, FINs).
package main
