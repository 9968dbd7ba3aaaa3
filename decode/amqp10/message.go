package amqp10

import (
	"encoding/hex"
	"hash/adler32"
	"hash/crc32"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode"
)

// Section is one section of a message (§3.2) located in the message bytes.
type Section struct {
	// Descriptor is the section's descriptor code (DescriptorHeader ...
	// DescriptorFooter).
	Descriptor uint64
	// Value spans the whole section, descriptor included.
	Value Value
}

// Name returns the section's name from messaging.xml ("properties").
func (s *Section) Name() string {
	if t := describedOf(s.Descriptor); t != nil {
		return t.name
	}
	return "section 0x" + strconv.FormatUint(s.Descriptor, 16)
}

// Message is a message located in place: its sections and the exact range
// of its bare message (§3.2: properties, application-properties and the
// body; the header, annotations and footer are not part of it).
type Message struct {
	// Sections in wire order. ParseMessage reuses the slice's storage.
	Sections []Section
	// BareStart and BareEnd bound the bare message: from the first
	// bare-message section up to the footer (or the end). BareStart ==
	// BareEnd when the message has no bare section.
	BareStart, BareEnd int
	// Footer is the index of the footer section in Sections, or -1.
	Footer int
	// Properties is the index of the properties section, or -1.
	Properties int
	// Body describes the body for summaries: its kind ("data",
	// "amqp-sequence", "amqp-value", or "" without a body), the number of
	// body sections and their total bytes (data: the binary payloads).
	BodyKind     string
	BodySections int
	BodyBytes    int
}

func isBare(d uint64) bool { return d >= DescriptorProperties && d <= DescriptorAMQPValue }

// ParseMessage locates the sections of message b. It reads descriptors and
// sizes only, never the body's contents, and allocates nothing once
// m.Sections has grown to the message's section count. Sections out of the
// order §3.2 prescribes are reported as an error after all sections were
// located.
func ParseMessage(b []byte, m *Message) error {
	m.Sections = m.Sections[:0]
	m.BareStart, m.BareEnd, m.Footer, m.Properties = -1, len(b), -1, -1
	m.BodyKind, m.BodySections, m.BodyBytes = "", 0, 0
	var orderErr error
	last := uint64(0)
	for off := 0; off < len(b); {
		// Scanned into its place: a Value is some hundred bytes, and
		// copying it twice a section was most of the time spent here.
		m.Sections = append(m.Sections, Section{})
		sec := &m.Sections[len(m.Sections)-1]
		if err := scanTo(b, off, 0, &sec.Value); err != nil {
			m.Sections = m.Sections[:len(m.Sections)-1]
			m.fixBare()
			return err
		}
		code, _, ok := sec.Value.Descriptor(b)
		if !ok || code < DescriptorHeader || code > DescriptorFooter {
			m.Sections = m.Sections[:len(m.Sections)-1]
			m.fixBare()
			return errAt(off, "message section expected, got "+sec.Value.Code.String())
		}
		sec.Descriptor = code
		m.located(code, &sec.Value, off, &last, &orderErr)
		off = sec.Value.End
	}
	m.fixBare()
	return orderErr
}

// fixBare makes the bare message empty when there is no bare section, or
// one only after the footer (out of order, reported).
func (m *Message) fixBare() {
	if m.BareStart < 0 || m.BareStart > m.BareEnd {
		m.BareStart = m.BareEnd
	}
}

// add appends section code, located as v at off, and records it (see
// located).
func (m *Message) add(code uint64, v *Value, off int, last *uint64, orderErr *error) {
	m.Sections = append(m.Sections, Section{Descriptor: code, Value: *v})
	m.located(code, v, off, last, orderErr)
}

// located records section code, the last of m.Sections, located as v at
// off: where the bare message and the footer begin, which one is the
// properties, what the body is; orderErr gets the first section out of
// order after last (which located moves on).
func (m *Message) located(code uint64, v *Value, off int, last *uint64, orderErr *error) {
	if *orderErr == nil && (code < *last || (code == *last && code != DescriptorData && code != DescriptorAMQPSequence) ||
		(code >= DescriptorData && code <= DescriptorAMQPValue && *last >= DescriptorData && *last <= DescriptorAMQPValue && code != *last)) {
		*orderErr = errAt(off, "section "+describedOf(code).name+" out of order after "+describedOf(*last).name)
	}
	*last = code
	switch {
	case isBare(code):
		if m.BareStart < 0 {
			m.BareStart = off
		}
	case code == DescriptorFooter:
		if m.Footer < 0 {
			m.Footer = len(m.Sections) - 1
			m.BareEnd = off
		}
	}
	switch code {
	case DescriptorProperties:
		m.Properties = len(m.Sections) - 1
	case DescriptorData:
		m.BodyKind = "data"
		m.BodySections++
		m.BodyBytes += v.End - v.Data
	case DescriptorAMQPSequence, DescriptorAMQPValue:
		m.BodyKind = describedOf(code).name
		m.BodySections++
		m.BodyBytes += v.End - v.DescEnd
	}
}

// Bare returns the bare message's bytes (empty when the bounds do not fit
// b, which ParseMessage never produces for the b it parsed).
func (m *Message) Bare(b []byte) []byte {
	if m.BareStart < 0 || m.BareStart > m.BareEnd || m.BareEnd > len(b) {
		return nil
	}
	return b[m.BareStart:m.BareEnd]
}

// Footer annotation keys of RabbitMQ's end-to-end checksums.
const (
	AnnotationCRC32   = "x-opt-crc-32"
	AnnotationAdler32 = "x-opt-adler-32"
)

// VerifyChecksum checks the footer's x-opt-crc-32 or x-opt-adler-32
// annotation against the bare message, as RabbitMQ's AMQP client computes
// it: over the exact bytes from the first bare-message section up to the
// start of the footer. It does not allocate.
func (m *Message) VerifyChecksum(b []byte) decode.Checksum {
	a, ok := m.checksumAnnotation(b)
	if !ok {
		return decode.Checksum{Status: decode.ChecksumAbsent}
	}
	bare := m.Bare(b)
	var got uint32
	if a.alg == Adler32 {
		got = adler32.Checksum(bare)
	} else {
		got = crc32.ChecksumIEEE(bare)
	}
	return a.verdict(got)
}

// verdict is the checksum the annotation expects, against got, the
// bare message's.
func (a *checksumAnnotation) verdict(got uint32) decode.Checksum {
	st := decode.ChecksumOK
	if got != a.expected {
		st = decode.ChecksumMismatch
	}
	return decode.Checksum{Algorithm: a.alg, Status: st, Expected: a.expected, Actual: got}
}

// checksumAnnotation is the footer annotation VerifyChecksum checks,
// located in the message bytes.
type checksumAnnotation struct {
	alg      string // CRC32 or Adler32
	expected uint32
	// key and value are the annotation's encoded key and value.
	key, value Value
}

// checksumAnnotation returns the footer's first checksum annotation (see
// checksumEntry), the one VerifyChecksum checks; ok is false when there is
// none. It does not allocate.
func (m *Message) checksumAnnotation(b []byte) (a checksumAnnotation, ok bool) {
	if m.Footer < 0 {
		return a, false
	}
	fv := m.Sections[m.Footer].Value
	inner := fv
	inner.Start, inner.DescStart, inner.DescEnd = fv.DescEnd, 0, 0
	if inner.Code != CodeMap8 && inner.Code != CodeMap32 {
		return a, false
	}
	it := inner.Items(b)
	for it.Next() {
		k := it.Value
		if !it.Next() {
			break
		}
		if alg, exp, ok := checksumEntry(b, k, it.Value); ok {
			return checksumAnnotation{alg: alg, expected: exp, key: k, value: it.Value}, true
		}
	}
	return a, false
}

// checksumEntry reports whether the footer map entry k: v of message b is
// a checksum annotation: the symbol x-opt-crc-32 or x-opt-adler-32 with a
// value of any unsigned encoding that fits 32 bits (the convention's value
// is a uint). It returns the algorithm (CRC32 or Adler32) and the value.
func checksumEntry(b []byte, k, v Value) (alg string, expected uint32, ok bool) {
	if k.Code != CodeSym8 && k.Code != CodeSym32 {
		return "", 0, false
	}
	switch string(b[k.Data:k.End]) {
	case AnnotationCRC32:
		alg = CRC32
	case AnnotationAdler32:
		alg = Adler32
	default:
		return "", 0, false
	}
	exp, ok := v.Uint(b)
	if !ok || exp > 0xffffffff {
		return "", 0, false
	}
	return alg, uint32(exp), true
}

// MessageID returns properties.message-id rendered as text (strings as
// they are, ulongs in decimal, uuids in their canonical form, binary in
// hex), or "" when the message has none.
func (m *Message) MessageID(b []byte) string {
	var c Composite
	return m.messageID(b, &c, nil)
}

// messageID is MessageID with c as scratch; text, when not nil, makes
// the string of an id the message holds as text (the decoder carves it
// from its slab).
func (m *Message) messageID(b []byte, c *Composite, text func([]byte) string) string {
	if m.Properties < 0 {
		return ""
	}
	if c.setTo(b, &m.Sections[m.Properties].Value) != nil {
		return ""
	}
	if f, ok := c.Field(0); ok && text != nil {
		switch f.Code {
		case CodeStr8, CodeStr32, CodeSym8, CodeSym32:
			return text(b[f.Data:f.End])
		}
	}
	return idText(b, c, 0)
}

func idText(b []byte, c *Composite, i int) string {
	f, ok := c.Field(i)
	if !ok {
		return ""
	}
	switch f.Code {
	case CodeStr8, CodeStr32, CodeSym8, CodeSym32:
		return string(b[f.Data:f.End])
	case CodeVbin8, CodeVbin32:
		return hex.EncodeToString(b[f.Data:f.End])
	case CodeUUID:
		return formatUUID(b[f.Data:f.End])
	}
	if u, ok := f.Uint(b); ok {
		return strconv.FormatUint(u, 10)
	}
	return ""
}
