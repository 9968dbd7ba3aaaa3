package pgwire

import (
	"encoding/binary"
	"strconv"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

func init() { decode.RegisterFieldsJSON(dissectTyped, typedFieldsJSON) }

// typedFieldsJSON renders the field tree of the typed messages that come by
// the million (DataRow, CopyData, and those with no body: NoData,
// CopyDone, Sync, ...) straight from the unit's bytes, as decode/output
// renders the tree dissectMessage builds: the same keys in the same order,
// the same values. Anything else, or any message that is not well formed
// (which the tree reports in an "error" field), is left to the tree.
func typedFieldsJSON(b []byte, u *decode.Unit, maxFields int) ([]byte, bool) {
	raw := u.Raw
	if len(raw) < HeaderLen || u.Len != len(raw) {
		return b, false
	}
	typ := raw[0]
	l := int64(int32(binary.BigEndian.Uint32(raw[1:])))
	if l != int64(len(raw)-1) {
		return b, false
	}
	body := raw[HeaderLen:]
	// The fields the renderer counts against maxFields: type and length,
	// then each field of the body and each item of its lists.
	count := 2
	switch {
	case typ == TypeCopyData:
		count++
	case u.Dir == decode.DirB && typ == TypeDataRow:
		if len(body) < 2 {
			return b, false
		}
		count += 2 + max(int(int16(binary.BigEndian.Uint16(body))), 0)
	case noBody(u.Dir, typ):
		if len(body) != 0 {
			return b, false
		}
	default:
		return b, false
	}
	if maxFields >= 0 && count > maxFields {
		return b, false
	}
	mark := len(b)
	b = append(b, `{"type":`...)
	b = decode.AppendJSONString(b, u.Type)
	b = append(b, `,"length":`...)
	b = strconv.AppendInt(b, l, 10)
	switch {
	case typ == TypeCopyData:
		b = append(b, `,"data":`...)
		b = decode.AppendJSONHex(b, body)
	case typ == TypeDataRow:
		n := int(int16(binary.BigEndian.Uint16(body)))
		b = append(b, `,"field-count":`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, `,"values":[`...)
		off := 2
		for i := range max(n, 0) {
			if len(body)-off < 4 {
				return b[:mark], false
			}
			vl := int(int32(binary.BigEndian.Uint32(body[off:])))
			off += 4
			if i > 0 {
				b = append(b, ',')
			}
			switch {
			case vl == -1:
				b = append(b, `{"length":-1}`...)
				continue
			case vl < -1 || vl > len(body)-off:
				return b[:mark], false
			}
			v := body[off : off+vl]
			off += vl
			if nb, ok := decode.AppendJSONPlain(b, v); ok {
				b = nb
			} else if printable(v) {
				b = decode.AppendJSONString(b, unsafe.String(unsafe.SliceData(v), len(v)))
			} else {
				b = decode.AppendJSONHex(b, v)
			}
		}
		if off != len(body) {
			return b[:mark], false
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// noBody reports whether dissectMessage gives messages of type typ in
// direction dir no field past type and length.
func noBody(dir decode.Dir, typ byte) bool {
	if dir == decode.DirF {
		switch typ {
		case TypeSync, TypeFlush, TypeTerminate, TypeCopyDone:
			return true
		}
		return false
	}
	switch typ {
	case TypeNoData, TypeParseComplete, TypeBindComplete, TypeCloseComplete, TypeEmptyQueryResponse, TypePortalSuspended, TypeCopyDone:
		return true
	}
	return false
}
