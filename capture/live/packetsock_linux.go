//go:build linux

package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// packetSocket is a raw AF_PACKET socket bound to one interface: each read
// returns one whole link-layer frame as the interface saw it, cut to the
// snap length. Its descriptor is non-blocking and waits in the Go
// netpoller, so Close, from any goroutine, ends a read that is waiting.
type packetSocket struct {
	file   *os.File
	conn   syscall.RawConn
	closed atomic.Bool
	// drops is the frames the kernel dropped because the socket's
	// buffer was full, as of the last collect.
	drops atomic.Int64

	buf []byte // the last frame read; len(buf) is the snap length
	// head is buf with vlanTagLen bytes before it, where a VLAN tag the
	// kernel took out of the frame is put back.
	head []byte
	oob  []byte // control messages: auxiliary data and the time stamp
	iov  unix.Iovec
	msg  unix.Msghdr

	// recv is (*packetSocket).recvmsg bound once, so that a read
	// allocates nothing; it leaves its results in n and errno.
	recv  func(fd uintptr) bool
	n     int
	errno unix.Errno
}

// Sizes of the control messages asked for, and of a control message
// header (the offset of its data).
var (
	cmsgHdrLen = unix.CmsgLen(0)
	auxSize    = int(unsafe.Sizeof(unix.TpacketAuxdata{}))
	tsSize     = int(unsafe.Sizeof(unix.Timespec{}))
	tvSize     = int(unsafe.Sizeof(unix.Timeval{}))
)

// htons returns v in network byte order, as sockaddr_ll and socket(2)
// take a protocol number.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// openPacketSocket opens a packet socket on the interface of index
// ifindex that keeps snaplen bytes of each frame and passes only the
// frames prog accepts (nil: all of them).
//
// The socket is opened for no protocol, so it queues nothing until it is
// bound; the filter is attached before that, so no frame of another
// interface, nor one the filter refuses, is ever read.
//
// buffer is the receive buffer in bytes (0: the system's default).
// SO_RCVBUFFORCE passes the system's maximum (net.core.rmem_max), which
// root may; without it the request is capped there.
func openPacketSocket(ifindex, snaplen, buffer int, prog []bpf.RawInstruction) (*packetSocket, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("opening a packet socket: %w (it takes root or CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("opening a packet socket: %w", err)
	}
	fail := func(err error) (*packetSocket, error) {
		unix.Close(fd)
		return nil, err
	}
	oobLen := 0
	// The auxiliary data tells a frame's length before the filter cut it
	// to the snap length. Linux has had it since 2.6.21; without it the
	// length is the one after the cut.
	if unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1) == nil {
		oobLen += unix.CmsgSpace(auxSize)
	}
	// The kernel's receive time in nanoseconds, else in microseconds, else
	// read's own time.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil {
		oobLen += unix.CmsgSpace(tsSize)
	} else if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMP, 1) == nil {
		oobLen += unix.CmsgSpace(tvSize)
	}
	if buffer > 0 {
		// The kernel doubles what it is asked (for its bookkeeping), so
		// half is asked.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, max(buffer/2, 1)); err != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, max(buffer/2, 1)); err != nil {
				return fail(fmt.Errorf("setting the receive buffer to %d bytes: %w", buffer, err))
			}
		}
	}
	if len(prog) > 0 {
		f := make([]unix.SockFilter, len(prog))
		for i, ins := range prog {
			f[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		}
		if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}); err != nil {
			return fail(fmt.Errorf("setting the filter: %w", err))
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}); err != nil {
		return fail(fmt.Errorf("binding a packet socket to the interface: %w", err))
	}
	head := make([]byte, vlanTagLen+max(snaplen, 1))
	s := &packetSocket{file: os.NewFile(uintptr(fd), "packet socket"), buf: head[vlanTagLen:], head: head}
	if s.conn, err = s.file.SyscallConn(); err != nil {
		s.file.Close()
		return nil, err
	}
	// Room for one more message than asked for, in uint64s so that the
	// headers in it are aligned.
	words := make([]uint64, (oobLen+unix.CmsgSpace(tsSize)+7)/8)
	s.oob = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	s.iov.Base = &s.buf[0]
	s.iov.SetLen(len(s.buf))
	s.msg.Iov = &s.iov
	s.msg.SetIovlen(1)
	s.msg.Control = &s.oob[0]
	s.recv = s.recvmsg
	return s, nil
}

// recvmsg is a syscall.RawConn Read function: it reads one frame into buf
// and its control messages into oob, and says false, to wait, when none
// is queued. With MSG_TRUNC it returns the frame's length (after the
// filter's cut), not the bytes copied.
func (s *packetSocket) recvmsg(fd uintptr) bool {
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.msg)), unix.MSG_TRUNC|unix.MSG_DONTWAIT)
	if e == unix.EAGAIN || e == unix.EWOULDBLOCK {
		return false
	}
	s.n, s.errno = int(n), e
	return true
}

// read waits for the next frame and returns its captured bytes, valid
// until the next read, its length on the wire and its capture time. Once
// the socket is closed it returns os.ErrClosed.
func (s *packetSocket) read() (data []byte, length int, t time.Time, err error) {
	for {
		s.msg.SetControllen(len(s.oob))
		s.msg.Flags = 0
		if err := s.conn.Read(s.recv); err != nil {
			if s.closed.Load() {
				// The poller's "use of closed file", which is not
				// os.ErrClosed.
				err = os.ErrClosed
			}
			return nil, 0, time.Time{}, err
		}
		if s.errno == unix.EINTR {
			continue
		}
		if s.errno != 0 {
			if s.closed.Load() {
				return nil, 0, time.Time{}, os.ErrClosed
			}
			return nil, 0, time.Time{}, s.errno
		}
		break
	}
	length = s.n
	data = s.buf[:min(s.n, len(s.buf))]
	var vlan *unix.TpacketAuxdata
	oob := s.oob[:s.msg.Controllen]
	if s.msg.Flags&unix.MSG_CTRUNC != 0 {
		oob = nil
	}
	for len(oob) >= cmsgHdrLen {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < cmsgHdrLen || l > len(oob) {
			break
		}
		body := oob[cmsgHdrLen:l]
		switch {
		case h.Level == unix.SOL_PACKET && h.Type == unix.PACKET_AUXDATA && len(body) >= auxSize:
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&body[0]))
			length = max(length, int(aux.Len))
			// Kernels before 3.0 say nothing of validity: a non-zero TCI
			// is a tag there (libpcap's rule).
			if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 || aux.Vlan_tci != 0 {
				vlan = aux
			}
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(body) >= tsSize:
			ts := (*unix.Timespec)(unsafe.Pointer(&body[0]))
			t = time.Unix(int64(ts.Sec), int64(ts.Nsec))
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMP && len(body) >= tvSize:
			tv := (*unix.Timeval)(unsafe.Pointer(&body[0]))
			t = time.Unix(int64(tv.Sec), int64(tv.Usec)*1000)
		}
		step := unix.CmsgSpace(l - cmsgHdrLen)
		if step >= len(oob) {
			break
		}
		oob = oob[step:]
	}
	if vlan != nil && len(data) >= 2*6 {
		data, length = s.restoreVLAN(data, vlan), length+vlanTagLen
	}
	if t.IsZero() {
		t = time.Now()
	}
	return data, length, t, nil
}

// vlanTagLen is the size of an 802.1Q tag: its TPID and its TCI.
const vlanTagLen = 4

// restoreVLAN puts back, after the two MAC addresses, the VLAN tag the
// kernel (or the NIC) took out of the frame in data and reported in the
// auxiliary data, as libpcap does: the frame is then the one on the wire.
// data is s.buf's start; the bytes move into the head room before it.
func (s *packetSocket) restoreVLAN(data []byte, aux *unix.TpacketAuxdata) []byte {
	tpid := uint16(0x8100)
	if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && aux.Vlan_tpid != 0 {
		tpid = aux.Vlan_tpid
	}
	out := s.head[:vlanTagLen+len(data)]
	copy(out, data[:12])
	out[12], out[13] = byte(tpid>>8), byte(tpid)
	out[14], out[15] = byte(aux.Vlan_tci>>8), byte(aux.Vlan_tci)
	return out
}

// Close closes the socket; a read waiting in another goroutine returns
// os.ErrClosed. Closing again does nothing.
func (s *packetSocket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.collect()
	return s.file.Close()
}

// collect adds what the kernel counted as dropped since the last call
// (PACKET_STATISTICS, which resets the counters it returns) to drops.
func (s *packetSocket) collect() {
	_ = s.conn.Control(func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			s.drops.Add(int64(st.Drops))
		}
	})
}

// dropped returns the frames the kernel dropped, up to the close (or the
// last collect).
func (s *packetSocket) dropped() int64 { return s.drops.Load() }
