package proxy

import "encoding/binary"

// tail is the last bytes forwarded in one direction: enough to tell, when
// a connection ends with a reset, whether the protocol's own close
// handshake had ended the session just before (see closeHandshake).
type tail struct {
	b [64]byte
	n int // bytes of b in use, at its end
	// eof: the direction ended with an orderly end of stream (a FIN).
	eof bool
}

// add records p as the latest bytes; it allocates nothing.
func (t *tail) add(p []byte) {
	if len(p) >= len(t.b) {
		copy(t.b[:], p[len(p)-len(t.b):])
		t.n = len(t.b)
		return
	}
	keep := min(t.n, len(t.b)-len(p))
	copy(t.b[len(t.b)-len(p)-keep:], t.b[len(t.b)-keep:])
	copy(t.b[len(t.b)-len(p):], p)
	t.n = keep + len(p)
}

func (t *tail) bytes() []byte { return t.b[len(t.b)-t.n:] }

// amqpCloseOK is AMQP 0-9-1's connection.close-ok frame: a method frame on
// channel 0, class 10 method 51, no arguments.
var amqpCloseOK = []byte{1, 0, 0, 0, 0, 0, 4, 0, 10, 0, 51, 0xce}

// pgTerminate is PostgreSQL's Terminate message.
var pgTerminate = []byte{'X', 0, 0, 0, 4}

// closeHandshake names the close handshake that the last bytes each way
// end with ("AMQP connection.close-ok", "AMQP 1.0 close", "PostgreSQL
// Terminate"), or "" when neither does: what a reset that followed it
// ended was a session already over. amqp says the protocol is AMQP.
func closeHandshake(fromClient, fromServer *tail) (name string, amqp bool) {
	c, s := fromClient.bytes(), fromServer.bytes()
	switch {
	case endsWith(c, amqpCloseOK) || endsWith(s, amqpCloseOK):
		return "AMQP connection.close-ok", true
	case endsWithAMQP10Close(c) && endsWithAMQP10Close(s):
		return "AMQP 1.0 close", true
	case endsWith(c, pgTerminate):
		return "PostgreSQL Terminate", false
	}
	return "", false
}

func endsWith(b, suffix []byte) bool {
	return len(b) >= len(suffix) && string(b[len(b)-len(suffix):]) == string(suffix)
}

// endsWithAMQP10Close reports whether b ends with a whole AMQP 1.0 frame
// (type 0) whose performative is close (descriptor 0x18, small-ulong
// encoded, as every implementation writes it).
func endsWithAMQP10Close(b []byte) bool {
	for i := len(b) - 11; i >= 0; i-- {
		size := binary.BigEndian.Uint32(b[i:])
		if int64(size) != int64(len(b)-i) {
			continue
		}
		doff := int(b[i+4]) * 4
		if doff < 8 || b[i+5] != 0 || i+doff+3 > len(b) {
			return false
		}
		body := b[i+doff:]
		return body[0] == 0 && body[1] == 0x53 && body[2] == 0x18
	}
	return false
}
