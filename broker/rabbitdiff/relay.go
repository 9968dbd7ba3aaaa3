package rabbitdiff

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"
)

// DefaultStallTimeout is how long a client may wait for a synchronous reply
// before the relay gives up on its connection.
const DefaultStallTimeout = 5 * time.Second

// Recording is what a [Relay] saw of one connection.
type Recording struct {
	// ClientBytes and ServerBytes are each direction's bytes in order, as
	// they crossed the relay.
	ClientBytes []byte
	ServerBytes []byte
	// DialErr is set when the relay could not reach the broker.
	DialErr string
	// Stall is set when the watchdog closed the connection: what the
	// client was waiting for ("no reply to queue.declare on channel 1
	// within 5s").
	Stall string
}

// Relay forwards the connections it accepts on a loopback port to a broker
// and records both directions of each. Start one with [Listen]; its
// recordings are complete once [Relay.Close] returns.
type Relay struct {
	// StallTimeout bounds the wait for a synchronous reply (0:
	// [DefaultStallTimeout]). Set it before the first connection.
	StallTimeout time.Duration

	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []*relayConn

	accepted sync.WaitGroup // the accept loop
	piping   sync.WaitGroup // every connection's pipes
	stop     chan struct{}
	once     sync.Once
}

// relayConn is one relayed connection. mu guards rec and watch: both pipes
// and the watchdog touch them.
type relayConn struct {
	client, server net.Conn
	mu             sync.Mutex
	rec            Recording
	watch          watch
	done           chan struct{}
}

// Listen starts a relay on 127.0.0.1 (an ephemeral port) to target
// (host:port).
func Listen(target string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, errors.New("rabbitdiff: relay: " + err.Error())
	}
	r := &Relay{ln: ln, target: target, stop: make(chan struct{})}
	r.accepted.Add(2)
	go r.acceptLoop()
	go r.watchdog()
	return r, nil
}

// Addr is the relay's host:port, for clients to dial.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

func (r *Relay) stallTimeout() time.Duration {
	if r.StallTimeout > 0 {
		return r.StallTimeout
	}
	return DefaultStallTimeout
}

func (r *Relay) acceptLoop() {
	defer r.accepted.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		rc := &relayConn{client: c, done: make(chan struct{})}
		r.mu.Lock()
		r.conns = append(r.conns, rc)
		r.mu.Unlock()
		// Dialled here, not in the pipe, so connections are recorded in the
		// order clients opened them.
		s, err := net.DialTimeout("tcp", r.target, r.stallTimeout())
		if err != nil {
			rc.rec.DialErr = err.Error()
			c.Close()
			close(rc.done)
			continue
		}
		rc.server = s
		r.piping.Add(1)
		go rc.run(&r.piping)
	}
}

// run forwards both directions until both have ended.
func (c *relayConn) run(wg *sync.WaitGroup) {
	defer wg.Done()
	var pipes sync.WaitGroup
	pipes.Add(2)
	go c.pipe(&pipes, c.client, c.server, true)
	go c.pipe(&pipes, c.server, c.client, false)
	pipes.Wait()
	c.client.Close()
	c.server.Close()
	close(c.done)
}

// pipe copies one direction, recording before forwarding so the recording
// holds everything the other side can have seen. When from ends, the
// other side gets an end of stream (a half close) but may still answer.
func (c *relayConn) pipe(wg *sync.WaitGroup, from, to net.Conn, toServer bool) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			c.record(toServer, buf[:n], time.Now())
			if _, werr := to.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if tc, ok := to.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		to.Close()
	}
	if !toServer {
		// The server is gone: nothing more can answer the client.
		c.mu.Lock()
		c.watch.clear()
		c.mu.Unlock()
	}
}

func (c *relayConn) record(toServer bool, b []byte, now time.Time) {
	c.mu.Lock()
	if toServer {
		c.rec.ClientBytes = append(c.rec.ClientBytes, b...)
		c.watch.client(c.rec.ClientBytes, now)
	} else {
		c.rec.ServerBytes = append(c.rec.ServerBytes, b...)
		c.watch.server(c.rec.ServerBytes, now)
	}
	c.mu.Unlock()
}

// watchdog closes connections whose client has waited too long.
func (r *Relay) watchdog() {
	defer r.accepted.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	limit := r.stallTimeout()
	for {
		select {
		case <-r.stop:
			return
		case now := <-tick.C:
			r.mu.Lock()
			conns := r.conns
			r.mu.Unlock()
			for _, c := range conns {
				c.mu.Lock()
				what, ch, since, ok := c.watch.oldest()
				stalled := ok && now.Sub(since) > limit && c.rec.Stall == ""
				if stalled {
					c.rec.Stall = "no reply to " + what + " on channel " + strconv.Itoa(int(ch)) +
						" within " + limit.String()
					c.watch.clear()
				}
				c.mu.Unlock()
				if stalled {
					c.kill()
				}
			}
		}
	}
}

func (c *relayConn) kill() {
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// Close stops accepting, gives open connections up to grace to end by
// themselves (the client closed, the server answered), closes what is left
// and returns every connection's recording in the order they were accepted.
func (r *Relay) Close(grace time.Duration) []Recording {
	r.once.Do(func() {
		r.ln.Close()
		close(r.stop)
	})
	r.accepted.Wait()
	r.mu.Lock()
	conns := r.conns
	r.mu.Unlock()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	for _, c := range conns {
		select {
		case <-c.done:
		case <-deadline.C:
			// Expired: every later connection is closed without waiting.
			deadline.Reset(0)
			c.kill()
		}
	}
	r.piping.Wait()
	recs := make([]Recording, len(conns))
	for i, c := range conns {
		c.mu.Lock()
		recs[i] = c.rec
		c.mu.Unlock()
	}
	return recs
}

// Abort closes every connection now, which unblocks clients waiting on
// them; the recordings stay available to Close.
func (r *Relay) Abort() {
	r.mu.Lock()
	conns := r.conns
	r.mu.Unlock()
	for _, c := range conns {
		c.kill()
	}
}
