package rabbitdiff

import (
	"encoding/hex"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// maxShownBody is the longest body shown in full; longer ones are shown by
// size and checksum.
const maxShownBody = 64

// str renders a short or long string: bare when it is plain enough to read
// unquoted, Go-quoted otherwise (and always when empty, so "exchange=" is
// never ambiguous).
func str(b []byte) string {
	if len(b) == 0 {
		return `""`
	}
	for _, c := range b {
		if !plain(c) {
			return strconv.Quote(string(b))
		}
	}
	return string(b)
}

func plain(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("._-/:*#@+<>~%!?&|^$=", c) >= 0
}

// tableMode says which values of a table are normalised.
type tableMode uint8

const (
	tableExact     tableMode = iota
	tableXDeath              // the tables of an x-death array: time
	tableServerPro           // connection.start's server-properties
)

// table renders a field table with its keys sorted: a table is a map to
// every client, and the order RabbitMQ's Erlang encoder happens to use is
// not part of its behaviour. Values carry their type octet (1:l, 1:I)
// because clients do see the type.
func table(sb *strings.Builder, t amqp091.Table, mode tableMode) {
	type entry struct {
		key string
		val amqp091.Value
	}
	var entries []entry
	it := t.Iter()
	for it.Next() {
		entries = append(entries, entry{string(it.Key()), it.Value()})
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	sb.WriteByte('{')
	for i, e := range entries {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(str([]byte(e.key)))
		sb.WriteByte('=')
		switch {
		case mode == tableServerPro && e.key != "capabilities":
			sb.WriteString("<>")
		case mode == tableXDeath && e.key == "time":
			sb.WriteString("<time>:" + string(rune(e.val.Type)))
		case mode == tableExact && e.key == "x-death" && e.val.Type == amqp091.TypeArray:
			array(sb, e.val.Array(), tableXDeath)
		default:
			value(sb, e.val)
		}
	}
	if err := it.Err(); err != nil {
		sb.WriteString(" <malformed: " + err.Error() + ">")
	}
	sb.WriteByte('}')
}

func array(sb *strings.Builder, a amqp091.Array, mode tableMode) {
	sb.WriteByte('[')
	it := a.Iter()
	for i := 0; it.Next(); i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		v := it.Value()
		if v.Type == amqp091.TypeTable {
			table(sb, v.Table(), mode)
		} else {
			value(sb, v)
		}
	}
	if err := it.Err(); err != nil {
		sb.WriteString(" <malformed: " + err.Error() + ">")
	}
	sb.WriteByte(']')
}

func value(sb *strings.Builder, v amqp091.Value) {
	tag := ":" + string(rune(v.Type))
	switch v.Type {
	case amqp091.TypeLongstr:
		sb.WriteString(str(v.Bytes()))
	case amqp091.TypeBool:
		sb.WriteString(strconv.FormatBool(v.Bool()))
	case amqp091.TypeInt8, amqp091.TypeInt16, amqp091.TypeInt16U, amqp091.TypeInt32, amqp091.TypeInt64:
		sb.WriteString(strconv.FormatInt(v.Int(), 10) + tag)
	case amqp091.TypeUint8, amqp091.TypeUint16, amqp091.TypeUint32, amqp091.TypeUint64, amqp091.TypeTimestamp:
		sb.WriteString(strconv.FormatUint(v.Uint(), 10) + tag)
	case amqp091.TypeFloat, amqp091.TypeDouble:
		sb.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64) + tag)
	case amqp091.TypeDecimal:
		d := v.Decimal()
		sb.WriteString(strconv.Itoa(int(d.Value)) + "e-" + strconv.Itoa(int(d.Scale)) + tag)
	case amqp091.TypeBytes:
		sb.WriteString("x\"" + hex.EncodeToString(v.Bytes()) + "\"")
	case amqp091.TypeVoid:
		sb.WriteString("void")
	case amqp091.TypeTable:
		table(sb, v.Table(), tableExact)
	case amqp091.TypeArray:
		array(sb, v.Array(), tableExact)
	default:
		sb.WriteString("<" + v.Type.String() + ">")
	}
}

// properties renders the basic properties that are present, in the
// spec's order.
func properties(sb *strings.Builder, p *amqp091.Properties) {
	sb.WriteString("props={")
	n := 0
	field := func(name string) {
		if n > 0 {
			sb.WriteByte(' ')
		}
		n++
		sb.WriteString(name)
		sb.WriteByte('=')
	}
	f := p.Flags
	if f&amqp091.FlagContentType != 0 {
		field("content-type")
		sb.WriteString(str(p.ContentType))
	}
	if f&amqp091.FlagContentEncoding != 0 {
		field("content-encoding")
		sb.WriteString(str(p.ContentEncoding))
	}
	if f&amqp091.FlagHeaders != 0 {
		field("headers")
		table(sb, p.Headers, tableExact)
	}
	if f&amqp091.FlagDeliveryMode != 0 {
		field("delivery-mode")
		sb.WriteString(strconv.Itoa(int(p.DeliveryMode)))
	}
	if f&amqp091.FlagPriority != 0 {
		field("priority")
		sb.WriteString(strconv.Itoa(int(p.Priority)))
	}
	if f&amqp091.FlagCorrelationID != 0 {
		field("correlation-id")
		sb.WriteString(str(p.CorrelationID))
	}
	if f&amqp091.FlagReplyTo != 0 {
		field("reply-to")
		sb.WriteString(str(p.ReplyTo))
	}
	if f&amqp091.FlagExpiration != 0 {
		field("expiration")
		sb.WriteString(str(p.Expiration))
	}
	if f&amqp091.FlagMessageID != 0 {
		field("message-id")
		sb.WriteString(str(p.MessageID))
	}
	if f&amqp091.FlagTimestamp != 0 {
		field("timestamp")
		if p.Timestamp.IsZero() {
			sb.WriteByte('0')
		} else {
			sb.WriteString(strconv.FormatInt(p.Timestamp.Unix(), 10))
		}
	}
	if f&amqp091.FlagType != 0 {
		field("type")
		sb.WriteString(str(p.Type))
	}
	if f&amqp091.FlagUserID != 0 {
		field("user-id")
		sb.WriteString(str(p.UserID))
	}
	if f&amqp091.FlagAppID != 0 {
		field("app-id")
		sb.WriteString(str(p.AppID))
	}
	if f&amqp091.FlagReserved != 0 {
		field("cluster-id")
		sb.WriteString(str(p.Reserved))
	}
	sb.WriteByte('}')
}

// body renders one body frame's payload.
func body(b []byte) string {
	if len(b) <= maxShownBody {
		return "body " + strconv.Quote(string(b))
	}
	return "body size=" + strconv.Itoa(len(b)) + " crc32=" + strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 16) +
		" head=" + strconv.Quote(string(b[:16]))
}

// closeArgs renders a connection.close or channel.close the way people
// read them: code, text, and the method that failed.
func closeArgs(sb *strings.Builder, code uint16, text []byte, class, method uint16) {
	sb.WriteString(strconv.Itoa(int(code)))
	sb.WriteByte(' ')
	sb.WriteString(strconv.Quote(string(text)))
	sb.WriteString(" class=" + strconv.Itoa(int(class)) + " method=" + strconv.Itoa(int(method)))
	if info := amqp091.LookupMethod(class, method); info != nil {
		sb.WriteString(" (" + info.Name + ")")
	}
}

func boolArg(sb *strings.Builder, name string, v bool) {
	sb.WriteString(" " + name + "=" + strconv.FormatBool(v))
}

func numArg(sb *strings.Builder, name string, v uint64) {
	sb.WriteString(" " + name + "=" + strconv.FormatUint(v, 10))
}

func strArg(sb *strings.Builder, name string, v []byte) {
	sb.WriteString(" " + name + "=" + str(v))
}

// methodLine renders a server method other than a publisher confirm.
func methodLine(m amqp091.Method) string {
	var sb strings.Builder
	sb.WriteString(m.Name())
	switch m := m.(type) {
	case *amqp091.ConnectionStart:
		sb.WriteString(" version=" + strconv.Itoa(int(m.VersionMajor)) + "-" + strconv.Itoa(int(m.VersionMinor)))
		sb.WriteString(" server-properties=")
		table(&sb, m.ServerProperties, tableServerPro)
		// Sorted: RabbitMQ lists them in its registry table's order, which
		// changes with the plugins loaded; clients choose by name.
		mech := strings.Fields(string(m.Mechanisms))
		slices.Sort(mech)
		strArg(&sb, "mechanisms", []byte(strings.Join(mech, " ")))
		strArg(&sb, "locales", m.Locales)
	case *amqp091.ConnectionSecure:
		strArg(&sb, "challenge", m.Challenge)
	case *amqp091.ConnectionTune:
		numArg(&sb, "channel-max", uint64(m.ChannelMax))
		numArg(&sb, "frame-max", uint64(m.FrameMax))
		numArg(&sb, "heartbeat", uint64(m.Heartbeat))
	case *amqp091.ConnectionOpenOk:
		if len(m.Reserved1) > 0 {
			strArg(&sb, "known-hosts", m.Reserved1)
		}
	case *amqp091.ConnectionClose:
		sb.WriteByte(' ')
		closeArgs(&sb, m.ReplyCode, m.ReplyText, m.ClassID, m.MethodID)
	case *amqp091.ConnectionBlocked:
		strArg(&sb, "reason", m.Reason)
	case *amqp091.ChannelOpenOk:
		if len(m.Reserved1) > 0 {
			strArg(&sb, "channel-id", m.Reserved1)
		}
	case *amqp091.ChannelFlow:
		boolArg(&sb, "active", m.Active)
	case *amqp091.ChannelFlowOk:
		boolArg(&sb, "active", m.Active)
	case *amqp091.ChannelClose:
		sb.WriteByte(' ')
		closeArgs(&sb, m.ReplyCode, m.ReplyText, m.ClassID, m.MethodID)
	case *amqp091.QueueDeclareOk:
		strArg(&sb, "queue", m.Queue)
		numArg(&sb, "message-count", uint64(m.MessageCount))
		numArg(&sb, "consumer-count", uint64(m.ConsumerCount))
	case *amqp091.QueuePurgeOk:
		numArg(&sb, "message-count", uint64(m.MessageCount))
	case *amqp091.QueueDeleteOk:
		numArg(&sb, "message-count", uint64(m.MessageCount))
	case *amqp091.BasicConsumeOk:
		strArg(&sb, "ctag", m.ConsumerTag)
	case *amqp091.BasicCancel:
		strArg(&sb, "ctag", m.ConsumerTag)
		boolArg(&sb, "no-wait", m.NoWait)
	case *amqp091.BasicCancelOk:
		strArg(&sb, "ctag", m.ConsumerTag)
	case *amqp091.BasicReturn:
		sb.WriteString(" " + strconv.Itoa(int(m.ReplyCode)) + " " + strconv.Quote(string(m.ReplyText)))
		strArg(&sb, "exchange", m.Exchange)
		strArg(&sb, "rk", m.RoutingKey)
	case *amqp091.BasicDeliver:
		strArg(&sb, "ctag", m.ConsumerTag)
		numArg(&sb, "tag", m.DeliveryTag)
		boolArg(&sb, "redelivered", m.Redelivered)
		strArg(&sb, "exchange", m.Exchange)
		strArg(&sb, "rk", m.RoutingKey)
	case *amqp091.BasicGetOk:
		numArg(&sb, "tag", m.DeliveryTag)
		boolArg(&sb, "redelivered", m.Redelivered)
		strArg(&sb, "exchange", m.Exchange)
		strArg(&sb, "rk", m.RoutingKey)
		numArg(&sb, "message-count", uint64(m.MessageCount))
	case *amqp091.BasicGetEmpty:
		if len(m.Reserved1) > 0 {
			strArg(&sb, "cluster-id", m.Reserved1)
		}
	case *amqp091.ConnectionCloseOk, *amqp091.ConnectionUnblocked, *amqp091.ConnectionUpdateSecretOk,
		*amqp091.ChannelCloseOk, *amqp091.ExchangeDeclareOk, *amqp091.ExchangeDeleteOk,
		*amqp091.ExchangeBindOk, *amqp091.ExchangeUnbindOk, *amqp091.QueueBindOk, *amqp091.QueueUnbindOk,
		*amqp091.BasicQosOk, *amqp091.BasicRecoverOk, *amqp091.ConfirmSelectOk,
		*amqp091.TxSelectOk, *amqp091.TxCommitOk, *amqp091.TxRollbackOk:
	default:
		// A client's method from a server: show its arguments raw.
		sb.WriteString(" (not a server method) args=" + hex.EncodeToString(m.AppendArguments(nil)))
	}
	return sb.String()
}
