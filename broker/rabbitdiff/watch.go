package rabbitdiff

import (
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// watch follows both directions of a connection's frames to know which
// channels have a client waiting for a synchronous reply. It parses the
// recorded bytes incrementally and allocates nothing once its pending list
// has grown to the number of channels in use.
type watch struct {
	clientOff, serverOff int
	clientDone           bool // stopped parsing: not AMQP, or malformed
	serverDone           bool
	md                   amqp091.MethodDecoder
	pending              []pending
}

// pending is one channel's outstanding synchronous requests.
type pending struct {
	ch    uint16
	n     int
	what  string // the oldest outstanding method's name
	since time.Time
}

// client parses what the client has sent since the last call.
func (w *watch) client(b []byte, now time.Time) {
	if w.clientDone {
		return
	}
	if w.clientOff == 0 {
		if len(b) < 8 {
			return
		}
		w.add(0, "the protocol header", now)
		w.clientOff = 8
		if string(b[:8]) != amqp091.ProtocolHeader {
			// The server should answer with its own header and close.
			w.clientDone = true
			return
		}
	}
	for {
		f, n, err := amqp091.ParseFrame(b[w.clientOff:], 0)
		if err == amqp091.ErrShortBuffer {
			return
		}
		if err != nil {
			// A broken frame deserves a connection.close: wait for it.
			w.add(0, "a malformed frame", now)
			w.clientDone = true
			return
		}
		w.clientOff += n
		if f.Type != amqp091.FrameMethod {
			continue
		}
		m, err := w.md.Decode(f.Payload)
		if err != nil {
			w.add(f.Channel, "a malformed method", now)
			continue
		}
		if expectsReply(m) {
			w.add(f.Channel, m.Name(), now)
		}
	}
}

// server parses what the server has sent since the last call.
func (w *watch) server(b []byte, now time.Time) {
	if w.serverDone {
		return
	}
	if w.serverOff == 0 && len(b) >= 4 && string(b[:4]) == "AMQP" {
		// A protocol header back: the server refused ours.
		w.clear()
		w.serverDone = true
		return
	}
	for {
		f, n, err := amqp091.ParseFrame(b[w.serverOff:], 0)
		if err == amqp091.ErrShortBuffer {
			return
		}
		if err != nil {
			w.clear()
			w.serverDone = true
			return
		}
		w.serverOff += n
		if f.Type != amqp091.FrameMethod {
			continue
		}
		m, err := w.md.Decode(f.Payload)
		if err != nil {
			w.answer(f.Channel, now)
			continue
		}
		switch m.(type) {
		case *amqp091.ConnectionClose, *amqp091.ConnectionCloseOk:
			w.clear()
		case *amqp091.ChannelClose:
			// The server drops the channel's frames until close-ok.
			w.drop(f.Channel)
		case *amqp091.BasicDeliver, *amqp091.BasicReturn, *amqp091.BasicAck,
			*amqp091.BasicNack, *amqp091.BasicCancel, *amqp091.ChannelFlow,
			*amqp091.ConnectionBlocked, *amqp091.ConnectionUnblocked:
			// Unsolicited: answers nothing.
		default:
			w.answer(f.Channel, now)
		}
	}
}

// expectsReply says whether the server owes the client an answer to m.
func expectsReply(m amqp091.Method) bool {
	switch m := m.(type) {
	case *amqp091.ConnectionTuneOk, *amqp091.ConnectionCloseOk, *amqp091.ChannelCloseOk,
		*amqp091.ChannelFlowOk, *amqp091.BasicCancelOk, *amqp091.ConnectionUpdateSecretOk:
		return false
	case *amqp091.ExchangeDeclare:
		return !m.NoWait
	case *amqp091.ExchangeDelete:
		return !m.NoWait
	case *amqp091.ExchangeBind:
		return !m.NoWait
	case *amqp091.ExchangeUnbind:
		return !m.NoWait
	case *amqp091.QueueDeclare:
		return !m.NoWait
	case *amqp091.QueueBind:
		return !m.NoWait
	case *amqp091.QueuePurge:
		return !m.NoWait
	case *amqp091.QueueDelete:
		return !m.NoWait
	case *amqp091.BasicConsume:
		return !m.NoWait
	case *amqp091.BasicCancel:
		return !m.NoWait
	case *amqp091.ConfirmSelect:
		return !m.Nowait
	}
	class, id := m.IDs()
	info := amqp091.LookupMethod(class, id)
	return info != nil && info.Synchronous
}

func (w *watch) add(ch uint16, what string, now time.Time) {
	for i := range w.pending {
		if p := &w.pending[i]; p.ch == ch {
			if p.n == 0 {
				p.what, p.since = what, now
			}
			p.n++
			return
		}
	}
	w.pending = append(w.pending, pending{ch: ch, n: 1, what: what, since: now})
}

// answer settles the oldest request on ch; the next one's wait starts now,
// since the server is evidently working through them.
func (w *watch) answer(ch uint16, now time.Time) {
	for i := range w.pending {
		if p := &w.pending[i]; p.ch == ch && p.n > 0 {
			p.n--
			p.since = now
			if p.n > 0 {
				p.what = "a pipelined request"
			}
			return
		}
	}
}

func (w *watch) drop(ch uint16) {
	for i := range w.pending {
		if w.pending[i].ch == ch {
			w.pending[i].n = 0
		}
	}
}

func (w *watch) clear() {
	for i := range w.pending {
		w.pending[i].n = 0
	}
}

// oldest returns the request waited on longest.
func (w *watch) oldest() (what string, ch uint16, since time.Time, ok bool) {
	for _, p := range w.pending {
		if p.n > 0 && (!ok || p.since.Before(since)) {
			what, ch, since, ok = p.what, p.ch, p.since, true
		}
	}
	return
}
