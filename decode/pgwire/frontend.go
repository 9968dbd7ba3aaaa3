package pgwire

import "strconv"

// Frontend messages not in messages.go. Body-less ones (Sync, Flush,
// Terminate, CopyDone) are built with AppendMessage(dst, typ, nil).

// Query is a simple-protocol query.
type Query struct{ SQL []byte }

// Decode decodes a body.
func (m *Query) Decode(body []byte) error {
	c := cursor{b: body, msg: "Query"}
	m.SQL = c.cstring("query string")
	return c.end()
}

// Encode appends the message.
func (m *Query) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeQuery)
	return FinishMessage(append(append(dst, m.SQL...), 0), pos)
}

// Parse creates a prepared statement.
type Parse struct {
	Name, Query []byte
	ParamOIDs   []uint32
}

// Decode decodes a body.
func (m *Parse) Decode(body []byte) error {
	c := cursor{b: body, msg: "Parse"}
	m.Name = c.cstring("statement name")
	m.Query = c.cstring("query string")
	n := int(c.int16("parameter type count"))
	if c.err == nil && n < 0 {
		c.fail("negative parameter type count " + strconv.Itoa(n))
	}
	m.ParamOIDs = m.ParamOIDs[:0]
	for i := 0; i < n && c.err == nil; i++ {
		m.ParamOIDs = append(m.ParamOIDs, uint32(c.int32("parameter type")))
	}
	return c.end()
}

// Encode appends the message.
func (m *Parse) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeParse)
	dst = append(append(dst, m.Name...), 0)
	dst = append(append(dst, m.Query...), 0)
	dst = appendInt16(dst, int16(len(m.ParamOIDs)))
	for _, o := range m.ParamOIDs {
		dst = appendInt32(dst, int32(o))
	}
	return FinishMessage(dst, pos)
}

// Describe asks for the description of a statement ('S') or portal ('P');
// Close (same layout, type 'C') closes one.
type Describe struct {
	Kind byte
	Name []byte
}

// Decode decodes a body.
func (m *Describe) Decode(body []byte) error {
	c := cursor{b: body, msg: "Describe"}
	m.Kind = c.byte1("kind")
	if c.err == nil && m.Kind != 'S' && m.Kind != 'P' {
		c.fail("kind " + strconv.Quote(string(rune(m.Kind))) + " is neither 'S' nor 'P'")
	}
	m.Name = c.cstring("name")
	return c.end()
}

// Encode appends the message with type byte typ ('D' Describe or 'C'
// Close).
func (m *Describe) Encode(dst []byte, typ byte) []byte {
	dst, pos := AppendHeader(dst, typ)
	dst = append(dst, m.Kind)
	return FinishMessage(append(append(dst, m.Name...), 0), pos)
}

// Execute runs a portal, returning at most MaxRows rows (0: all).
type Execute struct {
	Portal  []byte
	MaxRows uint32
}

// Decode decodes a body.
func (m *Execute) Decode(body []byte) error {
	c := cursor{b: body, msg: "Execute"}
	m.Portal = c.cstring("portal name")
	m.MaxRows = uint32(c.int32("maximum rows"))
	return c.end()
}

// Encode appends the message.
func (m *Execute) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeExecute)
	dst = append(append(dst, m.Portal...), 0)
	return FinishMessage(appendInt32(dst, int32(m.MaxRows)), pos)
}

// FunctionCall is a fast-path function call.
type FunctionCall struct {
	Function     uint32
	ArgFormats   []int16
	Args         [][]byte // nil is NULL
	ResultFormat int16
}

// Decode decodes a body.
func (m *FunctionCall) Decode(body []byte) error {
	c := cursor{b: body, msg: "FunctionCall"}
	m.Function = uint32(c.int32("function OID"))
	n := int(c.int16("argument format count"))
	if c.err == nil && n < 0 {
		c.fail("negative argument format count " + strconv.Itoa(n))
	}
	m.ArgFormats = m.ArgFormats[:0]
	for i := 0; i < n && c.err == nil; i++ {
		m.ArgFormats = append(m.ArgFormats, c.int16("argument format"))
	}
	n = int(c.int16("argument count"))
	if c.err == nil && n < 0 {
		c.fail("negative argument count " + strconv.Itoa(n))
	}
	m.Args = m.Args[:0]
	for i := 0; i < n && c.err == nil; i++ {
		l := c.int32("argument length")
		switch {
		case l == -1:
			m.Args = append(m.Args, nil)
		case l < -1:
			c.fail("argument " + strconv.Itoa(i) + " length " + strconv.Itoa(int(l)) + " is negative")
		default:
			v := c.bytes(int(l), "argument "+strconv.Itoa(i))
			if v == nil {
				v = []byte{}
			}
			m.Args = append(m.Args, v)
		}
	}
	m.ResultFormat = c.int16("result format")
	return c.end()
}

// Encode appends the message.
func (m *FunctionCall) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeFunctionCall)
	dst = appendInt32(dst, int32(m.Function))
	dst = appendInt16(dst, int16(len(m.ArgFormats)))
	for _, f := range m.ArgFormats {
		dst = appendInt16(dst, f)
	}
	dst = appendInt16(dst, int16(len(m.Args)))
	for _, a := range m.Args {
		if a == nil {
			dst = appendInt32(dst, -1)
			continue
		}
		dst = append(appendInt32(dst, int32(len(a))), a...)
	}
	return FinishMessage(appendInt16(dst, m.ResultFormat), pos)
}

// SASLInitialResponse starts a SASL exchange ('p' after
// AuthenticationSASL). Data is nil when the length is -1.
type SASLInitialResponse struct {
	Mechanism []byte
	Data      []byte
}

// Decode decodes a body.
func (m *SASLInitialResponse) Decode(body []byte) error {
	c := cursor{b: body, msg: "SASLInitialResponse"}
	m.Mechanism = c.cstring("mechanism")
	l := c.int32("data length")
	m.Data = nil
	if c.err == nil && l != -1 {
		if l < 0 {
			c.fail("data length " + strconv.Itoa(int(l)) + " is negative")
		}
		m.Data = c.bytes(int(l), "data")
	}
	return c.end()
}

// Encode appends the message.
func (m *SASLInitialResponse) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypePassword)
	dst = append(append(dst, m.Mechanism...), 0)
	if m.Data == nil {
		return FinishMessage(appendInt32(dst, -1), pos)
	}
	return FinishMessage(append(appendInt32(dst, int32(len(m.Data))), m.Data...), pos)
}

// PasswordMessage carries a cleartext password or an MD5 hash; the same
// 'p' type carries SASLResponse and GSSResponse data, which are the whole
// body (use AppendMessage).
type PasswordMessage struct{ Password []byte }

// Decode decodes a body.
func (m *PasswordMessage) Decode(body []byte) error {
	c := cursor{b: body, msg: "PasswordMessage"}
	m.Password = c.cstring("password")
	return c.end()
}

// Encode appends the message.
func (m *PasswordMessage) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypePassword)
	return FinishMessage(append(append(dst, m.Password...), 0), pos)
}

// AppendSSLRequest appends an SSLRequest (code 80877103) or, with gss,
// a GSSENCRequest (80877104).
func AppendSSLRequest(dst []byte, gss bool) []byte {
	code := int32(codeSSLRequest)
	if gss {
		code = codeGSSENCRequst
	}
	return appendInt32(appendInt32(dst, 8), code)
}
