package pgwire

import "strconv"

// Backend messages not in messages.go. Body-less ones (ParseComplete,
// BindComplete, CloseComplete, NoData, PortalSuspended,
// EmptyQueryResponse, CopyDone) are built with AppendMessage(dst, typ, nil).

// CommandComplete reports the command tag ("SELECT 3").
type CommandComplete struct{ Tag []byte }

// Decode decodes a body.
func (m *CommandComplete) Decode(body []byte) error {
	c := cursor{b: body, msg: "CommandComplete"}
	m.Tag = c.cstring("command tag")
	return c.end()
}

// Encode appends the message.
func (m *CommandComplete) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeCommandComplete)
	return FinishMessage(append(append(dst, m.Tag...), 0), pos)
}

// ParameterStatus reports a run-time parameter.
type ParameterStatus struct{ Name, Value []byte }

// Decode decodes a body.
func (m *ParameterStatus) Decode(body []byte) error {
	c := cursor{b: body, msg: "ParameterStatus"}
	m.Name = c.cstring("name")
	m.Value = c.cstring("value")
	return c.end()
}

// Encode appends the message.
func (m *ParameterStatus) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeParameterStatus)
	dst = append(append(dst, m.Name...), 0)
	return FinishMessage(append(append(dst, m.Value...), 0), pos)
}

// ParameterDescription lists a statement's parameter types.
type ParameterDescription struct{ OIDs []uint32 }

// Decode decodes a body.
func (m *ParameterDescription) Decode(body []byte) error {
	c := cursor{b: body, msg: "ParameterDescription"}
	n := int(c.int16("parameter count"))
	if c.err == nil && n < 0 {
		c.fail("negative parameter count " + strconv.Itoa(n))
	}
	m.OIDs = m.OIDs[:0]
	for i := 0; i < n && c.err == nil; i++ {
		m.OIDs = append(m.OIDs, uint32(c.int32("parameter type")))
	}
	return c.end()
}

// Encode appends the message.
func (m *ParameterDescription) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeParameterDescription)
	dst = appendInt16(dst, int16(len(m.OIDs)))
	for _, o := range m.OIDs {
		dst = appendInt32(dst, int32(o))
	}
	return FinishMessage(dst, pos)
}

// NotificationResponse delivers a NOTIFY.
type NotificationResponse struct {
	ProcessID        uint32
	Channel, Payload []byte
}

// Decode decodes a body.
func (m *NotificationResponse) Decode(body []byte) error {
	c := cursor{b: body, msg: "NotificationResponse"}
	m.ProcessID = uint32(c.int32("process ID"))
	m.Channel = c.cstring("channel")
	m.Payload = c.cstring("payload")
	return c.end()
}

// Encode appends the message.
func (m *NotificationResponse) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeNotificationResponse)
	dst = appendInt32(dst, int32(m.ProcessID))
	dst = append(append(dst, m.Channel...), 0)
	return FinishMessage(append(append(dst, m.Payload...), 0), pos)
}

// CopyResponse is CopyInResponse ('G'), CopyOutResponse ('H') or
// CopyBothResponse ('W'): the overall format and each column's.
type CopyResponse struct {
	Format        byte
	ColumnFormats []int16
}

// Decode decodes a body.
func (m *CopyResponse) Decode(body []byte) error {
	c := cursor{b: body, msg: "CopyResponse"}
	m.Format = c.byte1("format")
	n := int(c.int16("column count"))
	if c.err == nil && n < 0 {
		c.fail("negative column count " + strconv.Itoa(n))
	}
	m.ColumnFormats = m.ColumnFormats[:0]
	for i := 0; i < n && c.err == nil; i++ {
		m.ColumnFormats = append(m.ColumnFormats, c.int16("column format"))
	}
	return c.end()
}

// Encode appends the message with type byte typ ('G', 'H' or 'W').
func (m *CopyResponse) Encode(dst []byte, typ byte) []byte {
	dst, pos := AppendHeader(dst, typ)
	dst = appendInt16(append(dst, m.Format), int16(len(m.ColumnFormats)))
	for _, f := range m.ColumnFormats {
		dst = appendInt16(dst, f)
	}
	return FinishMessage(dst, pos)
}

// FunctionCallResponse returns a fast-path call's result (nil: NULL).
type FunctionCallResponse struct{ Result []byte }

// Decode decodes a body.
func (m *FunctionCallResponse) Decode(body []byte) error {
	c := cursor{b: body, msg: "FunctionCallResponse"}
	l := c.int32("result length")
	m.Result = nil
	if c.err == nil && l != -1 {
		if l < 0 {
			c.fail("result length " + strconv.Itoa(int(l)) + " is negative")
		}
		m.Result = c.bytes(int(l), "result")
		if m.Result == nil && c.err == nil {
			m.Result = []byte{}
		}
	}
	return c.end()
}

// Encode appends the message.
func (m *FunctionCallResponse) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeFunctionCallResponse)
	if m.Result == nil {
		return FinishMessage(appendInt32(dst, -1), pos)
	}
	return FinishMessage(append(appendInt32(dst, int32(len(m.Result))), m.Result...), pos)
}

// NegotiateProtocolVersion answers a startup asking for a newer minor
// version or unknown _pq_ options.
type NegotiateProtocolVersion struct {
	NewestMinor uint32
	Options     [][]byte
}

// Decode decodes a body.
func (m *NegotiateProtocolVersion) Decode(body []byte) error {
	c := cursor{b: body, msg: "NegotiateProtocolVersion"}
	m.NewestMinor = uint32(c.int32("newest minor version"))
	n := int(c.int32("option count"))
	if c.err == nil && (n < 0 || n > len(body)) {
		c.fail("option count " + strconv.Itoa(n) + " is impossible in " + strconv.Itoa(len(body)) + " bytes")
	}
	m.Options = m.Options[:0]
	for i := 0; i < n && c.err == nil; i++ {
		m.Options = append(m.Options, c.cstring("option"))
	}
	return c.end()
}

// Encode appends the message.
func (m *NegotiateProtocolVersion) Encode(dst []byte) []byte {
	dst, pos := AppendHeader(dst, TypeNegotiateProtocolVersion)
	dst = appendInt32(appendInt32(dst, int32(m.NewestMinor)), int32(len(m.Options)))
	for _, o := range m.Options {
		dst = append(append(dst, o...), 0)
	}
	return FinishMessage(dst, pos)
}
