package pgwire

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"sync"
)

// maxSummaryText bounds the text (queries, messages) quoted in a summary.
const maxSummaryText = 120

// columnsSummary caches "DataRow: N columns" for common N so the busiest
// message costs no string building.
var columnsSummary [64]string

func init() {
	for i := range columnsSummary {
		columnsSummary[i] = "DataRow: " + strconv.Itoa(i) + " columns"
	}
	columnsSummary[1] = "DataRow: 1 column"
}

// copyDataSummaries holds "CopyData: N bytes" for N up to 4 KiB, made at
// the first CopyData: a COPY is a million of them, each a row's length.
var copyDataSummaries = sync.OnceValue(func() *[4097]string {
	var t [4097]string
	for i := range t {
		t[i] = "CopyData: " + strconv.Itoa(i) + " bytes"
	}
	return &t
})

// dataRowSummary is the summary of a DataRow named name: its column
// count, or its name when the body is too short to have one.
func dataRowSummary(name string, body []byte) string {
	if len(body) < 2 {
		return name
	}
	// Int16, signed as the tree shows it (a negative count is an error
	// the decoder reports).
	n := int(int16(binary.BigEndian.Uint16(body)))
	if n < 0 {
		return "DataRow: column count " + strconv.Itoa(n)
	}
	if n < len(columnsSummary) {
		return columnsSummary[n]
	}
	return "DataRow: " + strconv.Itoa(n) + " columns"
}

func copyDataSummary(n int) string {
	if t := copyDataSummaries(); n >= 0 && n < len(t) {
		return t[n]
	}
	return "CopyData: " + strconv.Itoa(n) + " bytes"
}

func clip(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > maxSummaryText {
		return string(b[:maxSummaryText]) + "…"
	}
	return string(b)
}

func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// summarize returns the one-line summary of a typed message, like tshark's
// Info column. It reads the body leniently: the field tree reports errors.
func summarize(name string, typ byte, body []byte, fromFrontend, redacted bool) string {
	if fromFrontend {
		switch typ {
		case TypeQuery:
			return "Query: " + clip(body)
		case TypeParse:
			stmt := cstr(body)
			rest := body[min(len(stmt)+1, len(body)):]
			return "Parse " + strconv.Quote(string(stmt)) + ": " + clip(rest)
		case TypeBind:
			portal := cstr(body)
			rest := body[min(len(portal)+1, len(body)):]
			return "Bind portal " + strconv.Quote(string(portal)) + " to statement " + strconv.Quote(string(cstr(rest)))
		case TypeDescribe, TypeClose:
			if len(body) == 0 {
				return name
			}
			what := "statement "
			if body[0] == 'P' {
				what = "portal "
			}
			return name + " " + what + strconv.Quote(string(cstr(body[1:])))
		case TypeExecute:
			portal := cstr(body)
			s := "Execute portal " + strconv.Quote(string(portal))
			if r := body[min(len(portal)+1, len(body)):]; len(r) >= 4 {
				if n := binary.BigEndian.Uint32(r); n != 0 {
					s += " max " + strconv.FormatUint(uint64(n), 10) + " rows"
				}
			}
			return s
		case TypeCopyData:
			return copyDataSummary(len(body))
		case TypeCopyFail:
			return "CopyFail: " + clip(body)
		case TypePassword:
			if redacted {
				return name + ": " + "<redacted>"
			}
			if name == "SASLInitialResponse" {
				return name + ": " + clip(body)
			}
			return name
		}
		return name
	}
	switch typ {
	case TypeDataRow:
		return dataRowSummary(name, body)
	case TypeCommandComplete:
		return "CommandComplete: " + clip(body)
	case TypeReadyForQuery:
		if len(body) == 1 {
			switch body[0] {
			case 'I':
				return "ReadyForQuery: idle"
			case 'T':
				return "ReadyForQuery: in transaction"
			case 'E':
				return "ReadyForQuery: in failed transaction"
			}
		}
	case TypeParameterStatus:
		k := cstr(body)
		v := cstr(body[min(len(k)+1, len(body)):])
		return "ParameterStatus: " + string(k) + "=" + string(v)
	case TypeErrorResponse, TypeNoticeResponse:
		var m ErrorResponse
		_ = m.Decode(body)
		s := name + ": " + string(m.Get('S'))
		if c := m.Get('C'); c != nil {
			s += " " + string(c)
		}
		return s + " " + clip(m.Get('M'))
	case TypeRowDescription:
		if len(body) >= 2 {
			return "RowDescription: " + strconv.Itoa(int(binary.BigEndian.Uint16(body))) + " columns"
		}
	case TypeCopyData:
		return copyDataSummary(len(body))
	case TypeNotificationResponse:
		if len(body) >= 4 {
			ch := cstr(body[4:])
			pl := cstr(body[min(4+len(ch)+1, len(body)):])
			return "NotificationResponse: " + string(ch) + " " + strconv.Quote(clip(pl)) + " from process " + strconv.FormatUint(uint64(binary.BigEndian.Uint32(body)), 10)
		}
	case TypeBackendKeyData:
		if len(body) >= 4 {
			return "BackendKeyData: process " + strconv.FormatUint(uint64(binary.BigEndian.Uint32(body)), 10)
		}
	case TypeAuthentication:
		if name == "AuthenticationSASL" && len(body) > 4 {
			return name + ": " + string(bytes.TrimRight(bytes.ReplaceAll(body[4:], []byte{0}, []byte{' '}), " "))
		}
	case TypeNegotiateProtocolVersion:
		if len(body) >= 4 {
			v := binary.BigEndian.Uint32(body)
			if v > 0xffff {
				return "NegotiateProtocolVersion: newest version " + strconv.Itoa(int(v>>16)) + "." + strconv.Itoa(int(v&0xffff))
			}
			return "NegotiateProtocolVersion: newest minor " + strconv.FormatUint(uint64(v), 10)
		}
	}
	return name
}
