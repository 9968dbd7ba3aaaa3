// Command corpusgen is the set of real clients that scripts/corpus.sh runs
// against RabbitMQ and PostgreSQL while dumpcap records the benchmark
// corpus (testdata/corpus, git-ignored): AMQP 1.0 transfers through
// Azure/go-amqp, PostgreSQL results and COPY through jackc/pgx, and many
// short AMQP 0-9-1 connections through rabbitmq/amqp091-go.
//
// Every connection it opens is bound to a local port from -port upwards, so
// the capture filter (portrange) keeps out any other traffic to the same
// servers on the machine.
//
// Usage:
//
//	corpusgen amqp10 -addr 127.0.0.1:5672 -port 30000 -n 100000 -size 16
//	corpusgen amqp10 -addr 127.0.0.1:5672 -port 30010 -n 600 -size 65536 -max-frame 4096
//	corpusgen pg -url "$WIRETAP_PG_URL" -port 30100 -rows 1000000 -mode select
//	corpusgen pg -url "$WIRETAP_PG_URL" -port 30110 -rows 500000 -mode copy
//	corpusgen shortconns -addr 127.0.0.1:5672 -port 20000 -n 10000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp10 "github.com/Azure/go-amqp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	amqp091 "github.com/rabbitmq/amqp091-go"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("corpusgen: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: corpusgen amqp10|pg|shortconns [flags]")
	}
	var err error
	switch os.Args[1] {
	case "amqp10":
		err = runAMQP10(os.Args[2:])
	case "pg":
		err = runPG(os.Args[2:])
	case "shortconns":
		err = runShortConns(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

// ports hands out local ports from a base, one per connection.
type ports struct{ next atomic.Int64 }

func newPorts(base int) *ports {
	p := &ports{}
	p.next.Store(int64(base))
	return p
}

// dial connects to addr from the next local port. SO_REUSEADDR lets a rerun
// bind a port whose previous connection is still in TIME_WAIT; a port some
// other program holds (a listener) is skipped for the next one.
func (p *ports) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	for range 64 {
		c, err := p.dialOne(ctx, network, addr, int(p.next.Add(1)-1))
		if !errors.Is(err, syscall.EADDRINUSE) {
			return c, err
		}
	}
	return nil, fmt.Errorf("dial %s: 64 local ports in a row in use", addr)
}

func (p *ports) dialOne(ctx context.Context, network, addr string, port int) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{
		Timeout:   10 * time.Second,
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(localFor(host)), Port: port},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	return d.DialContext(ctx, network, addr)
}

// localFor picks the loopback source address for a loopback server.
func localFor(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return "::1"
	}
	return "127.0.0.1"
}

// runAMQP10 sends -n messages of -size bytes through one connection and
// receives them on another, both through RabbitMQ's AMQP 1.0 plugin. Sends
// are pre-settled so the sender streams; the receiver accepts each message.
func runAMQP10(args []string) error {
	fs := flag.NewFlagSet("amqp10", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:5672", "broker host:port")
	base := fs.Int("port", 30000, "first local port")
	n := fs.Int("n", 100000, "messages")
	size := fs.Int("size", 16, "body bytes")
	maxFrame := fs.Uint("max-frame", 0, "max-frame-size offered (0: go-amqp's default)")
	queue := fs.String("queue", "wiretap.corpus.amqp10", "queue")
	settled := fs.Bool("settled", false, "send pre-settled")
	inflight := fs.Int("inflight", 64, "sends awaiting their disposition at a time")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	p := newPorts(*base)
	open := func(id string) (*amqp10.Conn, *amqp10.Session, error) {
		nc, err := p.dial(ctx, "tcp", *addr)
		if err != nil {
			return nil, nil, err
		}
		conn, err := amqp10.NewConn(ctx, nc, &amqp10.ConnOptions{
			SASLType:     amqp10.SASLTypePlain("guest", "guest"),
			MaxFrameSize: uint32(*maxFrame),
			ContainerID:  id,
			HostName:     "localhost",
		})
		if err != nil {
			return nil, nil, fmt.Errorf("amqp10: %w", err)
		}
		s, err := conn.NewSession(ctx, nil)
		if err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("amqp10: session: %w", err)
		}
		return conn, s, nil
	}
	address := "/queue/" + *queue
	rconn, rs, err := open("wiretap-corpus-receiver")
	if err != nil {
		return err
	}
	defer rconn.Close()
	// Credit is issued by hand (go-amqp's automatic top-up stalled against
	// RabbitMQ 3.10 with a backlog in the queue): 500 at first, 250 more
	// after each 250 accepted.
	receiver, err := rs.NewReceiver(ctx, address, &amqp10.ReceiverOptions{Credit: -1})
	if err != nil {
		return fmt.Errorf("amqp10: receiver: %w", err)
	}
	if err := receiver.IssueCredit(500); err != nil {
		return fmt.Errorf("amqp10: credit: %w", err)
	}
	sconn, ss, err := open("wiretap-corpus-sender")
	if err != nil {
		return err
	}
	defer sconn.Close()
	sopts := &amqp10.SenderOptions{}
	if *settled {
		sopts.SettlementMode = amqp10.SenderSettleModeSettled.Ptr()
	}
	sender, err := ss.NewSender(ctx, address, sopts)
	if err != nil {
		return fmt.Errorf("amqp10: sender: %w", err)
	}
	body := make([]byte, *size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// -inflight goroutines send, so that many transfers await their
	// disposition at once, as a client publishing asynchronously does.
	errc := make(chan error, 1)
	var seq atomic.Int64
	var sendWG sync.WaitGroup
	var sendErr atomic.Value
	for range *inflight {
		sendWG.Add(1)
		go func() {
			defer sendWG.Done()
			for {
				i := seq.Add(1) - 1
				if i >= int64(*n) {
					return
				}
				msg := &amqp10.Message{
					Properties:            &amqp10.MessageProperties{MessageID: "m-" + strconv.FormatInt(i, 10)},
					ApplicationProperties: map[string]any{"seq": i},
					Data:                  [][]byte{body},
				}
				if err := sender.Send(ctx, msg, nil); err != nil {
					sendErr.CompareAndSwap(nil, fmt.Errorf("amqp10: send %d: %w", i, err))
					return
				}
			}
		}()
	}
	go func() {
		sendWG.Wait()
		err, _ := sendErr.Load().(error)
		errc <- err
	}()
	for i := 0; i < *n; i++ {
		msg, err := receiver.Receive(ctx, nil)
		if err != nil {
			return fmt.Errorf("amqp10: receive %d: %w", i, err)
		}
		if err := receiver.AcceptMessage(ctx, msg); err != nil {
			return fmt.Errorf("amqp10: accept %d: %w", i, err)
		}
		if (i+1)%250 == 0 && *n-(i+1) > 250 {
			if err := receiver.IssueCredit(250); err != nil {
				return fmt.Errorf("amqp10: credit: %w", err)
			}
		}
	}
	if err := <-errc; err != nil {
		return err
	}
	// RabbitMQ 3.10 answers a closing detach without closed=true: bound the
	// wait (as internal/capgen/goamqp does).
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	_ = sender.Close(cctx)
	_ = receiver.Close(cctx)
	log.Printf("amqp10: %d messages of %d bytes", *n, *size)
	return nil
}

// runPG runs, on one pgx connection, either a SELECT of -rows rows (the
// simple protocol, one DataRow each) or a COPY TO STDOUT of -rows rows and
// a COPY FROM STDIN of the same rows into a temporary table.
func runPG(args []string) error {
	fs := flag.NewFlagSet("pg", flag.ExitOnError)
	url := fs.String("url", os.Getenv("WIRETAP_PG_URL"), "PostgreSQL URL")
	base := fs.Int("port", 30100, "first local port")
	rows := fs.Int("rows", 1000000, "rows")
	mode := fs.String("mode", "select", "select or copy")
	_ = fs.Parse(args)
	if *url == "" {
		return errors.New("pg: no -url and no WIRETAP_PG_URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := pgx.ParseConfig(*url)
	if err != nil {
		return fmt.Errorf("pg: %w", err)
	}
	p := newPorts(*base)
	cfg.DialFunc = p.dial
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("pg: connect: %w", err)
	}
	defer conn.Close(ctx)
	q := fmt.Sprintf(`SELECT g AS id, md5(g::text) AS name, now() AS at, g %% 7 = 0 AS flag FROM generate_series(1, %d) g`, *rows)
	switch *mode {
	case "select":
		r, err := conn.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("pg: select: %w", err)
		}
		got := 0
		for r.Next() {
			got++
		}
		r.Close()
		if err := r.Err(); err != nil {
			return fmt.Errorf("pg: select: %w", err)
		}
		log.Printf("pg: selected %d rows", got)
	case "copy":
		pr, pw := io.Pipe()
		var wg sync.WaitGroup
		var copyErr error
		var out int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag, err := conn.PgConn().CopyTo(ctx, pw, "COPY ("+q+") TO STDOUT")
			pw.CloseWithError(err)
			copyErr = err
			out = tag.RowsAffected()
		}()
		// Keep the rows in memory, then send them back with COPY FROM on a
		// second connection, so each direction's COPY is one stream.
		data, err := io.ReadAll(pr)
		wg.Wait()
		if copyErr != nil {
			return fmt.Errorf("pg: copy to: %w", copyErr)
		}
		if err != nil {
			return fmt.Errorf("pg: copy to: %w", err)
		}
		if _, err := conn.Exec(ctx, `CREATE TEMP TABLE wt_corpus (id int8, name text, at timestamptz, flag bool)`); err != nil {
			return fmt.Errorf("pg: create: %w", err)
		}
		tag, err := copyFrom(ctx, conn.PgConn(), data)
		if err != nil {
			return fmt.Errorf("pg: copy from: %w", err)
		}
		log.Printf("pg: copied %d rows out, %d in", out, tag.RowsAffected())
	default:
		return fmt.Errorf("pg: unknown -mode %q", *mode)
	}
	return nil
}

// copyFrom sends data (COPY's text format) in 64 KiB CopyData messages, as
// psql's \copy does.
func copyFrom(ctx context.Context, pc *pgconn.PgConn, data []byte) (pgconn.CommandTag, error) {
	pr, pw := io.Pipe()
	go func() {
		for len(data) > 0 {
			n := min(len(data), 65536)
			if _, err := pw.Write(data[:n]); err != nil {
				return
			}
			data = data[n:]
		}
		pw.Close()
	}()
	return pc.CopyFrom(ctx, pr, "COPY wt_corpus FROM STDIN")
}

// runShortConns opens -n AMQP 0-9-1 connections, -workers at a time; each
// does the handshake, opens a channel, publishes one message to the
// default exchange (routed nowhere) and closes.
func runShortConns(args []string) error {
	fs := flag.NewFlagSet("shortconns", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:5672", "broker host:port")
	base := fs.Int("port", 20000, "first local port")
	n := fs.Int("n", 10000, "connections")
	workers := fs.Int("workers", 8, "connections at a time")
	_ = fs.Parse(args)
	p := newPorts(*base)
	cfg := amqp091.Config{
		Heartbeat: 10 * time.Second,
		Locale:    "en_US",
		Dial: func(network, a string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return p.dial(ctx, network, a)
		},
	}
	uri := "amqp://guest:guest@" + *addr + "/"
	var next atomic.Int64
	var failed atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(*n) {
				if err := shortConn(uri, cfg); err != nil {
					failed.Add(1)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("shortconns: %d of %d connections failed, the first: %w", f, *n, firstErr)
	}
	log.Printf("shortconns: %d connections", *n)
	return nil
}

func shortConn(uri string, cfg amqp091.Config) error {
	conn, err := amqp091.DialConfig(uri, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if err := ch.Publish("", "wiretap.corpus.nowhere", false, false, amqp091.Publishing{
		ContentType: "text/plain",
		Body:        []byte("short connection"),
	}); err != nil {
		return err
	}
	return conn.Close()
}
