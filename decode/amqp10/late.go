package amqp10

import "github.com/wiretap-dev/wiretap/decode"

// Completer finishes the transfers a decoder left to a later stage
// ([decode.Options.LateSummaries]): a message whose bytes are at hand
// (one transfer's, or joined from several; not one read in its pieces)
// is attached to its unit unparsed; Complete parses it,
// verifies its checksum and makes the unit's message-id and summary, as
// the decoder does without the option. Parsing is most of a small
// transfer's decoding: left to the pipeline's stage, it runs beside the
// decoding rather than in it. A Completer is not safe for concurrent
// use; one serves any number of connections, their units in order.
type Completer struct {
	carver
	// seldom and slab are the decoders' Options.FieldsSeldom and
	// checksum slab size.
	seldom bool
	slab   int
	// Scratch: the message being parsed, its properties, its summary.
	msg   Message
	props Composite
	sum   []byte
}

// NewCompleter returns a Completer for the units of decoders given opt.
func NewCompleter(opt *decode.Options) *Completer {
	if opt == nil {
		opt = decode.DefaultOptions()
	}
	return &Completer{seldom: opt.FieldsSeldom, slab: opt.Slab(checksumSlab)}
}

// Complete finishes u when its decoder left its message to be finished
// later, and does nothing to any other unit.
func (z *Completer) Complete(u *decode.Unit) {
	if u.Proto != decode.ProtoAMQP10 {
		return
	}
	cm, _ := u.Ext().(*CompletedMessage)
	if cm == nil || !cm.late {
		return
	}
	cm.late = false
	err := ParseMessage(cm.Bytes, &z.msg)
	ck := z.checksum(z.slab)
	*ck = z.msg.VerifyChecksum(cm.Bytes)
	id := z.msg.messageID(cm.Bytes, &z.props, z.text)
	s := z.annotate(u, cm, &z.msg, id, len(cm.Bytes), err, ck, z.seldom, append(z.sum[:0], u.Summary...))
	z.sum = s
	u.Summary = z.text(s)
}
