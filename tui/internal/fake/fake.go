package fake

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// The field names the generated trees use are registered as the protocol
// packages would register them, so the filter language knows them in tests.
func init() {
	var names []decode.FieldName
	for _, n := range []struct {
		p    decode.Proto
		name string
	}{
		{decode.ProtoAMQP091, "amqp.type"}, {decode.ProtoAMQP091, "amqp.length"},
		{decode.ProtoAMQP091, "amqp.method.arguments"}, {decode.ProtoAMQP091, "amqp.method.arguments.delivery_tag"},
		{decode.ProtoAMQP091, "amqp.method.arguments.multiple"}, {decode.ProtoAMQP091, "amqp.method.arguments.exchange"},
		{decode.ProtoAMQP091, "amqp.method.arguments.routing_key"}, {decode.ProtoAMQP091, "amqp.method.arguments.queue"},
		{decode.ProtoAMQP10, "amqp.performative"}, {decode.ProtoAMQP10, "amqp.performative.arguments.delivery_id"},
		{decode.ProtoAMQP10, "amqp.performative.arguments.role"}, {decode.ProtoAMQP10, "amqp.performative.arguments.first"},
		{decode.ProtoAMQP10, "amqp.data"}, {decode.ProtoAMQP10, "amqp.footer"}, {decode.ProtoAMQP10, "amqp.checksum.expected"},
		{decode.ProtoPgSQL, "pgsql.length"}, {decode.ProtoPgSQL, "pgsql.payload"}, {decode.ProtoPgSQL, "pgsql.query"},
		{decode.ProtoUnknown, "frame.raw"},
	} {
		names = append(names, decode.FieldName{Name: n.name, Proto: n.p, Doc: "fake"})
	}
	decode.RegisterFieldNames(names...)
}

// Epoch is the capture time of the first generated unit.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Generator produces units for three connections, round robin, in output
// order, updating each connection's counters as the pipeline would.
type Generator struct {
	Conns [3]*decode.Conn
	n     int
	t     time.Time
	step  int
	rnd   uint64

	// per-connection protocol state
	amqpSeq   [3]uint64 // publish sequence per channel (index 1, 2)
	amqpTag   uint64
	pendAck   []uint64
	delivery  uint32
	pendDisp  []uint32
	pgPending int
	pendBatch []*decode.Unit
}

// New returns a generator whose output is a pure function of seed.
func New(seed uint64) *Generator {
	g := &Generator{t: Epoch, rnd: seed*2654435761 + 1}
	mk := func(id int, cport, sport uint16, p decode.Proto) *decode.Conn {
		return &decode.Conn{
			ID:     id,
			Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, byte(id)}), cport),
			Server: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 100}), sport),
			Proto:  p,
			First:  Epoch,
		}
	}
	g.Conns[0] = mk(1, 50001, 5672, decode.ProtoAMQP091)
	g.Conns[1] = mk(2, 50002, 5672, decode.ProtoAMQP10)
	g.Conns[2] = mk(3, 50003, 5432, decode.ProtoPgSQL)
	return g
}

func (g *Generator) rand() uint64 {
	g.rnd ^= g.rnd << 13
	g.rnd ^= g.rnd >> 7
	g.rnd ^= g.rnd << 17
	return g.rnd
}

// Units returns the next n units (possibly a few more, so that a
// CompressedMessages is never split from its children).
func (g *Generator) Units(n int) []*decode.Unit {
	out := make([]*decode.Unit, 0, n+8)
	for len(out) < n {
		out = g.next(out)
	}
	return out
}

// Generate is a convenience for New(seed).Units(n).
func Generate(n int, seed uint64) []*decode.Unit { return New(seed).Units(n) }

func (g *Generator) emit(out []*decode.Unit, u *decode.Unit) []*decode.Unit {
	g.n++
	u.N = g.n
	g.t = g.t.Add(time.Duration(50+g.rand()%3000) * time.Microsecond)
	u.SetTime(g.t)
	u.Proto = u.Conn.Proto
	u.Len = len(u.Raw)
	c := u.Conn
	c.Units[u.Dir]++
	c.Bytes[u.Dir] += int64(u.Len)
	if len(u.Warnings()) > 0 {
		c.Warnings++
	}
	if u.Err() != "" {
		c.Errors++
	}
	if u.Checksum() != nil {
		c.Checksums[u.Checksum().Status]++
	}
	return append(out, u)
}

func (g *Generator) next(out []*decode.Unit) []*decode.Unit {
	g.step++
	switch g.step % 3 {
	case 0:
		return g.amqp091(out)
	case 1:
		return g.amqp10(out)
	default:
		return g.pgsql(out)
	}
}

var queues = []string{"orders", "invoices", "audit.log", "payments", "email-outbox"}

func (g *Generator) amqp091(out []*decode.Unit) []*decode.Unit {
	c := g.Conns[0]
	k := g.step / 3
	switch {
	case k == 0:
		return g.emit(out, &decode.Unit{Conn: c, Dir: decode.DirF, Type: "protocol-header", Summary: "AMQP 0-9-1", Raw: []byte("AMQP\x00\x00\x09\x01"), Dissect: dissectHeader})
	case k == 1:
		return g.emit(out, amqpMethod(c, decode.DirF, 1, 85, 10, "confirm.select", "", nil))
	case k == 2:
		return g.emit(out, amqpMethod(c, decode.DirB, 1, 85, 11, "confirm.select-ok", "", nil))
	}
	if len(g.pendAck) > 0 && g.rand()%3 == 0 {
		tag := g.pendAck[0]
		g.pendAck = g.pendAck[1:]
		return g.emit(out, amqpMethod(c, decode.DirB, 1, 60, 80, "basic.ack", "delivery-tag="+strconv.FormatUint(tag, 10), u64(tag)))
	}
	switch g.rand() % 8 {
	case 0:
		q := queues[g.rand()%uint64(len(queues))]
		out = g.emit(out, amqpMethod(c, decode.DirF, 2, 50, 10, "queue.declare", "queue="+q, []byte(q)))
		return g.emit(out, amqpMethod(c, decode.DirB, 2, 50, 11, "queue.declare-ok", "queue="+q+" messages=0 consumers=0", []byte(q)))
	case 1:
		return g.emit(out, &decode.Unit{Conn: c, Dir: decode.Dir(g.rand() % 2), Type: "heartbeat", Summary: "heartbeat", Raw: []byte{8, 0, 0, 0, 0, 0, 0, 0xce}, Dissect: dissectHeader})
	default:
		g.amqpSeq[1]++
		seq := g.amqpSeq[1]
		g.pendAck = append(g.pendAck, seq)
		q := queues[seq%uint64(len(queues))]
		u := amqpMethod(c, decode.DirF, 1, 60, 40, "basic.publish", "exchange=\"\" routing-key="+q, []byte(q))
		if seq%97 == 0 {
			u.Warn("routing key names no declared queue")
		}
		return g.emit(out, u)
	}
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// amqpMethod builds a method frame: type, channel, size, class, method, args, frame-end.
func amqpMethod(c *decode.Conn, dir decode.Dir, ch uint16, class, method uint16, typ, args string, payload []byte) *decode.Unit {
	raw := make([]byte, 0, 12+len(payload)+1)
	raw = append(raw, 1, byte(ch>>8), byte(ch))
	raw = binary.BigEndian.AppendUint32(raw, uint32(4+len(payload)))
	raw = binary.BigEndian.AppendUint16(raw, class)
	raw = binary.BigEndian.AppendUint16(raw, method)
	raw = append(raw, payload...)
	raw = append(raw, 0xce)
	s := typ
	if args != "" {
		s += " " + args
	}
	return &decode.Unit{Conn: c, Dir: dir, Channel: ch, HasChannel: true, Type: typ, Summary: s, Raw: raw, Dissect: dissectAMQPMethod}
}

func dissectHeader(u *decode.Unit) []*decode.Field {
	return []*decode.Field{{Key: "header", Name: "frame.raw", Value: u.Raw, Encoding: "bytes", Offset: 0, Length: len(u.Raw)}}
}

func dissectAMQPMethod(u *decode.Unit) []*decode.Field {
	r := u.Raw
	if len(r) < 12 {
		return nil
	}
	m := &decode.Field{Key: "method", Name: "amqp.method", Value: u.Type, Encoding: "class-id/method-id", Offset: 7, Length: 4, Kind: decode.KindMap}
	args := &decode.Field{Key: "arguments", Name: "amqp.method.arguments", Offset: 11, Length: len(r) - 12, Kind: decode.KindMap}
	p := r[11 : len(r)-1]
	switch u.Type {
	case "basic.ack":
		if len(p) == 8 {
			args.Add(&decode.Field{Key: "delivery-tag", Name: "amqp.method.arguments.delivery_tag", Value: binary.BigEndian.Uint64(p), Encoding: "longlong", Offset: 11, Length: 8})
			args.Add(&decode.Field{Key: "multiple", Name: "amqp.method.arguments.multiple", Value: false, Encoding: "bit"})
		}
	case "basic.publish":
		args.Add(&decode.Field{Key: "exchange", Name: "amqp.method.arguments.exchange", Value: "", Encoding: "shortstr"})
		args.Add(&decode.Field{Key: "routing-key", Name: "amqp.method.arguments.routing_key", Value: string(p), Encoding: "shortstr", Offset: 11, Length: len(p)})
	case "queue.declare", "queue.declare-ok":
		args.Add(&decode.Field{Key: "queue", Name: "amqp.method.arguments.queue", Value: string(p), Encoding: "shortstr", Offset: 11, Length: len(p)})
	}
	return []*decode.Field{
		{Key: "type", Name: "amqp.type", Value: uint64(r[0]), Display: "method (1)", Encoding: "octet", Offset: 0, Length: 1},
		{Key: "channel", Name: "amqp.channel", Value: uint64(u.Channel), Encoding: "short", Offset: 1, Length: 2},
		{Key: "length", Name: "amqp.length", Value: uint64(binary.BigEndian.Uint32(r[3:7])), Encoding: "long", Offset: 3, Length: 4},
		m, args,
	}
}

var bodies = []string{`{"order":1042,"sku":"A-77"}`, `hello, world`, `{"invoice":"2026-0042","total":"99.50"}`}

func (g *Generator) amqp10(out []*decode.Unit) []*decode.Unit {
	c := g.Conns[1]
	k := g.step / 3
	if k == 0 {
		return g.emit(out, &decode.Unit{Conn: c, Dir: decode.DirF, Type: "protocol-header", Summary: "AMQP 1.0", Raw: []byte("AMQP\x00\x01\x00\x00"), Dissect: dissectHeader})
	}
	if len(g.pendDisp) > 0 && g.rand()%2 == 0 {
		id := g.pendDisp[0]
		g.pendDisp = g.pendDisp[1:]
		raw := append([]byte{0, 0, 0, 0, 2, 0, 0, 1}, u32(id)...)
		return g.emit(out, &decode.Unit{Conn: c, Dir: decode.DirB, Channel: 1, HasChannel: true, Type: "disposition",
			Summary: "disposition role=receiver first=" + strconv.FormatUint(uint64(id), 10) + " settled=true state=accepted", Raw: raw, Dissect: dissectDisposition})
	}
	id := g.delivery
	g.delivery++
	g.pendDisp = append(g.pendDisp, id)
	body := bodies[id%uint32(len(bodies))]
	raw := append([]byte{0, 0, 0, 0, 2, 0, 0, 1}, u32(id)...)
	raw = append(raw, body...)
	crc := uint32(0x1234567) * (id + 1)
	raw = append(raw, u32(crc)...)
	u := &decode.Unit{Conn: c, Dir: decode.DirF, Channel: 1, HasChannel: true, Type: "transfer",
		Raw: raw, Dissect: dissectTransfer}
	u.SetMessageID("msg-" + strconv.FormatUint(uint64(id), 10))
	switch id % 5 {
	case 3:
		u.SetChecksum(&decode.Checksum{Algorithm: "crc-32", Status: decode.ChecksumMismatch, Expected: crc, Actual: crc ^ 0x10})
	case 4:
		u.SetChecksum(&decode.Checksum{Status: decode.ChecksumAbsent})
	default:
		alg := "crc-32"
		if id%2 == 1 {
			alg = "adler-32"
		}
		u.SetChecksum(&decode.Checksum{Algorithm: alg, Status: decode.ChecksumOK, Expected: crc, Actual: crc})
	}
	u.Summary = "transfer delivery-id=" + strconv.FormatUint(uint64(id), 10) + " message-id=" + u.MessageID() + " checksum=" + u.Checksum().Status.String()
	if id%211 == 7 {
		u.SetErr("amqp1.0: described type 0x77 unknown at offset 12")
	}
	return g.emit(out, u)
}

func u32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

func dissectTransfer(u *decode.Unit) []*decode.Field {
	r := u.Raw
	if len(r) < 16 {
		return nil
	}
	perf := &decode.Field{Key: "transfer", Name: "amqp.performative", Value: "transfer", Encoding: "described list 0x14", Offset: 8, Length: 4, Kind: decode.KindMap}
	perf.Add(&decode.Field{Key: "delivery-id", Name: "amqp.performative.arguments.delivery_id", Value: uint64(binary.BigEndian.Uint32(r[8:12])), Encoding: "uint", Offset: 8, Length: 4})
	body := &decode.Field{Key: "amqp-value", Name: "amqp.data", Value: string(r[12 : len(r)-4]), Encoding: "str8-utf8", Offset: 12, Length: len(r) - 16}
	fs := []*decode.Field{
		{Key: "size", Name: "amqp.length", Value: uint64(len(r)), Encoding: "uint", Offset: 0, Length: 4},
		{Key: "channel", Name: "amqp.channel", Value: uint64(u.Channel), Encoding: "ushort", Offset: 6, Length: 2},
		perf, body,
	}
	if ck := u.Checksum(); ck != nil && ck.Status != decode.ChecksumAbsent {
		f := &decode.Field{Key: "footer", Name: "amqp.footer", Kind: decode.KindMap, Offset: len(r) - 4, Length: 4}
		f.Add(&decode.Field{Key: "x-opt-" + ck.Algorithm, Name: "amqp.checksum.expected", Value: uint64(ck.Expected), Encoding: "uint", Offset: len(r) - 4, Length: 4})
		fs = append(fs, f)
	}
	return fs
}

func dissectDisposition(u *decode.Unit) []*decode.Field {
	r := u.Raw
	if len(r) < 12 {
		return nil
	}
	perf := &decode.Field{Key: "disposition", Name: "amqp.performative", Value: "disposition", Encoding: "described list 0x15", Offset: 8, Length: 4, Kind: decode.KindMap}
	perf.Add(&decode.Field{Key: "role", Name: "amqp.performative.arguments.role", Value: true, Display: "receiver", Encoding: "boolean"})
	perf.Add(&decode.Field{Key: "first", Name: "amqp.performative.arguments.first", Value: uint64(binary.BigEndian.Uint32(r[8:12])), Encoding: "uint", Offset: 8, Length: 4})
	return []*decode.Field{perf}
}

var queries = []string{"SELECT id, name FROM accounts WHERE id = $1", "UPDATE accounts SET balance = balance - $1 WHERE id = $2", "INSERT INTO audit(at, what) VALUES (now(), $1)"}

func pgMsg(c *decode.Conn, dir decode.Dir, tag byte, typ, summary string, body []byte) *decode.Unit {
	raw := make([]byte, 0, 5+len(body))
	raw = append(raw, tag)
	raw = binary.BigEndian.AppendUint32(raw, uint32(4+len(body)))
	raw = append(raw, body...)
	return &decode.Unit{Conn: c, Dir: dir, Type: typ, Summary: summary, Raw: raw, Dissect: dissectPg}
}

func dissectPg(u *decode.Unit) []*decode.Field {
	r := u.Raw
	if len(r) < 5 {
		return nil
	}
	fs := []*decode.Field{
		{Key: "type", Name: "pgsql.type", Value: u.Type, Encoding: "byte1 '" + string(r[0]) + "'", Offset: 0, Length: 1},
		{Key: "length", Name: "pgsql.length", Value: uint64(binary.BigEndian.Uint32(r[1:5])), Encoding: "int32", Offset: 1, Length: 4},
	}
	if len(r) > 5 {
		name := "pgsql.payload"
		if u.Type == "Parse" || u.Type == "Query" {
			name = "pgsql.query"
		}
		fs = append(fs, &decode.Field{Key: "payload", Name: name, Value: string(r[5:]), Encoding: "string", Offset: 5, Length: len(r) - 5})
	}
	return fs
}

func (g *Generator) pgsql(out []*decode.Unit) []*decode.Unit {
	c := g.Conns[2]
	k := g.step / 3
	if k == 0 {
		return g.emit(out, pgMsg(c, decode.DirF, 0, "StartupMessage", "StartupMessage user=app database=shop", []byte("user\x00app\x00database\x00shop\x00\x00")))
	}
	if g.rand()%2 == 0 {
		q := queries[g.rand()%uint64(len(queries))]
		out = g.emit(out, pgMsg(c, decode.DirF, 'P', "Parse", "Parse \"\" \""+q+"\" 0", []byte(q)))
		out = g.emit(out, pgMsg(c, decode.DirF, 'B', "Bind", "Bind \"\" \"\" 0 1 1 0", nil))
		out = g.emit(out, pgMsg(c, decode.DirF, 'E', "Execute", "Execute \"\" 0", nil))
		out = g.emit(out, pgMsg(c, decode.DirF, 'S', "Sync", "Sync", nil))
		g.pgPending++
		return out
	}
	if g.pgPending == 0 {
		return g.emit(out, pgMsg(c, decode.DirF, 'Q', "Query", "Query \"SELECT 1\"", []byte("SELECT 1")))
	}
	g.pgPending--
	// The answer to one Parse/Bind/Execute/Sync, compressed: B* children
	// come before their CompressedMessages container in output order.
	rows := 1 + int(g.rand()%4)
	var kids []*decode.Unit
	kids = append(kids, pgMsg(c, decode.DirB, '1', "ParseComplete", "ParseComplete", nil))
	kids = append(kids, pgMsg(c, decode.DirB, '2', "BindComplete", "BindComplete", nil))
	for i := 0; i < rows; i++ {
		kids = append(kids, pgMsg(c, decode.DirB, 'D', "DataRow", "DataRow 2 1 '"+strconv.Itoa(i+1)+"' 5 'alice'", []byte("row")))
	}
	kids = append(kids, pgMsg(c, decode.DirB, 'C', "CommandComplete", "CommandComplete \"SELECT "+strconv.Itoa(rows)+"\"", []byte("SELECT")))
	kids = append(kids, pgMsg(c, decode.DirB, 'Z', "ReadyForQuery", "ReadyForQuery I", []byte("I")))
	parent := pgMsg(c, decode.DirB, 'z', "CompressedMessages", "CompressedMessages zstd "+strconv.Itoa(len(kids))+" messages", []byte("\x28\xb5\x2f\xfd compressed"))
	var off int64
	for _, kid := range kids {
		kid.Parent = parent
		kid.Offset = off
		off += int64(len(kid.Raw))
		out = g.emit(out, kid)
	}
	return g.emit(out, parent)
}

// The fake units' dissectors carry no state: a store may freeze them.
func init() {
	decode.RegisterDissect(dissectHeader, dissectAMQPMethod, dissectTransfer, dissectDisposition, dissectPg)
}
