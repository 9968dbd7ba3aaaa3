package pgwire

import (
	"strconv"
	"strings"
	"time"
)

// Streaming replication messages travel inside CopyData after
// START_REPLICATION answered with CopyBothResponse
// (protocol-replication.html, "START_REPLICATION").
const (
	ReplXLogData           = 'w' // backend
	ReplPrimaryKeepalive   = 'k' // backend
	ReplStandbyStatus      = 'r' // frontend
	ReplHotStandbyFeedback = 'h' // frontend
)

// pgEpoch is the PostgreSQL timestamp epoch: microseconds since 2000-01-01 UTC.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// PgTime converts a PostgreSQL timestamp (microseconds since 2000-01-01).
func PgTime(us int64) time.Time { return pgEpoch.Add(time.Duration(us) * time.Microsecond) }

// LSN is a WAL location, printed as PostgreSQL does ("16/B374D848").
type LSN uint64

func (l LSN) String() string {
	return strings.ToUpper(strconv.FormatUint(uint64(l)>>32, 16) + "/" + strconv.FormatUint(uint64(l)&0xffffffff, 16))
}

// XLogData carries WAL data ('w').
type XLogData struct {
	WALStart, WALEnd LSN
	SendTime         int64
	Data             []byte
}

// Decode decodes a CopyData payload starting with 'w'.
func (m *XLogData) Decode(p []byte) error {
	c := cursor{b: p, msg: "XLogData"}
	if c.byte1("kind") != ReplXLogData && c.err == nil {
		c.fail("kind is not 'w'")
	}
	m.WALStart = LSN(c.int64("WAL start"))
	m.WALEnd = LSN(c.int64("WAL end"))
	m.SendTime = c.int64("send time")
	m.Data = c.rest()
	return c.err
}

// PrimaryKeepalive is the primary's keepalive ('k').
type PrimaryKeepalive struct {
	WALEnd         LSN
	SendTime       int64
	ReplyRequested bool
}

// Decode decodes a CopyData payload starting with 'k'.
func (m *PrimaryKeepalive) Decode(p []byte) error {
	c := cursor{b: p, msg: "PrimaryKeepalive"}
	if c.byte1("kind") != ReplPrimaryKeepalive && c.err == nil {
		c.fail("kind is not 'k'")
	}
	m.WALEnd = LSN(c.int64("WAL end"))
	m.SendTime = c.int64("send time")
	m.ReplyRequested = c.byte1("reply requested") != 0
	return c.end()
}

// StandbyStatusUpdate is the standby's progress report ('r').
type StandbyStatusUpdate struct {
	Write, Flush, Apply LSN
	SendTime            int64
	ReplyRequested      bool
}

// Decode decodes a CopyData payload starting with 'r'.
func (m *StandbyStatusUpdate) Decode(p []byte) error {
	c := cursor{b: p, msg: "StandbyStatusUpdate"}
	if c.byte1("kind") != ReplStandbyStatus && c.err == nil {
		c.fail("kind is not 'r'")
	}
	m.Write = LSN(c.int64("write LSN"))
	m.Flush = LSN(c.int64("flush LSN"))
	m.Apply = LSN(c.int64("apply LSN"))
	m.SendTime = c.int64("send time")
	m.ReplyRequested = c.byte1("reply requested") != 0
	return c.end()
}

// HotStandbyFeedback is the standby's xmin report ('h').
type HotStandbyFeedback struct {
	SendTime                      int64
	Xmin, XminEpoch               uint32
	CatalogXmin, CatalogXminEpoch uint32
}

// Decode decodes a CopyData payload starting with 'h'.
func (m *HotStandbyFeedback) Decode(p []byte) error {
	c := cursor{b: p, msg: "HotStandbyFeedback"}
	if c.byte1("kind") != ReplHotStandbyFeedback && c.err == nil {
		c.fail("kind is not 'h'")
	}
	m.SendTime = c.int64("send time")
	m.Xmin = uint32(c.int32("xmin"))
	m.XminEpoch = uint32(c.int32("xmin epoch"))
	m.CatalogXmin = uint32(c.int32("catalog xmin"))
	m.CatalogXminEpoch = uint32(c.int32("catalog xmin epoch"))
	return c.end()
}

// replicationName names a replication CopyData payload, or "" when p is not
// one of the four kinds with a plausible size.
func replicationName(p []byte, fromFrontend bool) string {
	if len(p) == 0 {
		return ""
	}
	switch {
	case !fromFrontend && p[0] == ReplXLogData && len(p) >= 25:
		return "XLogData"
	case !fromFrontend && p[0] == ReplPrimaryKeepalive && len(p) == 18:
		return "PrimaryKeepalive"
	case fromFrontend && p[0] == ReplStandbyStatus && len(p) == 34:
		return "StandbyStatusUpdate"
	case fromFrontend && p[0] == ReplHotStandbyFeedback && len(p) == 25:
		return "HotStandbyFeedback"
	}
	return ""
}
