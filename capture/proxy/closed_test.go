package proxy

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestTailKeepsTheLastBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var all []byte
	var tl tail
	for range 2000 {
		p := make([]byte, rng.IntN(100))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		tl.add(p)
		all = append(all, p...)
		want := all[max(0, len(all)-len(tl.b)):]
		if !bytes.Equal(tl.bytes(), want) {
			t.Fatalf("after %d bytes the tail is %x, want %x", len(all), tl.bytes(), want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { tl.add(all[:17]) }); n != 0 {
		t.Fatalf("add allocates %v times", n)
	}
}

func TestCloseHandshake(t *testing.T) {
	// AMQP 1.0 close with no error (list0) and with an empty list.
	close10 := []byte{0, 0, 0, 12, 2, 0, 0, 0, 0, 0x53, 0x18, 0x45}
	close10b := []byte{0, 0, 0, 14, 2, 0, 0, 0, 0, 0x53, 0x18, 0xc0, 1, 0}
	transfer10 := []byte{0, 0, 0, 12, 2, 0, 0, 0, 0, 0x53, 0x14, 0x45}
	for _, c := range []struct {
		name           string
		client, server []byte
		want           string
	}{
		{"0-9-1 close-ok from the server", []byte("publish..."), append([]byte("deliveries"), amqpCloseOK...), "AMQP connection.close-ok"},
		{"0-9-1 close-ok from the client", append([]byte("acks"), amqpCloseOK...), []byte{1, 0, 0, 0, 0, 0, 4, 0, 10, 0, 50, 0xce}, "AMQP connection.close-ok"},
		{"0-9-1 mid-stream", []byte("publish"), amqpCloseOK[:11], ""},
		{"1.0 close both ways", append([]byte{0, 0, 0, 8, 2, 0, 0, 0}, close10...), close10b, "AMQP 1.0 close"},
		{"1.0 close one way", close10, transfer10, ""},
		{"PostgreSQL Terminate", append([]byte("Q\x00\x00\x00\x05\x00"), pgTerminate...), []byte("Z\x00\x00\x00\x05I"), "PostgreSQL Terminate"},
		{"PostgreSQL mid-query", []byte("Q\x00\x00\x00\x05\x00"), []byte("D..."), ""},
		{"nothing", nil, nil, ""},
	} {
		var ct, st tail
		ct.add(c.client)
		st.add(c.server)
		if got, _ := closeHandshake(&ct, &st); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
