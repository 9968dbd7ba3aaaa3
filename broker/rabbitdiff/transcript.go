package rabbitdiff

import (
	"slices"
	"strconv"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Options tune how recordings become a transcript.
type Options struct {
	// Prefix is the run's name prefix; it reads "<run>." in the transcript.
	Prefix string
	// Strict keeps one ordered sequence per channel instead of separating
	// deliveries from replies.
	Strict bool
}

// Transcript is what a broker said to one workload, normalised.
type Transcript struct {
	Conns []ConnTranscript
	// Client holds the workload's own observations and its error, if any.
	Client []string

	prefix string
	names  *namer
}

// ConnTranscript is one connection's server frames.
type ConnTranscript struct {
	Channels []ChannelTranscript // by channel number
	// Notes are what the relay or the decoder had to say: bytes that are
	// not frames, a stall, a failed dial.
	Notes []string
}

// ChannelTranscript is one channel's server frames in two ordered
// sequences (one with [Options.Strict]).
type ChannelTranscript struct {
	Channel uint16
	// Replies are the synchronous answers and what RabbitMQ orders with
	// them: -ok methods, closes, basic.return and basic.get-ok with their
	// content, publisher confirms.
	Replies []string
	// Deliveries are basic.deliver with its content and server-sent
	// basic.cancel.
	Deliveries []string
}

// Build decodes the server-to-client bytes of recordings into a transcript.
func Build(recs []Recording, opt Options) *Transcript {
	t := &Transcript{Conns: make([]ConnTranscript, len(recs))}
	for i := range recs {
		t.Conns[i] = decodeConn(&recs[i], opt.Strict)
	}
	t.normalise(opt.Prefix)
	return t
}

// chanState is a channel's transcript under construction.
type chanState struct {
	replies, deliveries []string
	// content is where the next content header and bodies go: the
	// sequence of the last method that carries content.
	content *[]string
	// Publisher confirms seen: every tag up to low, and those above it.
	low       uint64
	confirmed map[uint64]bool
	run       confirmRun
	expanded  uint64 // tags multiple confirms were expanded to

}

// confirmRun is a range of consecutive tags confirmed alike, not yet
// written, so that however the broker coalesced them they read the same.
type confirmRun struct {
	kind     string // "basic.ack", "basic.nack requeue=false"
	from, to uint64
}

func (c *chanState) reply(line string) {
	c.flushConfirms()
	c.replies = append(c.replies, line)
}

func (c *chanState) flushConfirms() {
	r := c.run
	if r.kind == "" {
		return
	}
	line := r.kind + " tag=" + strconv.FormatUint(r.from, 10)
	if r.to != r.from {
		line = r.kind + " tags=" + strconv.FormatUint(r.from, 10) + "-" + strconv.FormatUint(r.to, 10)
	}
	c.replies = append(c.replies, line)
	c.run = confirmRun{}
}

// maxConfirmGap bounds how many tags multiple confirms may expand to on a
// channel, so hostile input cannot make a transcript slow; beyond it the
// frame is shown as sent.
const maxConfirmGap = 1 << 16

func (c *chanState) confirm(kind string, tag uint64, multiple bool) {
	if c.confirmed == nil {
		c.confirmed = make(map[uint64]bool)
	}
	if tag == 0 || (multiple && tag > c.low && c.expanded+(tag-c.low) > maxConfirmGap) {
		c.reply(kind + " tag=" + strconv.FormatUint(tag, 10) + " multiple=" + strconv.FormatBool(multiple) + " (as sent)")
		return
	}
	if !multiple {
		if tag <= c.low || c.confirmed[tag] {
			c.reply(kind + " tag=" + strconv.FormatUint(tag, 10) + " (confirmed again)")
			return
		}
		c.confirmOne(kind, tag)
		return
	}
	if tag <= c.low {
		c.reply(kind + " tag=" + strconv.FormatUint(tag, 10) + " multiple=true (nothing left to confirm)")
		return
	}
	// Everything up to tag not confirmed yet, without a map entry per tag.
	c.expanded += tag - c.low
	for t := c.low + 1; t <= tag; t++ {
		if c.confirmed[t] {
			delete(c.confirmed, t)
			continue
		}
		c.extend(kind, t)
	}
	c.low = tag
	c.advance()
}

func (c *chanState) confirmOne(kind string, tag uint64) {
	c.extend(kind, tag)
	c.confirmed[tag] = true
	c.advance()
}

// extend adds tag to the run of confirms being written.
func (c *chanState) extend(kind string, tag uint64) {
	if c.run.kind == kind && c.run.to+1 == tag {
		c.run.to = tag
		return
	}
	c.flushConfirms()
	c.run = confirmRun{kind: kind, from: tag, to: tag}
}

// advance moves low over the tags confirmed one by one above it.
func (c *chanState) advance() {
	for c.confirmed[c.low+1] {
		delete(c.confirmed, c.low+1)
		c.low++
	}
}

func decodeConn(rec *Recording, strict bool) ConnTranscript {
	var ct ConnTranscript
	if rec.DialErr != "" {
		// The error names addresses that differ between runs.
		ct.Notes = append(ct.Notes, "relay could not reach the broker")
	}
	chans := map[uint16]*chanState{}
	state := func(ch uint16) *chanState {
		c := chans[ch]
		if c == nil {
			c = &chanState{}
			chans[ch] = c
		}
		return c
	}
	buf := rec.ServerBytes
	if len(buf) >= 4 && string(buf[:4]) == "AMQP" {
		n := min(len(buf), 8)
		state(0).reply("protocol-header " + strconv.Quote(string(buf[:n])))
		buf = buf[n:]
		if len(buf) > 0 {
			ct.Notes = append(ct.Notes, strconv.Itoa(len(buf))+" bytes after the protocol header")
			buf = nil
		}
	}
	var md amqp091.MethodDecoder
	var hdr amqp091.ContentHeader
	for len(buf) > 0 {
		f, n, err := amqp091.ParseFrame(buf, 0)
		if err == amqp091.ErrShortBuffer {
			ct.Notes = append(ct.Notes, strconv.Itoa(len(buf))+" bytes of an unfinished frame at the end")
			break
		}
		if err != nil {
			ct.Notes = append(ct.Notes, "not a frame: "+err.Error())
			break
		}
		buf = buf[n:]
		c := state(f.Channel)
		switch f.Type {
		case amqp091.FrameHeartbeat:
			if f.Channel != 0 || len(f.Payload) != 0 {
				c.reply("heartbeat size=" + strconv.Itoa(len(f.Payload)))
			}
		case amqp091.FrameMethod:
			m, err := md.Decode(f.Payload)
			c.content = nil
			if err != nil {
				c.reply("malformed method: " + err.Error())
				continue
			}
			switch m := m.(type) {
			case *amqp091.BasicAck:
				c.confirm("basic.ack", m.DeliveryTag, m.Multiple)
			case *amqp091.BasicNack:
				c.confirm("basic.nack requeue="+strconv.FormatBool(m.Requeue), m.DeliveryTag, m.Multiple)
			case *amqp091.BasicDeliver, *amqp091.BasicCancel:
				if strict {
					c.reply(methodLine(m))
					c.content = &c.replies
				} else {
					c.deliveries = append(c.deliveries, methodLine(m))
					c.content = &c.deliveries
				}
			case *amqp091.ChannelOpenOk:
				// A new life of the channel number: tags restart.
				c.flushConfirms()
				c.low, c.confirmed = 0, nil
				c.reply(methodLine(m))
			default:
				c.reply(methodLine(m))
				if m.HasContent() {
					c.content = &c.replies
				}
			}
		case amqp091.FrameHeader:
			line := contentHeader(&hdr, f.Payload)
			c.contentLine(line)
		case amqp091.FrameBody:
			c.contentLine(body(f.Payload))
		default:
			c.reply("frame type=" + strconv.Itoa(int(f.Type)) + " size=" + strconv.Itoa(len(f.Payload)))
		}
	}
	if rec.Stall != "" {
		ct.Notes = append(ct.Notes, "relay: "+rec.Stall)
	}
	nums := make([]uint16, 0, len(chans))
	for ch := range chans {
		nums = append(nums, ch)
	}
	slices.Sort(nums)
	for _, ch := range nums {
		c := chans[ch]
		c.flushConfirms()
		ct.Channels = append(ct.Channels, ChannelTranscript{Channel: ch, Replies: c.replies, Deliveries: c.deliveries})
	}
	return ct
}

// contentLine appends a content frame to the sequence of the method it
// belongs to; content with no method before it stays visible in replies.
func (c *chanState) contentLine(line string) {
	if c.content == nil {
		c.reply(line + " (no method before it)")
		return
	}
	if c.content == &c.replies {
		c.flushConfirms()
	}
	*c.content = append(*c.content, line)
}

func contentHeader(h *amqp091.ContentHeader, payload []byte) string {
	if err := h.DecodeFromBytes(payload); err != nil {
		return "malformed content-header: " + err.Error()
	}
	var sb strings.Builder
	sb.WriteString("content-header")
	if h.ClassID != amqp091.ClassBasic {
		numArg(&sb, "class", uint64(h.ClassID))
	}
	if h.Weight != 0 {
		numArg(&sb, "weight", uint64(h.Weight))
	}
	numArg(&sb, "size", h.BodySize)
	sb.WriteByte(' ')
	properties(&sb, &h.Properties)
	return sb.String()
}

// String renders the transcript one line per frame: "c1 ch1 LINE" for a
// reply, "c1 ch1 >> LINE" for a delivery, "c1 LINE" for a connection's
// notes and "client: LINE" for the workload's.
func (t *Transcript) String() string {
	var sb strings.Builder
	for _, l := range t.Lines() {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// Lines is String split into lines.
func (t *Transcript) Lines() []string {
	var out []string
	for i, c := range t.Conns {
		conn := "c" + strconv.Itoa(i+1)
		if len(c.Channels) == 0 && len(c.Notes) == 0 {
			out = append(out, conn+" (no frames)")
		}
		for _, ch := range c.Channels {
			pre := conn + " ch" + strconv.Itoa(int(ch.Channel)) + " "
			for _, l := range ch.Replies {
				out = append(out, pre+l)
			}
			for _, l := range ch.Deliveries {
				out = append(out, pre+">> "+l)
			}
		}
		for _, l := range c.Notes {
			out = append(out, conn+" "+l)
		}
	}
	for _, l := range t.Client {
		out = append(out, "client: "+l)
	}
	return out
}

// normalise rewrites the run prefix and server-generated names, numbering
// the names in the order the rendered transcript shows them, which does not
// depend on how channels interleaved on the wire.
func (t *Transcript) normalise(prefix string) {
	t.prefix = prefix
	t.names = &namer{seen: map[string]string{}}
	n := t.names
	do := func(ls []string) {
		for i, l := range ls {
			ls[i] = n.rewrite(l, prefix)
		}
	}
	for _, c := range t.Conns {
		for _, ch := range c.Channels {
			do(ch.Replies)
			do(ch.Deliveries)
		}
		do(c.Notes)
	}
	do(t.Client)
}

// AddClient appends workload observations, normalised like the frames
// (a workload may print a server-named queue it was given).
func (t *Transcript) AddClient(lines ...string) {
	if t.names == nil {
		t.names = &namer{seen: map[string]string{}}
	}
	for _, l := range lines {
		t.Client = append(t.Client, t.names.rewrite(l, t.prefix))
	}
}

// namer numbers server-generated names.
type namer struct {
	seen   map[string]string
	counts [3]int
}

var generated = [...]struct {
	prefix, label string
	fixed         int // exact token length, 0 for any
}{
	{"amq.gen-", "gen", 22},
	{"amq.ctag-", "ctag", 22},
	{"amq.rabbitmq.reply-to.", "replyto", 0},
}

func (n *namer) rewrite(l, prefix string) string {
	if prefix != "" {
		l = strings.ReplaceAll(l, prefix, "<run>.")
	}
	for k, g := range generated {
		var sb strings.Builder
		rest := l
		changed := false
		for {
			i := strings.Index(rest, g.prefix)
			if i < 0 {
				break
			}
			end := i + len(g.prefix)
			tok := tokenEnd(rest[end:], g.fixed == 0)
			if tok == 0 || (g.fixed > 0 && tok != g.fixed) {
				sb.WriteString(rest[:end])
				rest = rest[end:]
				continue
			}
			name := rest[i : end+tok]
			label, ok := n.seen[name]
			if !ok {
				n.counts[k]++
				label = "<" + g.label + strconv.Itoa(n.counts[k]) + ">"
				n.seen[name] = label
			}
			sb.WriteString(rest[:i])
			sb.WriteString(label)
			rest = rest[end+tok:]
			changed = true
		}
		if changed {
			sb.WriteString(rest)
			l = sb.String()
		}
	}
	return l
}

// tokenEnd returns the length of the generated-name token at the front of
// s: base64url characters, plus '+', '/', '=' and '.' for reply-to names.
func tokenEnd(s string, wide bool) int {
	i := 0
	for i < len(s) {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok && wide {
			ok = c == '+' || c == '/' || c == '=' || c == '.'
		}
		if !ok {
			break
		}
		i++
	}
	return i
}
