package capture

import (
	"errors"
	"net/netip"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// Flow is one TCP connection.
type Flow struct {
	// ID numbers connections from 1, in order of each connection's first
	// packet in the input.
	ID int
	// A is the client when SYN is true; otherwise A sent the first packet
	// seen. B is the other end.
	A, B netip.AddrPort
	// SYN reports that the handshake was seen (a SYN, or a SYN-ACK whose
	// receiver is then the client), so A is known to be the client.
	SYN bool
	// First is the time of the connection's first packet.
	First time.Time
	// Account, when not nil, is the connection's account in the memory
	// budget the source charges (see [Budgeted]): the pipeline and the
	// connection's decoder charge it too. Sources without a budget leave
	// it nil.
	Account *decode.Account
}

// Handler receives reassembled, in-order bytes per flow and direction.
// Calls for one source come from one goroutine, in capture order.
type Handler interface {
	// Data delivers the next in-order bytes from A (fromA) or from B.
	// data is only valid during the call, unless the source says its
	// bytes are stable (see [Input.Stable]): they are then valid and
	// unchanged as long as the source is open. Either way, nothing may
	// write to them. t is the capture time of the packet that made the
	// bytes available in order.
	Data(f *Flow, fromA bool, data []byte, t time.Time)
	// Gap reports that n bytes (n < 0: an unknown number) were lost in that
	// direction: a segment missing from the capture, or cut by the snap
	// length. It is also called once with n = -1 before the first Data of a
	// direction whose start was not captured (no SYN, mid-stream).
	Gap(f *Flow, fromA bool, n int, t time.Time)
	// Close reports that the flow ended: both FINs were delivered, a RST was
	// seen, the connection was evicted, or the input ended.
	Close(f *Flow, t time.Time)
}

// ErrNotCapture is returned, wrapped with the input's name, for input that
// is neither pcap nor pcapng.
var ErrNotCapture = errors.New("not a pcap or pcapng file")

// Defaults for the zero values of [Options].
const (
	DefaultMaxFlows           = 1 << 16
	DefaultMaxBufferedPerFlow = 4 << 20
	DefaultMaxBufferedTotal   = 64 << 20
)

// Options tune a source and its reassembly. A nil *Options means all
// defaults.
type Options struct {
	// MaxFlows bounds the connections tracked at once (default
	// DefaultMaxFlows). When a new connection would exceed it, the sixteenth
	// of the tracked connections idle the longest are flushed and closed,
	// and a warning is recorded.
	MaxFlows int
	// MaxBufferedPerFlow bounds the out-of-order bytes held for one
	// connection (default DefaultMaxBufferedPerFlow). When a segment would
	// exceed it, the hole before the earliest buffered segment is declared
	// lost (a Gap) so buffered bytes can be delivered.
	MaxBufferedPerFlow int
	// MaxBufferedTotal bounds the out-of-order bytes held for all
	// connections together (default DefaultMaxBufferedTotal); hitting it
	// has the same effect as MaxBufferedPerFlow on the connection at hand.
	MaxBufferedTotal int
	// IdleTimeout, when positive, closes connections that saw no packet
	// for that long, in capture time (checked every quarter of it). Files
	// need none; live captures use it so that connections whose end was not
	// seen are closed eventually.
	IdleTimeout time.Duration
	// Progress, when set, is called now and then with the bytes of input
	// read so far and the input's size (-1 when unknown), and once at the
	// end.
	Progress func(read, total int64)
	// Budget, when set, is the memory budget (--max-memory) the source
	// charges its held state to: out-of-order segments, incomplete IPv4
	// datagrams, the pcapng interface table. Unset, it is the handler's
	// when the handler is [Budgeted]. It must be the budget of a handler
	// called on the source's goroutine.
	Budget *decode.Budget
	// Tap, when set, sees every packet record as read, before decoding
	// (for writing what a live capture saw with -w). data is only valid
	// during the call.
	Tap func(p *Packet)
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.MaxFlows <= 0 {
		v.MaxFlows = DefaultMaxFlows
	}
	if v.MaxBufferedPerFlow <= 0 {
		v.MaxBufferedPerFlow = DefaultMaxBufferedPerFlow
	}
	if v.MaxBufferedTotal <= 0 {
		v.MaxBufferedTotal = DefaultMaxBufferedTotal
	}
	return v
}

// maxWarnings bounds Stats.Warnings; further warnings are only counted.
const maxWarnings = 100

// Stats counts what a source read and what reassembly made of it.
type Stats struct {
	Packets   int64 // packet records read
	Bytes     int64 // captured bytes in those records
	TCP       int64 // TCP segments decoded
	Skipped   int64 // records that are not TCP over IP, or too damaged to decode
	Fragments int64 // IP fragments (IPv4 ones are reassembled; IPv6 ones become gaps)
	Flows     int   // connections seen
	Gaps      int64 // gaps reported, not counting unknown starts
	GapBytes  int64 // bytes known to be lost (gaps of unknown length add nothing)
	Evicted   int64 // connections closed early to respect MaxFlows
	// BudgetDrops counts held state the memory budget took back or had
	// no room for: a connection's out-of-order segments, an out-of-order
	// segment not held, the pending IPv4 fragments.
	BudgetDrops int64
	// Dropped counts packets the capturing system lost before they were
	// read (its buffer was full): a live capture's kernel socket drops,
	// or what a pcapng file's interface statistics blocks report
	// (isb_ifdrop plus isb_osdrop, as dumpcap writes them at its end).
	// Their bytes are missing from the connections they belonged to.
	Dropped int64
	// Truncated reports that the input ended inside a record or block, or
	// became unreadable part way; what came before was decoded.
	Truncated bool
	// Warnings says, one line each, what went wrong but did not stop the
	// reading: a cut-short file, a limit reached. At most 100 are kept.
	Warnings []string
	// MoreWarnings counts warnings beyond those kept.
	MoreWarnings int
}

func (s *Stats) warn(msg string) {
	if len(s.Warnings) >= maxWarnings {
		s.MoreWarnings++
		return
	}
	s.Warnings = append(s.Warnings, msg)
}
