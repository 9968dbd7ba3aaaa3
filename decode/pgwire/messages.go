package pgwire

import (
	"encoding/binary"
	"strconv"
)

// The typed messages below decode in place: slices point into the body
// passed to Decode and are valid only as long as it is. Decoding reuses the
// value's slices, so a value kept per connection decodes without allocating
// in steady state. Encode appends the whole message, header included.

// StartupMessage is the first untyped frontend message (also used for
// protocol 3.2, whose version is 196610).
type StartupMessage struct {
	ProtocolVersion uint32
	// Params holds name/value pairs in wire order.
	Params []Param
}

// Param is one StartupMessage parameter.
type Param struct{ Name, Value []byte }

// Decode decodes data, which starts after the Int32 length.
func (m *StartupMessage) Decode(data []byte) error {
	c := cursor{b: data, msg: "StartupMessage"}
	m.ProtocolVersion = uint32(c.int32("protocol version"))
	m.Params = m.Params[:0]
	for c.err == nil {
		if c.left() == 0 {
			c.fail("missing terminating NUL")
			break
		}
		if c.b[c.off] == 0 {
			c.off++
			break
		}
		name := c.cstring("parameter name")
		value := c.cstring("parameter value")
		m.Params = append(m.Params, Param{name, value})
	}
	return c.end()
}

// Encode appends the message, length included.
func (m *StartupMessage) Encode(dst []byte) []byte {
	pos := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, m.ProtocolVersion)
	for _, p := range m.Params {
		dst = append(append(append(append(dst, p.Name...), 0), p.Value...), 0)
	}
	dst = append(dst, 0)
	binary.BigEndian.PutUint32(dst[pos:], uint32(len(dst)-pos))
	return dst
}

// CancelRequest asks the postmaster to cancel a backend's query. Protocol
// 3.2 allows secret keys of up to 256 bytes; 3.0 keys are 4 bytes.
type CancelRequest struct {
	ProcessID uint32
	SecretKey []byte
}

// Decode decodes data, which starts after the Int32 length.
func (m *CancelRequest) Decode(data []byte) error {
	c := cursor{b: data, msg: "CancelRequest"}
	if code := c.int32("request code"); c.err == nil && code != 80877102 {
		c.fail("request code " + strconv.Itoa(int(code)) + " is not 80877102")
	}
	m.ProcessID = uint32(c.int32("process ID"))
	m.SecretKey = c.rest()
	if c.err == nil && (len(m.SecretKey) < 4 || len(m.SecretKey) > 256) {
		c.fail("secret key length " + strconv.Itoa(len(m.SecretKey)) + " is outside 4..256")
	}
	return c.err
}

// Encode appends the message, length included.
func (m *CancelRequest) Encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(12+len(m.SecretKey)))
	dst = binary.BigEndian.AppendUint32(dst, 80877102)
	dst = binary.BigEndian.AppendUint32(dst, m.ProcessID)
	return append(dst, m.SecretKey...)
}

// BackendKeyData carries the cancellation key (4 bytes in 3.0, up to 256 in
// 3.2).
type BackendKeyData struct {
	ProcessID uint32
	SecretKey []byte
}

// Decode decodes a body (after the length).
func (m *BackendKeyData) Decode(body []byte) error {
	c := cursor{b: body, msg: "BackendKeyData"}
	m.ProcessID = uint32(c.int32("process ID"))
	m.SecretKey = c.rest()
	if c.err == nil && (len(m.SecretKey) < 4 || len(m.SecretKey) > 256) {
		c.fail("secret key length " + strconv.Itoa(len(m.SecretKey)) + " is outside 4..256")
	}
	return c.err
}

// Encode appends the message.
func (m *BackendKeyData) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeBackendKeyData)
	dst = binary.BigEndian.AppendUint32(dst, m.ProcessID)
	return FinishMessage(append(dst, m.SecretKey...), pos)
}

// Authentication is any 'R' message: Code says which request it is, Data
// holds what follows the code (MD5 salt, SASL mechanism list, SASL or GSS
// data).
type Authentication struct {
	Code int32
	Data []byte
}

// Decode decodes a body.
func (m *Authentication) Decode(body []byte) error {
	c := cursor{b: body, msg: "Authentication"}
	m.Code = c.int32("request code")
	m.Data = c.rest()
	if c.err == nil {
		switch m.Code {
		case AuthOk, AuthCleartextPassword, AuthKerberosV5, AuthSCMCredential, AuthGSS, AuthSSPI:
			if len(m.Data) != 0 {
				c.fail(AuthName(m.Code) + " body must have length of 4, but it is " + strconv.Itoa(len(body)))
			}
		case AuthMD5Password:
			if len(m.Data) != 4 {
				c.fail("AuthenticationMD5Password body must have length of 8, but it is " + strconv.Itoa(len(body)))
			}
		}
	}
	return c.err
}

// Encode appends the message.
func (m *Authentication) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeAuthentication)
	dst = appendInt32(dst, m.Code)
	return FinishMessage(append(dst, m.Data...), pos)
}

// ReadyForQuery reports the transaction status: 'I' idle, 'T' in a
// transaction block, 'E' in a failed transaction block.
type ReadyForQuery struct{ TxStatus byte }

// Decode decodes a body.
func (m *ReadyForQuery) Decode(body []byte) error {
	if len(body) != 1 {
		return bodyError("ReadyForQuery", "body must have length of 1, but it is "+strconv.Itoa(len(body)), 0)
	}
	m.TxStatus = body[0]
	return nil
}

// Encode appends the message.
func (m *ReadyForQuery) Encode(dst []byte) []byte {
	return append(dst, 'Z', 0, 0, 0, 5, m.TxStatus)
}

// DataRow is one result row; a nil value is SQL NULL.
type DataRow struct{ Values [][]byte }

// Decode decodes a body.
func (m *DataRow) Decode(body []byte) error {
	c := cursor{b: body, msg: "DataRow"}
	n := int(c.int16("column count"))
	m.Values = m.Values[:0]
	if c.err == nil && n < 0 {
		c.fail("negative column count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		l := c.int32("column length")
		switch {
		case l == -1:
			m.Values = append(m.Values, nil)
		case l < -1:
			c.fail("column " + strconv.Itoa(i) + " length " + strconv.Itoa(int(l)) + " is negative")
		default:
			v := c.bytes(int(l), "column "+strconv.Itoa(i))
			if v == nil {
				v = []byte{}
			}
			m.Values = append(m.Values, v)
		}
	}
	return c.end()
}

// checkDataRow is [DataRow.Decode] without keeping the values: it
// reports whether the column count and the columns agree, allocating
// nothing when they do.
func checkDataRow(body []byte) error {
	// The rows that agree, nearly all of them, are walked without the
	// cursor's per-read checks; anything else is walked again by the
	// cursor, which words the error.
	if len(body) >= 2 {
		n := int(int16(binary.BigEndian.Uint16(body)))
		off := 2
		for ; n > 0 && len(body)-off >= 4; n-- {
			l := int(int32(binary.BigEndian.Uint32(body[off:])))
			off += 4
			if l < -1 || l > len(body)-off {
				break
			}
			if l > 0 {
				off += l
			}
		}
		if n == 0 && off == len(body) {
			return nil
		}
	}
	return checkDataRowSlow(body)
}

// checkDataRowSlow is checkDataRow through the cursor, for the rows that
// do not agree.
func checkDataRowSlow(body []byte) error {
	c := cursor{b: body, msg: "DataRow"}
	n := int(c.int16("column count"))
	if c.err == nil && n < 0 {
		c.fail("negative column count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		l := int(c.int32("column length"))
		switch {
		case l < -1:
			c.fail("column " + strconv.Itoa(i) + " length " + strconv.Itoa(l) + " is negative")
		case l > c.left():
			c.fail("column " + strconv.Itoa(i) + " of " + strconv.Itoa(n) + ": length " + strconv.Itoa(l) + " exceeds the " + strconv.Itoa(c.left()) + " bytes left")
		case l > 0:
			c.off += l
		}
	}
	return c.end()
}

// Encode appends the message.
func (m *DataRow) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeDataRow)
	dst = appendInt16(dst, int16(len(m.Values)))
	for _, v := range m.Values {
		if v == nil {
			dst = appendInt32(dst, -1)
			continue
		}
		dst = append(appendInt32(dst, int32(len(v))), v...)
	}
	return FinishMessage(dst, pos)
}

// FieldDescription describes one column of a RowDescription.
type FieldDescription struct {
	Name         []byte
	TableOID     uint32
	ColumnAttr   int16
	TypeOID      uint32
	TypeSize     int16
	TypeModifier int32
	Format       int16
}

// RowDescription describes the columns of the rows that follow.
type RowDescription struct{ Fields []FieldDescription }

// Decode decodes a body.
func (m *RowDescription) Decode(body []byte) error {
	c := cursor{b: body, msg: "RowDescription"}
	n := int(c.int16("field count"))
	m.Fields = m.Fields[:0]
	if c.err == nil && n < 0 {
		c.fail("negative field count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		var f FieldDescription
		f.Name = c.cstring("field name")
		f.TableOID = uint32(c.int32("table OID"))
		f.ColumnAttr = c.int16("column attribute number")
		f.TypeOID = uint32(c.int32("type OID"))
		f.TypeSize = c.int16("type size")
		f.TypeModifier = c.int32("type modifier")
		f.Format = c.int16("format code")
		if c.err == nil {
			m.Fields = append(m.Fields, f)
		}
	}
	return c.end()
}

// Encode appends the message.
func (m *RowDescription) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeRowDescription)
	dst = appendInt16(dst, int16(len(m.Fields)))
	for _, f := range m.Fields {
		dst = append(append(dst, f.Name...), 0)
		dst = appendInt32(dst, int32(f.TableOID))
		dst = appendInt16(dst, f.ColumnAttr)
		dst = appendInt32(dst, int32(f.TypeOID))
		dst = appendInt16(dst, f.TypeSize)
		dst = appendInt32(dst, f.TypeModifier)
		dst = appendInt16(dst, f.Format)
	}
	return FinishMessage(dst, pos)
}

// ErrorField is one field of an ErrorResponse or NoticeResponse.
type ErrorField struct {
	Code  byte // 'S', 'V', 'C', 'M', ...
	Value []byte
}

// ErrorResponse is an ErrorResponse or NoticeResponse body (they share a
// format).
type ErrorResponse struct{ Fields []ErrorField }

// Decode decodes a body.
func (m *ErrorResponse) Decode(body []byte) error {
	c := cursor{b: body, msg: "ErrorResponse"}
	m.Fields = m.Fields[:0]
	for c.err == nil {
		code := c.byte1("field code")
		if code == 0 || c.err != nil {
			break
		}
		v := c.cstring("field " + string(rune(code)))
		if c.err == nil {
			m.Fields = append(m.Fields, ErrorField{code, v})
		}
	}
	return c.end()
}

// Get returns the value of field code, or nil.
func (m *ErrorResponse) Get(code byte) []byte {
	for _, f := range m.Fields {
		if f.Code == code {
			return f.Value
		}
	}
	return nil
}

// Encode appends the message with type byte typ ('E' or 'N').
func (m *ErrorResponse) Encode(dst []byte, typ byte) []byte {
	dst, pos := AppendHeader(dst, typ)
	for _, f := range m.Fields {
		dst = append(append(append(dst, f.Code), f.Value...), 0)
	}
	return FinishMessage(append(dst, 0), pos)
}

// Bind binds parameters to a prepared statement, creating a portal.
type Bind struct {
	Portal, Statement []byte
	ParamFormats      []int16
	Params            [][]byte // nil is NULL
	ResultFormats     []int16
}

// Decode decodes a body.
func (m *Bind) Decode(body []byte) error {
	c := cursor{b: body, msg: "Bind"}
	m.Portal = c.cstring("portal name")
	m.Statement = c.cstring("statement name")
	m.ParamFormats = m.ParamFormats[:0]
	m.Params = m.Params[:0]
	m.ResultFormats = m.ResultFormats[:0]
	n := int(c.int16("parameter format count"))
	if c.err == nil && n < 0 {
		c.fail("negative parameter format count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		m.ParamFormats = append(m.ParamFormats, c.int16("parameter format"))
	}
	n = int(c.int16("parameter count"))
	if c.err == nil && n < 0 {
		c.fail("negative parameter count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		l := c.int32("parameter length")
		switch {
		case l == -1:
			m.Params = append(m.Params, nil)
		case l < -1:
			c.fail("parameter " + strconv.Itoa(i) + " length " + strconv.Itoa(int(l)) + " is negative")
		default:
			v := c.bytes(int(l), "parameter "+strconv.Itoa(i))
			if v == nil {
				v = []byte{}
			}
			m.Params = append(m.Params, v)
		}
	}
	n = int(c.int16("result format count"))
	if c.err == nil && n < 0 {
		c.fail("negative result format count " + strconv.Itoa(n))
	}
	for i := 0; i < n && c.err == nil; i++ {
		m.ResultFormats = append(m.ResultFormats, c.int16("result format"))
	}
	return c.end()
}

// Encode appends the message.
func (m *Bind) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeBind)
	dst = append(append(dst, m.Portal...), 0)
	dst = append(append(dst, m.Statement...), 0)
	dst = appendInt16(dst, int16(len(m.ParamFormats)))
	for _, f := range m.ParamFormats {
		dst = appendInt16(dst, f)
	}
	dst = appendInt16(dst, int16(len(m.Params)))
	for _, v := range m.Params {
		if v == nil {
			dst = appendInt32(dst, -1)
			continue
		}
		dst = append(appendInt32(dst, int32(len(v))), v...)
	}
	dst = appendInt16(dst, int16(len(m.ResultFormats)))
	for _, f := range m.ResultFormats {
		dst = appendInt16(dst, f)
	}
	return FinishMessage(dst, pos)
}

// Compression algorithms of CompressedMessages (pg_compress_algorithm).
const (
	CompressionNone = 0
	CompressionGzip = 1
	CompressionLZ4  = 2
	CompressionZstd = 3
)

// AlgorithmName names a pg_compress_algorithm value.
func AlgorithmName(a byte) string {
	switch a {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return "algorithm " + strconv.Itoa(int(a))
}

// CompressedMessages is the proposed backend container 'z': the algorithm,
// the type bytes of the messages that start in this payload, and a piece of
// a compression frame that spans many containers.
type CompressedMessages struct {
	Algorithm byte
	Types     []byte
	Data      []byte
}

// Decode decodes a body.
func (m *CompressedMessages) Decode(body []byte) error {
	c := cursor{b: body, msg: "CompressedMessages"}
	m.Algorithm = c.byte1("algorithm")
	m.Types = c.cstring("message types")
	m.Data = c.rest()
	return c.err
}

// Encode appends the message.
func (m *CompressedMessages) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeCompressedMessages)
	dst = append(dst, m.Algorithm)
	dst = append(append(dst, m.Types...), 0)
	return FinishMessage(append(dst, m.Data...), pos)
}
