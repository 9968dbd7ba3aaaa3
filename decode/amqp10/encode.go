package amqp10

import (
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"math"
)

// The Append functions encode AMQP 1.0 values (types.xml §1.6), appending
// to dst and returning the extended slice, in the style of strconv.Append*.
// Unless a function names its encoding, it picks the shortest one, as most
// peers do. Compound values take their items already encoded.

// AppendNull appends null (0x40).
func AppendNull(dst []byte) []byte { return append(dst, byte(CodeNull)) }

// AppendBool appends a boolean in its one-byte form (true 0x41, false 0x42).
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, byte(CodeTrue))
	}
	return append(dst, byte(CodeFalse))
}

// AppendBoolean appends a boolean in its two-byte form (0x56 0x00/0x01).
func AppendBoolean(dst []byte, v bool) []byte {
	if v {
		return append(dst, byte(CodeBoolean), 1)
	}
	return append(dst, byte(CodeBoolean), 0)
}

// AppendUbyte appends a ubyte (0x50).
func AppendUbyte(dst []byte, v uint8) []byte { return append(dst, byte(CodeUbyte), v) }

// AppendUshort appends a ushort (0x60).
func AppendUshort(dst []byte, v uint16) []byte {
	return binary.BigEndian.AppendUint16(append(dst, byte(CodeUshort)), v)
}

// AppendUint appends a uint as uint0, smalluint or uint.
func AppendUint(dst []byte, v uint32) []byte {
	switch {
	case v == 0:
		return append(dst, byte(CodeUint0))
	case v < 256:
		return append(dst, byte(CodeSmallUint), byte(v))
	}
	return binary.BigEndian.AppendUint32(append(dst, byte(CodeUint)), v)
}

// AppendUintFull appends a uint in its four-byte form (0x70).
func AppendUintFull(dst []byte, v uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, byte(CodeUint)), v)
}

// AppendUlong appends a ulong as ulong0, smallulong or ulong.
func AppendUlong(dst []byte, v uint64) []byte {
	switch {
	case v == 0:
		return append(dst, byte(CodeUlong0))
	case v < 256:
		return append(dst, byte(CodeSmallUlong), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, byte(CodeUlong)), v)
}

// AppendByte appends a byte (0x51).
func AppendByte(dst []byte, v int8) []byte { return append(dst, byte(CodeByte), byte(v)) }

// AppendShort appends a short (0x61).
func AppendShort(dst []byte, v int16) []byte {
	return binary.BigEndian.AppendUint16(append(dst, byte(CodeShort)), uint16(v))
}

// AppendInt appends an int as smallint or int.
func AppendInt(dst []byte, v int32) []byte {
	if v >= -128 && v <= 127 {
		return append(dst, byte(CodeSmallInt), byte(int8(v)))
	}
	return binary.BigEndian.AppendUint32(append(dst, byte(CodeInt)), uint32(v))
}

// AppendLong appends a long as smalllong or long.
func AppendLong(dst []byte, v int64) []byte {
	if v >= -128 && v <= 127 {
		return append(dst, byte(CodeSmallLong), byte(int8(v)))
	}
	return binary.BigEndian.AppendUint64(append(dst, byte(CodeLong)), uint64(v))
}

// AppendFloat appends a float (0x72).
func AppendFloat(dst []byte, v float32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, byte(CodeFloat)), math.Float32bits(v))
}

// AppendDouble appends a double (0x82).
func AppendDouble(dst []byte, v float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, byte(CodeDouble)), math.Float64bits(v))
}

// AppendChar appends a char (0x73, UTF-32).
func AppendChar(dst []byte, r rune) []byte {
	return binary.BigEndian.AppendUint32(append(dst, byte(CodeChar)), uint32(r))
}

// AppendTimestamp appends a timestamp in milliseconds since the Unix epoch.
func AppendTimestamp(dst []byte, ms int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, byte(CodeTimestamp)), uint64(ms))
}

// AppendUUID appends a uuid (0x98).
func AppendUUID(dst []byte, u [16]byte) []byte { return append(append(dst, byte(CodeUUID)), u[:]...) }

// AppendFixed appends a fixed-width value of any code with data as is
// (decimal32/64/128 and tests of unusual encodings).
func AppendFixed(dst []byte, code Code, data []byte) []byte {
	return append(append(dst, byte(code)), data...)
}

func appendVariable(dst []byte, short, long Code, v []byte) []byte {
	if len(v) < 256 {
		return append(append(dst, byte(short), byte(len(v))), v...)
	}
	dst = binary.BigEndian.AppendUint32(append(dst, byte(long)), uint32(len(v)))
	return append(dst, v...)
}

// AppendBinary appends a binary as vbin8 or vbin32.
func AppendBinary(dst []byte, v []byte) []byte { return appendVariable(dst, CodeVbin8, CodeVbin32, v) }

// AppendString appends a string as str8-utf8 or str32-utf8.
func AppendString(dst []byte, s string) []byte {
	return appendVariable(dst, CodeStr8, CodeStr32, []byte(s))
}

// AppendSymbol appends a symbol as sym8 or sym32.
func AppendSymbol(dst []byte, s string) []byte {
	return appendVariable(dst, CodeSym8, CodeSym32, []byte(s))
}

func appendCompound(dst []byte, short, long Code, count int, items [][]byte) []byte {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	if n+1 < 256 && count < 256 {
		dst = append(dst, byte(short), byte(n+1), byte(count))
	} else {
		dst = binary.BigEndian.AppendUint32(append(dst, byte(long)), uint32(n+4))
		dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	}
	for _, it := range items {
		dst = append(dst, it...)
	}
	return dst
}

// AppendList appends a list of encoded items as list0, list8 or list32.
func AppendList(dst []byte, items ...[]byte) []byte {
	if len(items) == 0 {
		return append(dst, byte(CodeList0))
	}
	return appendCompound(dst, CodeList8, CodeList32, len(items), items)
}

// AppendList32 appends a list in its list32 form.
func AppendList32(dst []byte, items ...[]byte) []byte {
	n := 4
	for _, it := range items {
		n += len(it)
	}
	dst = binary.BigEndian.AppendUint32(append(dst, byte(CodeList32)), uint32(n))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(items)))
	for _, it := range items {
		dst = append(dst, it...)
	}
	return dst
}

// AppendMap appends a map of alternating encoded keys and values as map8
// or map32.
func AppendMap(dst []byte, kv ...[]byte) []byte {
	return appendCompound(dst, CodeMap8, CodeMap32, len(kv), kv)
}

// AppendArray appends an array whose elements share constructor elem
// (possibly described: pass the descriptor's encoding, e.g. from
// AppendUlong, in desc) and whose elements' data (without constructor) are
// given.
func AppendArray(dst []byte, desc []byte, elem Code, elems ...[]byte) []byte {
	n := 1
	if desc != nil {
		n += 1 + len(desc)
	}
	for _, e := range elems {
		n += len(e)
	}
	if n+1 < 256 && len(elems) < 256 {
		dst = append(dst, byte(CodeArray8), byte(n+1), byte(len(elems)))
	} else {
		dst = binary.BigEndian.AppendUint32(append(dst, byte(CodeArray32)), uint32(n+4))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(elems)))
	}
	if desc != nil {
		dst = append(append(dst, byte(CodeDescribed)), desc...)
	}
	dst = append(dst, byte(elem))
	for _, e := range elems {
		dst = append(dst, e...)
	}
	return dst
}

// AppendSymbolArray appends an array of sym8 symbols (as peers send
// capabilities and locales).
func AppendSymbolArray(dst []byte, syms ...string) []byte {
	elems := make([][]byte, len(syms))
	for i, s := range syms {
		elems[i] = append([]byte{byte(len(s))}, s...)
	}
	return AppendArray(dst, nil, CodeSym8, elems...)
}

// AppendDescribed appends a value with a numeric descriptor (smallulong
// when it fits, else ulong) followed by the encoded value.
func AppendDescribed(dst []byte, code uint64, value []byte) []byte {
	dst = AppendUlong(append(dst, byte(CodeDescribed)), code)
	return append(dst, value...)
}

// AppendComposite appends a described list: a performative, a section such
// as header or properties, a delivery state, ... Trailing nulls are the
// caller's choice (§1.4 lets an encoder omit them).
func AppendComposite(dst []byte, code uint64, fields ...[]byte) []byte {
	return AppendDescribed(dst, code, AppendList(nil, fields...))
}

// Checksum algorithms for AppendChecksumFooter.
const (
	CRC32   = "crc-32"
	Adler32 = "adler-32"
)

// AppendChecksumFooter appends a footer carrying RabbitMQ's end-to-end
// checksum of bare: x-opt-crc-32 (IEEE) or x-opt-adler-32 as a uint.
func AppendChecksumFooter(dst []byte, alg string, bare []byte) []byte {
	var key string
	var sum uint32
	if alg == Adler32 {
		key, sum = AnnotationAdler32, adler32.Checksum(bare)
	} else {
		key, sum = AnnotationCRC32, crc32.ChecksumIEEE(bare)
	}
	return AppendDescribed(dst, DescriptorFooter, AppendMap(nil, AppendSymbol(nil, key), AppendUintFull(nil, sum)))
}
