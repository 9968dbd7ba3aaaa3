package main

import (
	"net"
	"sync"
	"time"
)

// coalescingConn is the generator's transport under go-amqp: go-amqp
// writes every frame with its own Write (one system call each, a
// transfer's or a disposition's worth of bytes); here a Write only appends
// to a buffer, and one goroutine writes whatever has gathered since its
// last write, so a burst of frames costs one system call. Both brokers
// are measured through it alike. The buffer is bounded: a Write waits
// while maxPending bytes are still unwritten. Write errors are reported by
// the Writes that follow.
type coalescingConn struct {
	net.Conn
	mu      sync.Mutex
	drained sync.Cond // signalled after each write to the socket
	buf     []byte
	err     error
	closing bool
	wake    chan struct{}
	done    chan struct{}
	timeout time.Duration
}

// maxPending bounds the bytes a coalescingConn holds unwritten; the
// flusher waits linger for more unless lingerBytes are already pending.
const (
	maxPending  = 1 << 20
	linger      = 200 * time.Microsecond
	lingerBytes = 16 << 10
)

func newCoalescingConn(nc net.Conn, writeTimeout time.Duration) *coalescingConn {
	c := &coalescingConn{Conn: nc, wake: make(chan struct{}, 1), done: make(chan struct{}), timeout: writeTimeout}
	c.drained.L = &c.mu
	go c.flush()
	return c
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	for len(c.buf) >= maxPending && c.err == nil && !c.closing {
		c.drained.Wait()
	}
	if c.err != nil || c.closing {
		err := c.err
		c.mu.Unlock()
		if err == nil {
			err = net.ErrClosed
		}
		return 0, err
	}
	c.buf = append(c.buf, p...)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// SetWriteDeadline is not passed on per frame (go-amqp sets one before
// every frame); each write to the socket gets the connection's timeout.
func (c *coalescingConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets only the read deadline, for the same reason.
func (c *coalescingConn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// Close writes what is pending, then closes the connection.
func (c *coalescingConn) Close() error {
	c.mu.Lock()
	if !c.closing {
		c.closing = true
		c.drained.Broadcast()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	<-c.done
	return c.Conn.Close()
}

func (c *coalescingConn) flush() {
	defer close(c.done)
	var spare []byte
	for {
		<-c.wake
		// A burst is gathered for a moment before it is written: a
		// frame or two per system call would cost nearly as much as
		// go-amqp's own write per frame.
		c.mu.Lock()
		small := len(c.buf) < lingerBytes
		c.mu.Unlock()
		if small {
			time.Sleep(linger)
		}
		for {
			c.mu.Lock()
			b := c.buf
			if len(b) == 0 {
				closing := c.closing
				c.mu.Unlock()
				if closing {
					return
				}
				break
			}
			// b and spare are never the same array: spare is the
			// one written last time, b the one appended to since.
			c.buf = spare[:0]
			c.mu.Unlock()
			if c.timeout > 0 {
				c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
			}
			_, err := c.Conn.Write(b)
			c.mu.Lock()
			if err != nil && c.err == nil {
				c.err = err
			}
			c.drained.Broadcast()
			if c.err != nil {
				c.buf = nil // what is still to come is not written
			}
			c.mu.Unlock()
			spare = b[:0]
		}
	}
}
