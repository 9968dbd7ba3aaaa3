package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"strconv"
	"strings"
)

// Attribute names RabbitMQ's rabbit_cert_info gives RDN types; others are
// written as dotted OIDs.
var rdnNames = []struct {
	oid  asn1.ObjectIdentifier
	name string
}{
	{asn1.ObjectIdentifier{2, 5, 4, 4}, "SN"},
	{asn1.ObjectIdentifier{2, 5, 4, 42}, "GIVENNAME"},
	{asn1.ObjectIdentifier{2, 5, 4, 43}, "INITIALS"},
	{asn1.ObjectIdentifier{2, 5, 4, 44}, "GENERATIONQUALIFIER"},
	{asn1.ObjectIdentifier{2, 5, 4, 3}, "CN"},
	{asn1.ObjectIdentifier{2, 5, 4, 7}, "L"},
	{asn1.ObjectIdentifier{2, 5, 4, 8}, "ST"},
	{asn1.ObjectIdentifier{2, 5, 4, 10}, "O"},
	{asn1.ObjectIdentifier{2, 5, 4, 11}, "OU"},
	{asn1.ObjectIdentifier{2, 5, 4, 12}, "TITLE"},
	{asn1.ObjectIdentifier{2, 5, 4, 6}, "C"},
	{asn1.ObjectIdentifier{2, 5, 4, 5}, "SERIALNUMBER"},
	{asn1.ObjectIdentifier{2, 5, 4, 65}, "PSEUDONYM"},
	{asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, "DC"},
	{asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, "EMAILADDRESS"},
	{asn1.ObjectIdentifier{2, 5, 4, 9}, "STREET"},
	{asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, "UID"},
}

var oidCommonName = asn1.ObjectIdentifier{2, 5, 4, 3}

// certName returns the user name EXTERNAL takes from cert.
func certName(cert *x509.Certificate, from CertLoginFrom) (string, bool) {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) != 0 {
		return "", false
	}
	if from == CommonName {
		var cns []string
		for _, rdn := range seq {
			for _, atv := range rdn {
				if atv.Type.Equal(oidCommonName) {
					cns = append(cns, attrValue(atv.Value))
				}
			}
		}
		return strings.Join(cns, ","), len(cns) > 0
	}
	return formatDN(seq), true
}

// formatDN writes the subject as RabbitMQ's rabbit_cert_info does: RFC 4514,
// RDNs in reverse order joined by ",", multi-valued RDNs by "+".
func formatDN(seq pkix.RDNSequence) string {
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			b.WriteString(rdnName(atv.Type))
			b.WriteByte('=')
			escapeRDNValue(&b, attrValue(atv.Value))
		}
	}
	return b.String()
}

func rdnName(oid asn1.ObjectIdentifier) string {
	for _, n := range rdnNames {
		if n.oid.Equal(oid) {
			return n.name
		}
	}
	return oid.String()
}

func attrValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// escapeRDNValue escapes as RabbitMQ does: RFC 4514's specials, a leading
// space or '#', a trailing space, and every byte outside 32..125 as \XX
// (non-ASCII too, byte by byte: RabbitMQ escapes for display).
func escapeRDNValue(b *strings.Builder, v string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case i == 0 && (c == ' ' || c == '#'):
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == ' ' && i == len(v)-1:
			b.WriteString(`\ `)
		case c == '"' || c == '+' || c == ',' || c == ';' || c == '<' || c == '>' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 32 || c >= 126:
			b.WriteByte('\\')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
}
