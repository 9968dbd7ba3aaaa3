package decode

import (
	"math"
	"net/netip"
	"time"
)

// Proto names a wire protocol wiretap decodes.
type Proto uint8

const (
	ProtoUnknown Proto = iota
	ProtoAMQP091
	ProtoAMQP10
	ProtoPgSQL
)

var protoNames = [...]string{"unknown", "amqp0-9-1", "amqp1.0", "pgsql"}

// String returns the protocol's name as INTERFACES.md spells it
// ("amqp0-9-1", "amqp1.0", "pgsql").
func (p Proto) String() string {
	if int(p) < len(protoNames) {
		return protoNames[p]
	}
	return "unknown"
}

// ParseProto accepts the names String returns, plus a few common aliases.
func ParseProto(s string) (Proto, bool) {
	switch s {
	case "amqp0-9-1", "amqp091", "amqp", "amqp0.9.1":
		return ProtoAMQP091, true
	case "amqp1.0", "amqp10", "amqp1-0":
		return ProtoAMQP10, true
	case "pgsql", "postgres", "postgresql", "pg":
		return ProtoPgSQL, true
	}
	return ProtoUnknown, false
}

// Dir is the direction of a unit within its connection.
type Dir uint8

const (
	// DirF is client to server ("F" for frontend, as libpq's trace says).
	DirF Dir = 0
	// DirB is server to client ("B" for backend).
	DirB Dir = 1
)

// String returns "F" or "B".
func (d Dir) String() string {
	if d == DirB {
		return "B"
	}
	return "F"
}

// Other returns the opposite direction.
func (d Dir) Other() Dir { return d ^ 1 }

// Conn describes one TCP connection as the pipeline sees it.
type Conn struct {
	// ID numbers connections from 1 in order of their first packet.
	ID     int
	Client netip.AddrPort
	Server netip.AddrPort
	Proto  Proto
	// First is the time of the connection's first packet.
	First time.Time
	// Units and Bytes count what was decoded per direction (index by Dir).
	Units [2]int
	Bytes [2]int64
	// Warnings and Errors count units carrying them.
	Warnings int
	Errors   int
	// Checksums counts AMQP 1.0 checksum verdicts by status.
	Checksums [3]int
	// Notes holds per-connection reports (compression ratios, TLS, ...),
	// printed at the end of a headless run and shown in the TUI.
	Notes []string
}

// ChecksumStatus is the verdict on an AMQP 1.0 end-to-end checksum.
type ChecksumStatus uint8

const (
	ChecksumOK ChecksumStatus = iota
	ChecksumMismatch
	ChecksumAbsent
)

var checksumNames = [...]string{"ok", "mismatch", "absent"}

func (s ChecksumStatus) String() string {
	if int(s) < len(checksumNames) {
		return checksumNames[s]
	}
	return "absent"
}

// Checksum is the end-to-end checksum verdict of the message a transfer
// completes.
type Checksum struct {
	// Algorithm is "crc-32" or "adler-32"; empty when Status is absent.
	Algorithm string
	Status    ChecksumStatus
	Expected  uint32
	Actual    uint32
}

// Unit is one protocol frame or message on the wire (or nested inside
// another unit, such as a message inside PostgreSQL's CompressedMessages).
//
// Fields are ordered to avoid padding; the annotations most units never
// carry (message-id, checksum, warnings, error, protocol extension) live in
// a separately allocated struct reached through accessor methods, which keeps
// a capture of millions of units small.
type Unit struct {
	// N is assigned by the pipeline in output order, from 1.
	N    int
	Conn *Conn
	// ns is the capture time of the packet that completed the unit, in
	// nanoseconds since the Unix epoch; meaningful only when hasTime is set
	// (see [Unit.Time]). Eight bytes instead of time.Time's 24.
	ns int64
	// Offset is the position of the unit's first byte in its direction's
	// stream (for nested units: in the decompressed stream).
	Offset int64
	// Len is the unit's length on the wire, headers included.
	Len int
	// Raw holds the unit's exact bytes. The unit owns it.
	Raw []byte
	// Type is the unit's type as INTERFACES.md names it ("basic.publish",
	// "transfer", "DataRow").
	Type    string
	Summary string
	// Parent is the container that carried this unit, if any.
	Parent *Unit

	// Dissect builds the unit's field tree on demand. Nil means the unit has
	// no fields beyond its header.
	Dissect func(u *Unit) []*Field

	// Channel is the AMQP channel; HasChannel says whether it applies.
	Channel    uint16
	Dir        Dir
	Proto      Proto
	HasChannel bool
	// Secret marks units that carried credentials (already redacted in Raw
	// unless the decoder was told to show secrets).
	Secret bool
	// hasTime says whether ns holds a time, so that the zero Unit reports the
	// zero Time. It sits in the small fields' padding and costs nothing.
	hasTime bool
	// slab is the number of the Arena slab the unit lies in, zero for a
	// unit allocated otherwise. Also in the padding.
	slab uint8

	// notes holds the rarely set annotations; nil for most units.
	notes *unitNotes
}

// NoTime is what [Unit.UnixNano] returns for a unit whose time is unknown.
const NoTime = math.MinInt64

// Time returns the capture time of the packet that completed the unit (the
// zero Time when unknown). Like the times capture sources give, it is in the
// Local location.
func (u *Unit) Time() time.Time {
	if !u.hasTime {
		return time.Time{}
	}
	return time.Unix(0, u.ns)
}

// SetTime sets the unit's capture time; the zero Time means unknown. The
// unit keeps nanoseconds since the Unix epoch, so t must lie within the
// years 1678 to 2262 (see [time.Time.UnixNano]); its Location is not kept.
func (u *Unit) SetTime(t time.Time) {
	if t.IsZero() {
		u.ns, u.hasTime = 0, false
		return
	}
	u.ns, u.hasTime = t.UnixNano(), true
}

// UnixNano returns the unit's capture time in nanoseconds since the Unix
// epoch, or [NoTime] when the time is unknown. It is [Unit.Time] without
// building a time.Time, for hot code such as sorting and filtering.
func (u *Unit) UnixNano() int64 {
	if !u.hasTime {
		return NoTime
	}
	return u.ns
}

// unitNotes holds the annotations few units carry, so that Unit stays small.
type unitNotes struct {
	messageID string
	checksum  *Checksum
	warnings  []string
	err       string
	ext       any
}

// note returns the unit's notes, allocating them on first use.
func (u *Unit) note() *unitNotes {
	if u.notes == nil {
		u.notes = new(unitNotes)
	}
	return u.notes
}

// Err says why this unit, or the stream from here, could not be decoded;
// empty when it decoded.
func (u *Unit) Err() string {
	if u.notes == nil {
		return ""
	}
	return u.notes.err
}

// SetErr sets the unit's decode error (see [Unit.Err]).
func (u *Unit) SetErr(msg string) {
	if msg == "" && u.notes == nil {
		return
	}
	u.note().err = msg
}

// Warnings returns the unit's warnings, in the order they were raised.
func (u *Unit) Warnings() []string {
	if u.notes == nil {
		return nil
	}
	return u.notes.warnings
}

// SetWarnings replaces the unit's warnings with ws.
func (u *Unit) SetWarnings(ws []string) {
	if ws == nil && u.notes == nil {
		return
	}
	u.note().warnings = ws
}

// Warn appends a warning to the unit.
func (u *Unit) Warn(msg string) {
	n := u.note()
	n.warnings = append(n.warnings, msg)
}

// MessageID is AMQP 1.0's properties.message-id of a completed message;
// empty otherwise.
func (u *Unit) MessageID() string {
	if u.notes == nil {
		return ""
	}
	return u.notes.messageID
}

// SetMessageID sets the unit's message-id (see [Unit.MessageID]).
func (u *Unit) SetMessageID(id string) {
	if id == "" && u.notes == nil {
		return
	}
	u.note().messageID = id
}

// Checksum is the end-to-end checksum verdict of the AMQP 1.0 message the
// unit completes; nil when none applies.
func (u *Unit) Checksum() *Checksum {
	if u.notes == nil {
		return nil
	}
	return u.notes.checksum
}

// SetChecksum sets the unit's checksum verdict (see [Unit.Checksum]).
func (u *Unit) SetChecksum(c *Checksum) {
	if c == nil && u.notes == nil {
		return
	}
	u.note().checksum = c
}

// Ext returns protocol-specific decoded state that the protocol package
// reads back through its own accessors (amqp10.MessageOf); other packages
// treat it as opaque.
func (u *Unit) Ext() any {
	if u.notes == nil {
		return nil
	}
	return u.notes.ext
}

// SetExt sets the unit's protocol-specific state (see [Unit.Ext]).
func (u *Unit) SetExt(x any) {
	if x == nil && u.notes == nil {
		return
	}
	u.note().ext = x
}

// Fields returns the unit's field tree, decoding it now. Callers that look
// repeatedly should keep the result.
func (u *Unit) Fields() []*Field {
	if u.Dissect == nil {
		return nil
	}
	return u.Dissect(u)
}

// NotesSlab hands out units' notes from slabs (see [Carve]), for a
// decoder that annotates most of its units (SetExt, SetMessageID, ...):
// one allocation then serves many units' notes.
type NotesSlab struct{ slab []unitNotes }

// Give gives u fresh notes carved from slabs of n, unless it has some:
// the setters then fill them in instead of allocating them.
func (s *NotesSlab) Give(u *Unit, n int) {
	if u.notes == nil {
		u.notes = Carve(&s.slab, n)
	}
}

// Carve returns the next zero T of *slab, refilled with n fresh ones when
// it is used up: what decoders make by the million (units, messages,
// verdicts) is allocated a slab at a time rather than one by one. A T
// carved stays valid as long as anything points into its slab.
func Carve[T any](slab *[]T, n int) *T {
	if len(*slab) == 0 {
		*slab = make([]T, n)
	}
	t := &(*slab)[0]
	*slab = (*slab)[1:]
	return t
}
