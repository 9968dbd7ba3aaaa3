package pgwire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/wiretap-dev/wiretap/decode"
)

// This file answers filter lookups of single fields without building a
// unit's tree (decode.Finder): a filter such as pgsql.query contains
// "SELECT" then costs a look at the type byte of most units and one
// string scan on Query and Parse, instead of a tree per unit.
//
// Two kinds of answer are given. By type: the tree of a message can hold
// only the names its dissector adds for its type byte (and direction), so
// any other name is absent without reading the body; that alone rules out
// most units. Exactly: the names below that findField reads itself, taking
// the same steps over the body as the dissector. Everything else, and every
// unit the finder is not sure about, is left to the tree.
//
// Messages carried in a CompressedMessages are units of their own whose
// Raw is the message itself, dissected like any other, so they are answered
// alike; the container's own tree holds only its header and compression.*
// fields.

func init() { decode.RegisterFinder(decode.ProtoPgSQL, findField) }

// fieldID numbers the pgsql.* names the trees hold, for the per-type sets.
type fieldID uint8

const (
	// Answered exactly (where the unit allows).
	fType fieldID = iota
	fLength
	fQuery
	fStatement
	fPortal
	fKind
	fReturns
	fTag
	fStatus
	fParamName
	fParamValue
	fErrField // every ErrorResponse/NoticeResponse field name; nameInfo.code tells which
	fSSLResponse
	fEncryptedBytes

	// Answered by type only.
	fFieldCount
	fOIDType
	fFormat
	fValLength
	fValData
	fCopyData
	fError
	fOID
	fSASLMech
	fSASLDataLength
	fSASLData
	fGSSData
	fPassword
	fAuthType
	fSalt
	fPID
	fKey
	fOIDTable
	fColName
	fColIndex
	fColTypemod
	fCondition
	fText
	fVersionSupportedMinor
	fNonsupportedCount
	fNonsupportedOption
	fCompAlgorithm
	fCompTypes
	fCompData
	fVersionMajor
	fVersionMinor
	fRequestCode
	fReplication // every pgsql.replication.* name

	numFieldIDs
)

// A nameSet is a set of fieldIDs.
type nameSet uint64

var _ = [64 - numFieldIDs]struct{}{} // a nameSet holds every fieldID

func setOf(ids ...fieldID) nameSet {
	var s nameSet
	for _, id := range ids {
		s |= 1 << id
	}
	return s
}

func (s nameSet) has(id fieldID) bool { return s&(1<<id) != 0 }

// nameInfo is what the finder knows of a name: its fieldID and, for the
// error fields, the field code.
type nameInfo struct {
	id   fieldID
	code byte
}

var (
	// pgNames maps every name a pgwire tree can hold to its nameInfo; a
	// pgsql.* name missing here is in no tree.
	pgNames = map[string]nameInfo{}

	// frontSets and backSets hold, per type byte, the names the tree of a
	// typed message can hold (dissectTyped).
	frontSets, backSets [256]nameSet

	// typeEncoding, byteValue, errEncoding and errKey are the strings and boxed
	// values the dissector computes per byte, computed once so that the
	// finder does not allocate them.
	typeEncoding [256]string
	byteValue    [256]any
	errEncoding  [256]string
	errKey       [256]string
)

// The dissectors, by identity: the finder answers only for trees it knows
// the shape of, not for redacted units (dissectTypedRedacted) nor for
// pgsql units whose tree another package builds (the TUI's fake traffic
// generator makes some).
var (
	pcTyped       = funcPC(dissectTyped)
	pcUntyped     = funcPC(dissectUntyped)
	pcAnswer      = funcPC(dissectAnswer)
	pcEncrypted   = funcPC(dissectEncrypted)
	pcReplication = funcPC(dissectReplication)
)

// funcPC returns the code pointer of f. Distinct top-level functions have
// distinct code, so equal pointers mean the same dissector (only closures
// of one literal share code, and the dissectors are not closures); it
// costs no allocation.
func funcPC(f func(*decode.Unit) []*decode.Field) uintptr { return reflect.ValueOf(f).Pointer() }

// The tables above are built once, by loadTables, at the first lookup:
// built at init, they cost every run of the program 980 allocations
// before main, where a run without --filter makes no lookup.
var tablesOnce sync.Once

// loadTables builds the tables; lookupName, the one way in (findField
// calls it before anything else), calls it first.
func loadTables() { tablesOnce.Do(buildTables) }

func buildTables() {
	for name, id := range map[string]fieldID{
		"pgsql.type":                           fType,
		"pgsql.length":                         fLength,
		"pgsql.query":                          fQuery,
		"pgsql.statement":                      fStatement,
		"pgsql.portal":                         fPortal,
		"pgsql.kind":                           fKind,
		"pgsql.returns":                        fReturns,
		"pgsql.tag":                            fTag,
		"pgsql.status":                         fStatus,
		"pgsql.parameter_name":                 fParamName,
		"pgsql.parameter_value":                fParamValue,
		"pgsql.ssl_response":                   fSSLResponse,
		"pgsql.encrypted_bytes":                fEncryptedBytes,
		"pgsql.field.count":                    fFieldCount,
		"pgsql.oid.type":                       fOIDType,
		"pgsql.format":                         fFormat,
		"pgsql.val.length":                     fValLength,
		"pgsql.val.data":                       fValData,
		"pgsql.copydata":                       fCopyData,
		"pgsql.error":                          fError,
		"pgsql.oid":                            fOID,
		"pgsql.auth.sasl.mech":                 fSASLMech,
		"pgsql.auth.sasl.data.length":          fSASLDataLength,
		"pgsql.auth.sasl.data":                 fSASLData,
		"pgsql.auth.gssapi_sspi.data":          fGSSData,
		"pgsql.password":                       fPassword,
		"pgsql.authtype":                       fAuthType,
		"pgsql.salt":                           fSalt,
		"pgsql.pid":                            fPID,
		"pgsql.key":                            fKey,
		"pgsql.oid.table":                      fOIDTable,
		"pgsql.col.name":                       fColName,
		"pgsql.col.index":                      fColIndex,
		"pgsql.col.typemod":                    fColTypemod,
		"pgsql.condition":                      fCondition,
		"pgsql.text":                           fText,
		"pgsql.version_supported_minor":        fVersionSupportedMinor,
		"pgsql.number_nonsupported_options":    fNonsupportedCount,
		"pgsql.nonsupported_option":            fNonsupportedOption,
		"pgsql.compression.algorithm":          fCompAlgorithm,
		"pgsql.compression.types":              fCompTypes,
		"pgsql.compression.data":               fCompData,
		"pgsql.version_major":                  fVersionMajor,
		"pgsql.version_minor":                  fVersionMinor,
		"pgsql.request_code":                   fRequestCode,
		"pgsql.replication.kind":               fReplication,
		"pgsql.replication.wal_start":          fReplication,
		"pgsql.replication.wal_end":            fReplication,
		"pgsql.replication.send_time":          fReplication,
		"pgsql.replication.wal_data":           fReplication,
		"pgsql.replication.reply_requested":    fReplication,
		"pgsql.replication.write_lsn":          fReplication,
		"pgsql.replication.flush_lsn":          fReplication,
		"pgsql.replication.apply_lsn":          fReplication,
		"pgsql.replication.xmin":               fReplication,
		"pgsql.replication.xmin_epoch":         fReplication,
		"pgsql.replication.catalog_xmin":       fReplication,
		"pgsql.replication.catalog_xmin_epoch": fReplication,
	} {
		pgNames[name] = nameInfo{id: id}
	}
	for code, names := range errorFieldNames {
		pgNames[names[1]] = nameInfo{id: fErrField, code: code}
		errEncoding[code] = "Byte1 '" + string(rune(code)) + "' String"
		errKey[code] = names[0]
	}
	for i := range 256 {
		typeEncoding[i] = "Byte1 '" + string(rune(i)) + "'"
		byteValue[i] = string(rune(i))
	}

	// What frontendFields and backendFields add, per type byte.
	for t, s := range map[byte]nameSet{
		TypeQuery:        setOf(fQuery),
		TypeParse:        setOf(fStatement, fQuery, fFieldCount, fOIDType),
		TypeBind:         setOf(fPortal, fStatement, fFieldCount, fFormat, fValLength, fValData),
		TypeDescribe:     setOf(fKind, fPortal, fStatement),
		TypeClose:        setOf(fKind, fPortal, fStatement),
		TypeExecute:      setOf(fPortal, fReturns),
		TypeCopyData:     setOf(fCopyData),
		TypeCopyFail:     setOf(fError),
		TypeFunctionCall: setOf(fOID, fFieldCount, fFormat, fValLength, fValData),
		TypePassword:     setOf(fSASLMech, fSASLDataLength, fSASLData, fGSSData, fPassword),
	} {
		frontSets[t] = s
	}
	for t, s := range map[byte]nameSet{
		TypeAuthentication:           setOf(fAuthType, fSalt, fSASLMech, fSASLData, fGSSData),
		TypeBackendKeyData:           setOf(fPID, fKey),
		TypeParameterStatus:          setOf(fParamName, fParamValue),
		TypeReadyForQuery:            setOf(fStatus),
		TypeCommandComplete:          setOf(fTag),
		TypeRowDescription:           setOf(fFieldCount, fColName, fOIDTable, fColIndex, fOIDType, fValLength, fColTypemod, fFormat),
		TypeDataRow:                  setOf(fFieldCount, fValLength, fValData),
		TypeParameterDescription:     setOf(fFieldCount, fOIDType),
		TypeErrorResponse:            setOf(fErrField),
		TypeNoticeResponse:           setOf(fErrField),
		TypeCopyInResponse:           setOf(fFormat, fFieldCount),
		TypeCopyOutResponse:          setOf(fFormat, fFieldCount),
		TypeCopyBothResponse:         setOf(fFormat, fFieldCount),
		TypeCopyData:                 setOf(fCopyData),
		TypeNotificationResponse:     setOf(fPID, fCondition, fText),
		TypeFunctionCallResponse:     setOf(fValLength, fValData),
		TypeNegotiateProtocolVersion: setOf(fVersionSupportedMinor, fNonsupportedCount, fNonsupportedOption),
		TypeCompressedMessages:       setOf(fCompAlgorithm, fCompTypes, fCompData),
	} {
		backSets[t] = s
	}
	header := setOf(fType, fLength)
	for i := range frontSets {
		frontSets[i] |= header
		backSets[i] |= header
	}
}

// lookupName returns what the finder knows of name; known is false when
// no tree holds it. The names filters use most skip the map.
func lookupName(name string) (ni nameInfo, known bool) {
	loadTables()
	switch name {
	case "pgsql.query":
		return nameInfo{id: fQuery}, true
	case "pgsql.type":
		return nameInfo{id: fType}, true
	case "pgsql.length":
		return nameInfo{id: fLength}, true
	case "pgsql.statement":
		return nameInfo{id: fStatement}, true
	case "pgsql.portal":
		return nameInfo{id: fPortal}, true
	case "pgsql.tag":
		return nameInfo{id: fTag}, true
	case "pgsql.status":
		return nameInfo{id: fStatus}, true
	}
	ni, known = pgNames[name]
	return ni, known
}

// untypedSet returns the names the tree of a startup-phase packet of type
// typ can hold (dissectUntyped).
func untypedSet(typ string) nameSet {
	s := setOf(fType, fLength)
	switch typ {
	case "StartupMessage":
		s |= setOf(fVersionMajor, fVersionMinor, fParamName, fParamValue)
	case "SSLRequest", "GSSENCRequest":
		s |= setOf(fRequestCode)
	case "CancelRequest":
		s |= setOf(fRequestCode, fPID, fKey)
	}
	return s
}

// findField is the package's decode.Finder. It answers for the units the
// decoder dissects (not redacted units, units with a decode error or units
// whose tree another package builds): by type for every name, and exactly
// for the header fields, the SQL text, statement and portal names,
// Describe/Close kind, Execute row limit, CommandComplete tag,
// ReadyForQuery status, ParameterStatus name and value, the first
// occurrence of each error and notice field, and the two fields of the SSL
// answer and encrypted-stream units.
func findField(u *decode.Unit, name string, k int) (f decode.Field, ok, handled bool) {
	pc := funcPC(u.Dissect)
	if pc != pcTyped && pc != pcUntyped && pc != pcAnswer && pc != pcEncrypted && pc != pcReplication {
		return f, false, false // redacted, or not a tree of this package
	}
	if !strings.HasPrefix(name, "pgsql.") {
		return f, false, true // the trees hold only pgsql.* names
	}
	if u.Secret || u.Err() != "" {
		return f, false, false
	}
	ni, known := lookupName(name)
	if !known {
		return f, false, true
	}
	raw := u.Raw
	switch pc {
	case pcTyped:
		return findTyped(u, name, ni, k)
	case pcReplication:
		if len(raw) == 0 || ni.id == fReplication {
			return f, false, false
		}
		if ni.id != fType && ni.id != fLength {
			return f, false, true
		}
		return findHeader(u, name, ni.id, k)
	case pcUntyped:
		if !untypedSet(u.Type).has(ni.id) {
			return f, false, true
		}
		switch ni.id {
		case fType:
			if k != 0 {
				return f, false, true
			}
			f = decode.Field{Key: "type", Name: name, Value: u.Type}
			return f, true, true
		case fLength:
			if len(raw) < 4 || k != 0 {
				return f, false, true
			}
			f = decode.Field{Key: "length", Name: name, Value: int64(int32(binary.BigEndian.Uint32(raw))), Offset: 0, Length: 4, Encoding: "Int32"}
			return f, true, true
		}
		return f, false, false
	case pcAnswer:
		if len(raw) == 0 || k != 0 {
			return f, false, true
		}
		switch ni.id {
		case fType:
			f = decode.Field{Key: "type", Name: name, Value: u.Type}
			return f, true, true
		case fSSLResponse:
			f = decode.Field{Key: "answer", Name: name, Value: byteValue[raw[0]], Offset: 0, Length: 1, Encoding: "Byte1"}
			return f, true, true
		}
		return f, false, true
	default: // pcEncrypted
		if k != 0 {
			return f, false, true
		}
		switch ni.id {
		case fType:
			f = decode.Field{Key: "type", Name: name, Value: u.Type}
			return f, true, true
		case fEncryptedBytes:
			f = decode.Field{Key: "bytes", Name: name, Value: int64(u.Len)}
			return f, true, true
		}
		return f, false, true
	}
}

// findHeader answers pgsql.type and pgsql.length of a typed message, as
// header adds them.
func findHeader(u *decode.Unit, name string, id fieldID, k int) (f decode.Field, ok, handled bool) {
	raw := u.Raw
	if k != 0 {
		return f, false, true
	}
	if id == fType {
		f = decode.Field{Key: "type", Name: name, Value: u.Type, Offset: 0, Length: 1, Encoding: typeEncoding[raw[0]]}
		return f, true, true
	}
	if len(raw) < HeaderLen {
		return f, false, true
	}
	_, l, _ := ReadHeader(raw)
	f = decode.Field{Key: "length", Name: name, Value: l, Offset: 1, Length: 4, Encoding: "Int32"}
	return f, true, true
}

// findTyped answers for a typed message dissected by dissectMessage.
func findTyped(u *decode.Unit, name string, ni nameInfo, k int) (f decode.Field, ok, handled bool) {
	raw := u.Raw
	if len(raw) == 0 {
		return f, false, true // no tree at all
	}
	typ := raw[0]
	fe := u.Dir == decode.DirF
	set := backSets[typ]
	if fe {
		set = frontSets[typ]
	}
	if !set.has(ni.id) {
		return f, false, true
	}
	if ni.id == fType || ni.id == fLength {
		return findHeader(u, name, ni.id, k)
	}
	if len(raw) < HeaderLen || u.Len > len(raw) {
		return f, false, true // the tree ends with the header or a "truncated" note
	}
	// The body as header cuts it.
	_, l, _ := ReadHeader(raw)
	body := raw[HeaderLen:]
	if int64(len(body)) > l-4 && l >= 4 {
		body = body[:l-4]
	}
	switch ni.id {
	case fErrField:
		return findErrField(body, name, ni.code, k)
	case fQuery, fStatement, fPortal, fKind, fReturns, fTag, fStatus, fParamName, fParamValue:
		if k != 0 {
			return f, false, true // each of these occurs at most once in a tree
		}
	default:
		return f, false, false
	}
	off := 0
	switch {
	case ni.id == fQuery && fe && typ == TypeQuery:
		return strField(body, 0, "query", name)
	case ni.id == fQuery && fe && typ == TypeParse:
		if off = skipString(body, 0); off < 0 {
			return f, false, true
		}
		return strField(body, off, "query", name)
	case ni.id == fStatement && fe && typ == TypeParse:
		return strField(body, 0, "statement", name)
	case ni.id == fStatement && fe && typ == TypeBind:
		if off = skipString(body, 0); off < 0 {
			return f, false, true
		}
		return strField(body, off, "statement", name)
	case ni.id == fPortal && fe && (typ == TypeBind || typ == TypeExecute):
		return strField(body, 0, "portal", name)
	case (ni.id == fKind || ni.id == fPortal || ni.id == fStatement) && fe && (typ == TypeDescribe || typ == TypeClose):
		if len(body) == 0 {
			return f, false, true
		}
		switch {
		case ni.id == fKind:
			f = decode.Field{Key: "kind", Name: name, Value: byteValue[body[0]], Offset: HeaderLen, Length: 1, Encoding: "Byte1"}
			return f, true, true
		case (ni.id == fPortal) != (body[0] == 'P'):
			return f, false, true // the tree holds the other name
		}
		return strField(body, 1, ni.key(), name)
	case ni.id == fReturns && fe && typ == TypeExecute:
		if off = skipString(body, 0); off < 0 || len(body)-off < 4 {
			return f, false, true
		}
		v := int64(int32(binary.BigEndian.Uint32(body[off:])))
		f = decode.Field{Key: "returns", Name: name, Value: v, Offset: HeaderLen + off, Length: 4, Encoding: "Int32"}
		return f, true, true
	case ni.id == fTag && !fe && typ == TypeCommandComplete:
		return strField(body, 0, "tag", name)
	case ni.id == fStatus && !fe && typ == TypeReadyForQuery:
		if len(body) == 0 {
			return f, false, true
		}
		s := body[0]
		f = decode.Field{Key: "status", Name: name, Value: byteValue[s], Offset: HeaderLen, Length: 1, Encoding: "Byte1",
			Display: statusDisplay(s)}
		return f, true, true
	case ni.id == fParamName && !fe && typ == TypeParameterStatus:
		return strField(body, 0, "name", name)
	case ni.id == fParamValue && !fe && typ == TypeParameterStatus:
		if off = skipString(body, 0); off < 0 {
			return f, false, true
		}
		return strField(body, off, "value", name)
	}
	return f, false, false
}

// key returns the tree key of the names answered by Describe and Close.
func (ni nameInfo) key() string {
	if ni.id == fPortal {
		return "portal"
	}
	return "statement"
}

// skipString returns the body offset after the NUL-terminated string at
// off, or -1 when it is not terminated.
func skipString(body []byte, off int) int {
	i := bytes.IndexByte(body[off:], 0)
	if i < 0 {
		return -1
	}
	return off + i + 1
}

// strField returns the String field at body offset off as builder.str
// records it, or absent when the string is not NUL-terminated (the tree
// then ends with an error instead).
func strField(body []byte, off int, key, name string) (f decode.Field, ok, handled bool) {
	end := skipString(body, off)
	if end < 0 {
		return f, false, true
	}
	f = decode.Field{Key: key, Name: name, Value: alias(body[off : end-1]), Offset: HeaderLen + off, Length: end - off, Encoding: "String"}
	return f, true, true
}

// findErrField returns the first field with code of an ErrorResponse or
// NoticeResponse body, walking it as backendFields does. Later occurrences
// (servers send each code once) are left to the tree: answering them here
// would cost a walk per occurrence, quadratic on a body repeating a code.
func findErrField(body []byte, name string, code byte, k int) (f decode.Field, ok, handled bool) {
	seen := 0
	for off := 0; off < len(body); {
		c := body[off]
		if c == 0 {
			break
		}
		end := skipString(body, off+1)
		if end < 0 {
			break
		}
		if c == code {
			if k == 0 {
				f = decode.Field{Key: errKey[c], Name: name, Value: alias(body[off+1 : end-1]),
					Offset: HeaderLen + off, Length: end - off, Encoding: errEncoding[c]}
				return f, true, true
			}
			if seen++; seen > 1 {
				return f, false, false
			}
		}
		off = end
	}
	return f, false, true
}

// alias returns b as a string without copying. Finder values may alias
// Unit.Raw because a unit's bytes do not change once it is emitted (the
// decoder redacts secrets before; amqp091's argWalk.str does the same).
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
