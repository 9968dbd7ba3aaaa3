package filter

import (
	"net/netip"
	"strings"

	"github.com/wiretap-dev/wiretap/decode"
)

// vid identifies a virtual field: one read from the Unit (and its Conn)
// without dissecting the unit. Zero means "not virtual".
type vid uint8

const (
	vNone vid = iota
	vFrameNumber
	vFrameLen
	vFrameOffset
	vFrameTime
	vFrameTimeEpoch
	vFrameDir
	vConn
	vTCPStream
	vTCPPort
	vTCPSrcPort
	vTCPDstPort
	vIPAddr
	vIPSrc
	vIPDst
	vProto
	vType
	vSummary
	vError
	vWarning
	vSecret
	vParent
	vAMQP
	vAMQPChannel
	vAMQPMethod
	vAMQPPerformative
	vAMQPType
	vAMQPChecksum
	vAMQPChecksumAlgorithm
	vAMQPMessageID
	vPgSQL
	vPgSQLType
)

// virtualFields documents every virtual field; init registers them with
// [decode.RegisterFieldNamesFunc] so completion and help list them.
var virtualFields = [...]struct {
	id    vid
	proto decode.Proto
	name  string
	doc   string
}{
	{vFrameNumber, decode.ProtoUnknown, "frame.number", "unit number, from 1, in output order"},
	{vFrameLen, decode.ProtoUnknown, "frame.len", "bytes of the unit on the wire, headers included"},
	{vFrameOffset, decode.ProtoUnknown, "frame.offset", "offset of the unit's first byte in its direction's stream"},
	{vFrameTime, decode.ProtoUnknown, "frame.time", `capture time; compare with "2006-01-02T15:04:05Z" (UTC unless a zone is given)`},
	{vFrameTimeEpoch, decode.ProtoUnknown, "frame.time_epoch", "capture time in seconds since 1970-01-01 UTC"},
	{vFrameDir, decode.ProtoUnknown, "frame.dir", `direction: "F" client to server, "B" server to client`},
	{vConn, decode.ProtoUnknown, "conn", "connection number, from 1, as --conn counts"},
	{vTCPStream, decode.ProtoUnknown, "tcp.stream", "connection number from 0, as tshark counts (conn - 1)"},
	{vTCPPort, decode.ProtoUnknown, "tcp.port", "client or server port"},
	{vTCPSrcPort, decode.ProtoUnknown, "tcp.srcport", "port of the unit's sender"},
	{vTCPDstPort, decode.ProtoUnknown, "tcp.dstport", "port of the unit's receiver"},
	{vIPAddr, decode.ProtoUnknown, "ip.addr", "client or server address (IPv4 or IPv6); == accepts a CIDR prefix"},
	{vIPSrc, decode.ProtoUnknown, "ip.src", "address of the unit's sender"},
	{vIPDst, decode.ProtoUnknown, "ip.dst", "address of the unit's receiver"},
	{vProto, decode.ProtoUnknown, "proto", `protocol: "amqp0-9-1", "amqp1.0" or "pgsql"`},
	{vType, decode.ProtoUnknown, "type", `unit type ("basic.publish", "transfer", "DataRow")`},
	{vSummary, decode.ProtoUnknown, "summary", "the one-line summary"},
	{vError, decode.ProtoUnknown, "error", "present when the unit could not be decoded: why"},
	{vWarning, decode.ProtoUnknown, "warning", "one occurrence per warning on the unit"},
	{vSecret, decode.ProtoUnknown, "secret", "present (true) when the unit carried credentials"},
	{vParent, decode.ProtoUnknown, "parent", "present for nested units: the number of the unit that carried it"},
	{vAMQP, decode.ProtoUnknown, "amqp", "present for AMQP 0-9-1 and 1.0 units: their bytes"},
	{vAMQPChannel, decode.ProtoUnknown, "amqp.channel", "AMQP channel of the frame"},
	{vAMQPMethod, decode.ProtoAMQP091, "amqp.method", `AMQP 0-9-1 method frames: class.method ("basic.publish")`},
	{vAMQPPerformative, decode.ProtoAMQP10, "amqp.performative", `AMQP 1.0 frames: the performative ("transfer")`},
	{vAMQPType, decode.ProtoUnknown, "amqp.type", "any AMQP unit's type (methods, content-header, performatives, sasl.*)"},
	{vAMQPChecksum, decode.ProtoAMQP10, "amqp.checksum", `message checksum verdict: "ok", "mismatch" or "absent"`},
	{vAMQPChecksumAlgorithm, decode.ProtoAMQP10, "amqp.checksum.algorithm", `message checksum algorithm: "crc-32" or "adler-32"`},
	{vAMQPMessageID, decode.ProtoAMQP10, "amqp.message_id", "properties.message-id of the message a transfer completes"},
	{vPgSQL, decode.ProtoPgSQL, "pgsql", "present for PostgreSQL units: their bytes"},
	{vPgSQLType, decode.ProtoPgSQL, "pgsql.type", `PostgreSQL message name ("Query", "DataRow")`},
}

var virtualByName = func() map[string]vid {
	m := make(map[string]vid, len(virtualFields))
	for _, v := range virtualFields {
		m[v.name] = v.id
	}
	return m
}()

func init() { decode.RegisterFieldNamesFunc(virtualFieldNames) }

func virtualFieldNames() []decode.FieldName {
	fs := make([]decode.FieldName, len(virtualFields))
	for i, v := range virtualFields {
		fs[i] = decode.FieldName{Name: v.name, Proto: v.proto, Doc: v.doc}
	}
	return fs
}

func isAMQP(p decode.Proto) bool { return p == decode.ProtoAMQP091 || p == decode.ProtoAMQP10 }

// virtualValue stores the i-th occurrence of virtual field id in v and
// reports whether there is one. Most virtual fields occur at most once;
// warning, tcp.port and ip.addr can occur several times.
func virtualValue(u *decode.Unit, id vid, i int, v *value) bool {
	if i > 0 {
		switch id {
		case vWarning:
			if i < len(u.Warnings()) {
				v.setString(u.Warnings()[i])
				return true
			}
		case vTCPPort, vIPAddr:
			if i == 1 && u.Conn != nil {
				return endpoint(u.Conn.Server, id, v)
			}
		}
		return false
	}
	if intVirtual(id) {
		x, ok := intValue(u, id)
		if ok {
			v.setInt(x)
		}
		return ok
	}
	if stringVirtual(id) {
		x, ok := stringValue(u, id)
		if ok {
			v.setString(x)
		}
		return ok
	}
	switch id {
	case vFrameTime:
		t := u.Time()
		if t.IsZero() {
			return false
		}
		v.kind, v.t = kTime, t
	case vFrameTimeEpoch:
		ns := u.UnixNano()
		if ns == decode.NoTime {
			return false
		}
		v.kind, v.f = kFloat, float64(ns)/1e9
	case vTCPPort, vIPAddr:
		if u.Conn == nil {
			return false
		}
		return endpoint(u.Conn.Client, id, v)
	case vTCPSrcPort, vIPSrc, vTCPDstPort, vIPDst:
		if u.Conn == nil {
			return false
		}
		src, dst := u.Conn.Client, u.Conn.Server
		if u.Dir == decode.DirB {
			src, dst = dst, src
		}
		if id == vTCPDstPort || id == vIPDst {
			src = dst
		}
		return endpoint(src, id, v)
	case vSummary:
		return v.setNonEmpty(u.Summary)
	case vError:
		return v.setNonEmpty(u.Err())
	case vWarning:
		if len(u.Warnings()) == 0 {
			return false
		}
		v.setString(u.Warnings()[0])
	case vSecret:
		if !u.Secret {
			return false
		}
		v.kind, v.i = kBool, 1
	case vParent:
		if u.Parent == nil {
			return false
		}
		v.setInt(int64(u.Parent.N))
	case vAMQP, vPgSQL:
		if id == vAMQP && !isAMQP(u.Proto) || id == vPgSQL && u.Proto != decode.ProtoPgSQL {
			return false
		}
		v.kind, v.b = kBytes, u.Raw
	case vAMQPChecksum:
		if u.Checksum() == nil {
			return false
		}
		v.setString(u.Checksum().Status.String())
	case vAMQPChecksumAlgorithm:
		if u.Checksum() == nil {
			return false
		}
		return v.setNonEmpty(u.Checksum().Algorithm)
	case vAMQPMessageID:
		return v.setNonEmpty(u.MessageID())
	default:
		return false
	}
	return true
}

// intVirtual reports whether virtual field id occurs at most once, as an
// integer (intValue gives it).
func intVirtual(id vid) bool {
	switch id {
	case vFrameNumber, vFrameLen, vFrameOffset, vConn, vTCPStream, vAMQPChannel:
		return true
	}
	return false
}

// intValue returns integer virtual field id of u, ok false when u has
// none.
func intValue(u *decode.Unit, id vid) (x int64, ok bool) {
	switch id {
	case vFrameNumber:
		return int64(u.N), true
	case vFrameLen:
		return int64(u.Len), true
	case vFrameOffset:
		return u.Offset, true
	case vConn, vTCPStream:
		if u.Conn == nil {
			return 0, false
		}
		x = int64(u.Conn.ID)
		if id == vTCPStream {
			x--
		}
		return x, true
	case vAMQPChannel:
		if !u.HasChannel || !isAMQP(u.Proto) {
			return 0, false
		}
		return int64(u.Channel), true
	}
	return 0, false
}

// stringVirtual reports whether virtual field id occurs at most once, as
// a string read from the unit header (stringValue gives it).
func stringVirtual(id vid) bool {
	switch id {
	case vFrameDir, vProto, vType, vAMQPMethod, vAMQPPerformative, vAMQPType, vPgSQLType:
		return true
	}
	return false
}

// stringValue returns string virtual field id of u, ok false when u has
// none.
func stringValue(u *decode.Unit, id vid) (s string, ok bool) {
	switch id {
	case vFrameDir:
		return u.Dir.String(), true
	case vProto:
		return u.Proto.String(), true
	case vType:
		return u.Type, u.Type != ""
	case vAMQPMethod:
		// Only method frames have a method, as in Wireshark; content
		// headers, bodies and heartbeats are reachable with amqp.type.
		if u.Proto != decode.ProtoAMQP091 || strings.IndexByte(u.Type, '.') < 0 {
			return "", false
		}
		return u.Type, true
	case vAMQPPerformative:
		return u.Type, u.Proto == decode.ProtoAMQP10 && u.Type != ""
	case vAMQPType:
		return u.Type, isAMQP(u.Proto) && u.Type != ""
	case vPgSQLType:
		return u.Type, u.Proto == decode.ProtoPgSQL && u.Type != ""
	}
	return "", false
}

// shallowVirtual reports whether virtual field id is read from a unit's
// plain fields alone (see [Filter.Shallow]): from what virtualValue,
// intValue and stringValue read, N, Len, Offset, the time, Conn (its ID
// and endpoints), Channel and HasChannel, Dir, Proto, Type, Secret and
// Parent's N. When tested, amqp and pgsql give the unit's bytes; present
// alone, they read only Proto (deep says which).
func shallowVirtual(id vid) bool {
	switch id {
	case vFrameNumber, vFrameLen, vFrameOffset, vFrameTime, vFrameTimeEpoch, vFrameDir,
		vConn, vTCPStream, vTCPPort, vTCPSrcPort, vTCPDstPort, vIPAddr, vIPSrc, vIPDst,
		vProto, vType, vSecret, vParent, vAMQP, vAMQPChannel, vAMQPMethod,
		vAMQPPerformative, vAMQPType, vPgSQL, vPgSQLType:
		return true
	}
	return false // vSummary, vError, vWarning, vAMQPChecksum(Algorithm), vAMQPMessageID: the notes
}

// deep reports whether expression n reads anything of a unit beyond its
// plain fields (the opposite of [Filter.Shallow]).
func deep(n *node) bool {
	switch n.op {
	case nAnd, nOr, nNot:
		for _, k := range n.kids {
			if deep(k) {
				return true
			}
		}
		return false
	case nTest:
		if n.virt == vAMQP || n.virt == vPgSQL {
			return true // the unit's bytes
		}
	}
	return n.virt == vNone || !shallowVirtual(n.virt)
}

// endpoint stores ap's port (tcp.*) or address (ip.*) in v.
func endpoint(ap netip.AddrPort, id vid, v *value) bool {
	if !ap.IsValid() {
		return false
	}
	switch id {
	case vTCPPort, vTCPSrcPort, vTCPDstPort:
		v.setInt(int64(ap.Port()))
	default:
		v.kind, v.a = kAddr, ap.Addr().Unmap()
	}
	return true
}
