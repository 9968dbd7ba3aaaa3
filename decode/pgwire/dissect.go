package pgwire

import (
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// builder reads a unit's bytes with a cursor and records fields with their
// byte ranges in Unit.Raw.
type builder struct {
	c      cursor
	base   int // offset of c.b[0] in Unit.Raw
	fields []*decode.Field
}

func (b *builder) add(parent *decode.Field, f *decode.Field) *decode.Field {
	if parent != nil {
		return parent.Add(f)
	}
	b.fields = append(b.fields, f)
	return f
}

func (b *builder) at() int { return b.base + b.c.off }

func (b *builder) str(p *decode.Field, key, name string) *decode.Field {
	s := b.at()
	v := b.c.cstring(key)
	if b.c.err != nil {
		return nil
	}
	return b.add(p, &decode.Field{Key: key, Name: name, Value: string(v), Offset: s, Length: b.at() - s, Encoding: "String"})
}

func (b *builder) secretStr(p *decode.Field, key, name string, redact bool) *decode.Field {
	f := b.str(p, key, name)
	if f != nil && redact {
		f.Value, f.Display = decode.Redacted, decode.Redacted
	}
	return f
}

func (b *builder) i16(p *decode.Field, key, name string) (int16, *decode.Field) {
	s := b.at()
	v := b.c.int16(key)
	if b.c.err != nil {
		return 0, nil
	}
	return v, b.add(p, &decode.Field{Key: key, Name: name, Value: int64(v), Offset: s, Length: 2, Encoding: "Int16"})
}

func (b *builder) i32(p *decode.Field, key, name string) (int32, *decode.Field) {
	s := b.at()
	v := b.c.int32(key)
	if b.c.err != nil {
		return 0, nil
	}
	return v, b.add(p, &decode.Field{Key: key, Name: name, Value: int64(v), Offset: s, Length: 4, Encoding: "Int32"})
}

func (b *builder) u32(p *decode.Field, key, name string) (uint32, *decode.Field) {
	s := b.at()
	v := uint32(b.c.int32(key))
	if b.c.err != nil {
		return 0, nil
	}
	return v, b.add(p, &decode.Field{Key: key, Name: name, Value: uint64(v), Offset: s, Length: 4, Encoding: "Int32"})
}

func (b *builder) byte1(p *decode.Field, key, name string) (byte, *decode.Field) {
	s := b.at()
	v := b.c.byte1(key)
	if b.c.err != nil {
		return 0, nil
	}
	return v, b.add(p, &decode.Field{Key: key, Name: name, Value: string(rune(v)), Offset: s, Length: 1, Encoding: "Byte1"})
}

func (b *builder) raw(p *decode.Field, n int, key, name string, redact bool) *decode.Field {
	s := b.at()
	v := b.c.bytes(n, key)
	if b.c.err != nil {
		return nil
	}
	f := &decode.Field{Key: key, Name: name, Value: v, Offset: s, Length: n, Encoding: "Byte" + strconv.Itoa(n)}
	if redact {
		f.Value, f.Display = decode.Redacted, decode.Redacted
	}
	return b.add(p, f)
}

func (b *builder) list(p *decode.Field, key string, n int) *decode.Field {
	return b.add(p, &decode.Field{Key: key, Kind: decode.KindList, Display: strconv.Itoa(n) + " items", Offset: b.at()})
}

// value reads an Int32 length and that many bytes (-1 is NULL).
func (b *builder) value(p *decode.Field, key string, redact bool) {
	s := b.at()
	l := b.c.int32(key + " length")
	if b.c.err != nil {
		return
	}
	f := b.add(p, &decode.Field{Key: key, Offset: s, Length: 4})
	f.Add(&decode.Field{Key: "length", Name: "pgsql.val.length", Value: int64(l), Offset: s, Length: 4, Encoding: "Int32"})
	if l == -1 {
		f.Display = "NULL"
		return
	}
	if l < -1 {
		b.c.fail(key + " length " + strconv.Itoa(int(l)) + " is negative")
		return
	}
	d := b.raw(f, int(l), "data", "pgsql.val.data", redact)
	if d == nil {
		return
	}
	f.Length = 4 + int(l)
	if redact {
		f.Display = decode.Redacted
		return
	}
	if v, ok := d.Value.([]byte); ok && printable(v) {
		f.Value = string(v)
	} else {
		f.Value = v
	}
}

func printable(v []byte) bool {
	for _, c := range v {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// finish returns the fields, appending an "error" field when the body did
// not decode completely.
func (b *builder) finish() []*decode.Field {
	if err := b.c.end(); err != nil {
		b.fields = append(b.fields, &decode.Field{Key: "error", Value: err.Error(), Offset: b.at()})
	}
	return b.fields
}

// byte1Encodings holds "Byte1 'c'" for each printable ASCII type byte.
var byte1Encodings = func() (t [128]string) {
	for c := ' '; c < 127; c++ {
		t[c] = "Byte1 '" + string(c) + "'"
	}
	return t
}()

func byte1Encoding(c byte) string {
	if c < 128 && byte1Encodings[c] != "" {
		return byte1Encodings[c]
	}
	return "Byte1 '" + string(rune(c)) + "'"
}

// header adds the type and length fields of a typed message.
func header(u *decode.Unit) (*builder, byte, bool) {
	// One allocation for the builder, its first fields and room for a few
	// more: a JSON rendering of millions of small messages (a
	// CompressedMessages of NoData) spent most of its time here.
	type block struct {
		b      builder
		f      [2]decode.Field
		fields [6]*decode.Field
	}
	blk := &block{}
	b := &blk.b
	b.c = cursor{msg: u.Type}
	b.fields = blk.fields[:0]
	raw := u.Raw
	blk.f[0] = decode.Field{Key: "type", Name: "pgsql.type", Value: u.Type, Offset: 0, Length: 1, Encoding: byte1Encoding(raw[0])}
	b.fields = append(b.fields, &blk.f[0])
	if len(raw) < HeaderLen {
		b.fields = append(b.fields, &decode.Field{Key: "error", Value: "truncated header"})
		return b, raw[0], false
	}
	_, l, _ := ReadHeader(raw)
	blk.f[1] = decode.Field{Key: "length", Name: "pgsql.length", Value: l, Offset: 1, Length: 4, Encoding: "Int32"}
	b.fields = append(b.fields, &blk.f[1])
	body := raw[HeaderLen:]
	if int64(len(body)) > l-4 && l >= 4 {
		body = body[:l-4]
	}
	b.c.b = body
	b.base = HeaderLen
	return b, raw[0], true
}

func dissectTyped(u *decode.Unit) []*decode.Field         { return dissectMessage(u, false) }
func dissectTypedRedacted(u *decode.Unit) []*decode.Field { return dissectMessage(u, true) }

func dissectMessage(u *decode.Unit, redact bool) []*decode.Field {
	if len(u.Raw) == 0 {
		return nil
	}
	b, typ, ok := header(u)
	if !ok {
		return b.fields
	}
	if u.Len > len(u.Raw) {
		b.fields = append(b.fields, &decode.Field{Key: "truncated", Value: "only the first " + strconv.Itoa(len(u.Raw)) + " of " + strconv.Itoa(u.Len) + " bytes were kept"})
		return b.fields
	}
	if u.Dir == decode.DirF {
		frontendFields(b, u, typ, redact)
	} else {
		backendFields(b, u, typ, redact)
	}
	return b.finish()
}

func frontendFields(b *builder, u *decode.Unit, typ byte, redact bool) {
	switch typ {
	case TypeQuery:
		b.str(nil, "query", "pgsql.query")
	case TypeParse:
		b.str(nil, "statement", "pgsql.statement")
		b.str(nil, "query", "pgsql.query")
		n, _ := b.i16(nil, "parameters", "pgsql.field.count")
		l := b.list(nil, "parameter-types", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.u32(l, "oid", "pgsql.oid.type")
		}
	case TypeBind:
		b.str(nil, "portal", "pgsql.portal")
		b.str(nil, "statement", "pgsql.statement")
		n, _ := b.i16(nil, "parameter-formats", "pgsql.field.count")
		l := b.list(nil, "formats", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.i16(l, "format", "pgsql.format")
		}
		n, _ = b.i16(nil, "parameter-values", "pgsql.field.count")
		l = b.list(nil, "values", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.value(l, "value", false)
		}
		n, _ = b.i16(nil, "result-formats", "pgsql.field.count")
		l = b.list(nil, "result-format-codes", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.i16(l, "format", "pgsql.format")
		}
	case TypeDescribe, TypeClose:
		k, _ := b.byte1(nil, "kind", "pgsql.kind")
		if k == 'P' {
			b.str(nil, "portal", "pgsql.portal")
		} else {
			b.str(nil, "statement", "pgsql.statement")
		}
	case TypeExecute:
		b.str(nil, "portal", "pgsql.portal")
		b.i32(nil, "returns", "pgsql.returns")
	case TypeCopyData:
		b.raw(nil, b.c.left(), "data", "pgsql.copydata", false)
	case TypeCopyFail:
		b.str(nil, "message", "pgsql.error")
	case TypeFunctionCall:
		b.u32(nil, "oid", "pgsql.oid")
		n, _ := b.i16(nil, "argument-formats", "pgsql.field.count")
		l := b.list(nil, "formats", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.i16(l, "format", "pgsql.format")
		}
		n, _ = b.i16(nil, "arguments", "pgsql.field.count")
		l = b.list(nil, "values", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.value(l, "value", false)
		}
		b.i16(nil, "result-format", "pgsql.format")
	case TypePassword:
		switch u.Type {
		case "SASLInitialResponse":
			b.str(nil, "mechanism", "pgsql.auth.sasl.mech")
			l, _ := b.i32(nil, "data-length", "pgsql.auth.sasl.data.length")
			if l >= 0 {
				b.raw(nil, int(l), "data", "pgsql.auth.sasl.data", redact)
			}
		case "SASLResponse":
			b.raw(nil, b.c.left(), "data", "pgsql.auth.sasl.data", redact)
		case "GSSResponse":
			b.raw(nil, b.c.left(), "data", "pgsql.auth.gssapi_sspi.data", redact)
		default:
			b.secretStr(nil, "password", "pgsql.password", redact)
		}
	}
}

// errorFieldNames maps ErrorResponse/NoticeResponse field codes to their
// keys and Wireshark names (protocol-error-fields.html).
var errorFieldNames = map[byte][2]string{
	'S': {"severity", "pgsql.severity"},
	'V': {"severity-nonlocalized", "pgsql.severity_nonlocalized"},
	'C': {"code", "pgsql.code"},
	'M': {"message", "pgsql.message"},
	'D': {"detail", "pgsql.detail"},
	'H': {"hint", "pgsql.hint"},
	'P': {"position", "pgsql.position"},
	'p': {"internal-position", "pgsql.internal_position"},
	'q': {"internal-query", "pgsql.internal_query"},
	'W': {"where", "pgsql.where"},
	's': {"schema", "pgsql.schema_name"},
	't': {"table", "pgsql.table_name"},
	'c': {"column", "pgsql.column_name"},
	'd': {"data-type", "pgsql.type_name"},
	'n': {"constraint", "pgsql.constraint_name"},
	'F': {"file", "pgsql.file"},
	'L': {"line", "pgsql.line"},
	'R': {"routine", "pgsql.routine"},
}

// ErrorFieldName returns the name of an ErrorResponse field code
// ("severity", "code", ...) or "" when the code is not defined.
func ErrorFieldName(code byte) string { return errorFieldNames[code][0] }

func backendFields(b *builder, u *decode.Unit, typ byte, redact bool) {
	switch typ {
	case TypeAuthentication:
		code, _ := b.i32(nil, "authtype", "pgsql.authtype")
		switch code {
		case AuthMD5Password:
			b.raw(nil, 4, "salt", "pgsql.salt", false)
		case AuthSASL:
			l := b.list(nil, "mechanisms", 0)
			n := 0
			for b.c.err == nil && b.c.left() > 0 && b.c.b[b.c.off] != 0 {
				b.str(l, "mechanism", "pgsql.auth.sasl.mech")
				n++
			}
			l.Display = strconv.Itoa(n) + " items"
			b.c.byte1("terminator")
		case AuthSASLContinue, AuthSASLFinal:
			b.raw(nil, b.c.left(), "data", "pgsql.auth.sasl.data", redact)
		case AuthGSSContinue:
			b.raw(nil, b.c.left(), "data", "pgsql.auth.gssapi_sspi.data", redact)
		}
	case TypeBackendKeyData:
		b.u32(nil, "pid", "pgsql.pid")
		if b.c.left() == 4 {
			b.u32(nil, "key", "pgsql.key")
		} else {
			b.raw(nil, b.c.left(), "key", "pgsql.key", false)
		}
	case TypeParameterStatus:
		b.str(nil, "name", "pgsql.parameter_name")
		b.str(nil, "value", "pgsql.parameter_value")
	case TypeReadyForQuery:
		s, f := b.byte1(nil, "status", "pgsql.status")
		if f != nil {
			f.Display = statusDisplay(s)
		}
	case TypeCommandComplete:
		b.str(nil, "tag", "pgsql.tag")
	case TypeRowDescription:
		n, _ := b.i16(nil, "field-count", "pgsql.field.count")
		l := b.list(nil, "columns", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			s := b.at()
			col := b.add(l, &decode.Field{Key: "column", Kind: decode.KindMap, Offset: s})
			if f := b.str(col, "name", "pgsql.col.name"); f != nil {
				col.Display = f.Value.(string)
			}
			b.u32(col, "table-oid", "pgsql.oid.table")
			b.i16(col, "column-index", "pgsql.col.index")
			b.u32(col, "type-oid", "pgsql.oid.type")
			b.i16(col, "type-size", "pgsql.val.length")
			b.i32(col, "type-modifier", "pgsql.col.typemod")
			b.i16(col, "format", "pgsql.format")
			col.Length = b.at() - s
		}
	case TypeDataRow:
		n, _ := b.i16(nil, "field-count", "pgsql.field.count")
		l := b.list(nil, "values", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.value(l, "value", false)
		}
	case TypeParameterDescription:
		n, _ := b.i16(nil, "parameters", "pgsql.field.count")
		l := b.list(nil, "types", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.u32(l, "oid", "pgsql.oid.type")
		}
	case TypeErrorResponse, TypeNoticeResponse:
		for b.c.err == nil {
			s := b.at()
			code := b.c.byte1("field code")
			if code == 0 || b.c.err != nil {
				break
			}
			v := b.c.cstring("field")
			if b.c.err != nil {
				break
			}
			names, ok := errorFieldNames[code]
			if !ok {
				names = [2]string{"field-" + string(rune(code)), ""}
			}
			b.add(nil, &decode.Field{Key: names[0], Name: names[1], Value: string(v), Offset: s, Length: b.at() - s, Encoding: "Byte1 '" + string(rune(code)) + "' String"})
		}
	case TypeCopyInResponse, TypeCopyOutResponse, TypeCopyBothResponse:
		b.byte1(nil, "format", "pgsql.format")
		n, _ := b.i16(nil, "columns", "pgsql.field.count")
		l := b.list(nil, "column-formats", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.i16(l, "format", "pgsql.format")
		}
	case TypeCopyData:
		b.raw(nil, b.c.left(), "data", "pgsql.copydata", false)
	case TypeNotificationResponse:
		b.u32(nil, "pid", "pgsql.pid")
		b.str(nil, "channel", "pgsql.condition")
		b.str(nil, "payload", "pgsql.text")
	case TypeFunctionCallResponse:
		b.value(nil, "result", false)
	case TypeNegotiateProtocolVersion:
		if v, f := b.u32(nil, "newest-minor", "pgsql.version_supported_minor"); f != nil && v > 0xffff {
			// PostgreSQL sends the whole version (PG_PROTOCOL_LATEST).
			f.Display = strconv.Itoa(int(v>>16)) + "." + strconv.Itoa(int(v&0xffff)) + " (" + strconv.Itoa(int(v)) + ")"
		}
		n, _ := b.i32(nil, "unrecognized-options", "pgsql.number_nonsupported_options")
		l := b.list(nil, "options", int(n))
		for i := 0; i < int(n) && b.c.err == nil; i++ {
			b.str(l, "option", "pgsql.nonsupported_option")
		}
	case TypeCompressedMessages:
		a, f := b.byte1(nil, "algorithm", "pgsql.compression.algorithm")
		if f != nil {
			f.Value = int64(a)
			f.Display = AlgorithmName(a) + " (" + strconv.Itoa(int(a)) + ")"
		}
		b.str(nil, "types", "pgsql.compression.types")
		b.raw(nil, b.c.left(), "data", "pgsql.compression.data", false)
	}
}

// dissectUntyped builds the fields of startup-phase packets.
func dissectUntyped(u *decode.Unit) []*decode.Field {
	b := &builder{c: cursor{b: u.Raw, msg: u.Type}}
	b.fields = append(b.fields, &decode.Field{Key: "type", Name: "pgsql.type", Value: u.Type})
	b.i32(nil, "length", "pgsql.length")
	switch u.Type {
	case "StartupMessage":
		b.i16(nil, "version-major", "pgsql.version_major")
		b.i16(nil, "version-minor", "pgsql.version_minor")
		l := b.add(nil, &decode.Field{Key: "parameters", Kind: decode.KindMap, Offset: b.at()})
		for b.c.err == nil && b.c.left() > 0 && b.c.b[b.c.off] != 0 {
			s := b.at()
			name := b.c.cstring("parameter name")
			v := b.c.cstring("parameter value")
			if b.c.err != nil {
				break
			}
			f := l.Add(&decode.Field{Key: string(name), Value: string(v), Offset: s, Length: b.at() - s})
			f.Add(&decode.Field{Key: "name", Name: "pgsql.parameter_name", Value: string(name), Offset: s, Length: len(name) + 1})
			f.Add(&decode.Field{Key: "value", Name: "pgsql.parameter_value", Value: string(v), Offset: s + len(name) + 1, Length: len(v) + 1})
		}
		l.Length = b.at() - l.Offset
		b.c.byte1("terminator")
	case "SSLRequest", "GSSENCRequest":
		b.u32(nil, "code", "pgsql.request_code")
	case "CancelRequest":
		b.u32(nil, "code", "pgsql.request_code")
		b.u32(nil, "pid", "pgsql.pid")
		if b.c.left() == 4 {
			b.u32(nil, "key", "pgsql.key")
		} else {
			b.raw(nil, b.c.left(), "key", "pgsql.key", false)
		}
	}
	return b.finish()
}

func dissectAnswer(u *decode.Unit) []*decode.Field {
	if len(u.Raw) == 0 {
		return nil
	}
	return []*decode.Field{
		{Key: "type", Name: "pgsql.type", Value: u.Type},
		{Key: "answer", Name: "pgsql.ssl_response", Value: string(rune(u.Raw[0])), Offset: 0, Length: 1, Encoding: "Byte1"},
	}
}

func dissectEncrypted(u *decode.Unit) []*decode.Field {
	return []*decode.Field{
		{Key: "type", Name: "pgsql.type", Value: u.Type},
		{Key: "bytes", Name: "pgsql.encrypted_bytes", Value: int64(u.Len)},
	}
}

// dissectReplication decodes CopyData carrying a streaming replication
// message.
func dissectReplication(u *decode.Unit) []*decode.Field {
	b, _, ok := header(u)
	if !ok {
		return b.fields
	}
	p := b.c.b
	name := replicationName(p, u.Dir == decode.DirF)
	r := b.add(nil, &decode.Field{Key: "replication", Display: name, Kind: decode.KindMap, Offset: b.at(), Length: len(p)})
	k, f := b.byte1(r, "kind", "pgsql.replication.kind")
	if f != nil {
		f.Display = string(rune(k)) + " (" + name + ")"
	}
	lsn := func(key, fname string) {
		s := b.at()
		v := LSN(b.c.int64(key))
		if b.c.err == nil {
			b.add(r, &decode.Field{Key: key, Name: fname, Value: uint64(v), Display: v.String(), Offset: s, Length: 8, Encoding: "Int64"})
		}
	}
	ts := func() {
		s := b.at()
		v := b.c.int64("send time")
		if b.c.err == nil {
			b.add(r, &decode.Field{Key: "send-time", Name: "pgsql.replication.send_time", Value: PgTime(v), Offset: s, Length: 8, Encoding: "Int64"})
		}
	}
	reply := func() {
		v, f := b.byte1(r, "reply-requested", "pgsql.replication.reply_requested")
		if f != nil {
			f.Value = v != 0
		}
	}
	switch k {
	case ReplXLogData:
		lsn("wal-start", "pgsql.replication.wal_start")
		lsn("wal-end", "pgsql.replication.wal_end")
		ts()
		b.raw(r, b.c.left(), "wal-data", "pgsql.replication.wal_data", false)
	case ReplPrimaryKeepalive:
		lsn("wal-end", "pgsql.replication.wal_end")
		ts()
		reply()
	case ReplStandbyStatus:
		lsn("write-lsn", "pgsql.replication.write_lsn")
		lsn("flush-lsn", "pgsql.replication.flush_lsn")
		lsn("apply-lsn", "pgsql.replication.apply_lsn")
		ts()
		reply()
	case ReplHotStandbyFeedback:
		ts()
		b.u32(r, "xmin", "pgsql.replication.xmin")
		b.u32(r, "xmin-epoch", "pgsql.replication.xmin_epoch")
		b.u32(r, "catalog-xmin", "pgsql.replication.catalog_xmin")
		b.u32(r, "catalog-xmin-epoch", "pgsql.replication.catalog_xmin_epoch")
	}
	return b.finish()
}

// statusDisplay names a ReadyForQuery transaction status, "" for others.
func statusDisplay(s byte) string {
	switch s {
	case 'I':
		return "I (idle)"
	case 'T':
		return "T (in a transaction block)"
	case 'E':
		return "E (in a failed transaction block)"
	}
	return ""
}
