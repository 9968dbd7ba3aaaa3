package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/auth"

	"github.com/wiretap-dev/wiretap/capture"
	"github.com/wiretap-dev/wiretap/decode"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
	"github.com/wiretap-dev/wiretap/pipeline"
)

// startBroker runs a broker on a free loopback port until the test ends.
func startBroker(t testing.TB, cfg Config) (*Broker, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		b.Close()
		checkLedger(t, b)
	})
	return b, "amqp://guest:guest@" + ln.Addr().String() + "/"
}

func dial(t testing.TB, url string) (*amqp.Connection, *amqp.Channel) {
	t.Helper()
	c, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return c, ch
}

func amqpErr(t *testing.T, err error) *amqp.Error {
	t.Helper()
	var e *amqp.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *amqp.Error, got %v", err)
	}
	return e
}

func TestPublishConsumeInOrder(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(q.Name, "amq.gen-") || len(q.Name) != len("amq.gen-")+22 {
		t.Fatalf("server-named queue %q, want amq.gen- and 22 characters", q.Name)
	}
	const n = 500
	for i := range n {
		err := ch.Publish("", q.Name, false, false, amqp.Publishing{
			ContentType: "text/plain", Headers: amqp.Table{"i": int32(i)}, Body: []byte(fmt.Sprint("m", i))})
		if err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := ch.Consume(q.Name, "", false, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		select {
		case m := <-msgs:
			if string(m.Body) != fmt.Sprint("m", i) || m.Headers["i"] != int32(i) || m.ContentType != "text/plain" {
				t.Fatalf("message %d: body %q headers %v type %q", i, m.Body, m.Headers, m.ContentType)
			}
			if m.DeliveryTag != uint64(i+1) || m.Redelivered {
				t.Fatalf("message %d: tag %d redelivered %v", i, m.DeliveryTag, m.Redelivered)
			}
			m.Ack(false)
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d did not arrive", i)
		}
	}
}

func TestConfirmsReturnBeforeAck(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, 1))
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1))
	if err := ch.Publish("amq.direct", "nowhere", true, false, amqp.Publishing{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	// amqp091-go hands each frame on from its reader goroutine in the
	// order it arrived, so the return is in its channel by the time the
	// confirm is (selecting on both at once would pick at random when
	// both frames came in one read).
	var c amqp.Confirmation
	select {
	case c = <-confirms:
	case <-time.After(5 * time.Second):
		t.Fatal("no confirm")
	}
	select {
	case r := <-returns:
		if r.ReplyCode != 312 || r.ReplyText != "NO_ROUTE" || string(r.Body) != "x" {
			t.Fatalf("return %d %q %q", r.ReplyCode, r.ReplyText, r.Body)
		}
	default:
		t.Fatal("confirm before the return")
	}
	if !c.Ack || c.DeliveryTag != 1 {
		t.Fatalf("confirm %+v", c)
	}
}

func TestChannelErrorsAsRabbitMQ(t *testing.T) {
	_, url := startBroker(t, Config{})
	conn, _ := dial(t, url)
	cases := []struct {
		name string
		do   func(ch *amqp.Channel) error
		code int
		text string
	}{
		{"passive missing queue", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclarePassive("nope", false, false, false, false, nil)
			return err
		}, 404, "NOT_FOUND - no queue 'nope' in vhost '/'"},
		{"reserved queue name", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare("amq.foo", false, false, false, false, nil)
			return err
		}, 403, "ACCESS_REFUSED - queue name 'amq.foo' contains reserved prefix 'amq.*'"},
		{"bind to default exchange", func(ch *amqp.Channel) error {
			ch.QueueDeclare("bq", false, true, false, false, nil)
			return ch.QueueBind("bq", "k", "", false, nil)
		}, 403, "ACCESS_REFUSED - operation not permitted on the default exchange"},
		{"inequivalent durable", func(ch *amqp.Channel) error {
			ch.QueueDeclare("iq", false, false, false, false, nil)
			_, err := ch.QueueDeclare("iq", true, false, false, false, nil)
			return err
		}, 406, "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'iq' in vhost '/': received 'true' but current is 'false'"},
		{"unknown delivery tag", func(ch *amqp.Channel) error {
			// basic.ack has no reply: the channel.close that answers it is
			// read from the close notification, not from a later call,
			// which fails with 504 instead when the close arrives first.
			closed := ch.NotifyClose(make(chan *amqp.Error, 1))
			ch.Ack(42, false)
			select {
			case e, ok := <-closed:
				if ok {
					return e
				}
			case <-time.After(5 * time.Second):
			}
			return errors.New("no channel.close after an unknown delivery tag")
		}, 406, "PRECONDITION_FAILED - unknown delivery tag 42"},
		{"delete system exchange", func(ch *amqp.Channel) error {
			return ch.ExchangeDelete("amq.direct", false, false)
		}, 403, "ACCESS_REFUSED - deletion of system exchange 'amq.direct' in vhost '/' not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			e := amqpErr(t, tc.do(ch))
			if e.Code != tc.code || e.Reason != tc.text {
				t.Fatalf("got %d %q\nwant %d %q", e.Code, e.Reason, tc.code, tc.text)
			}
		})
	}
}

func TestExclusiveQueueLockedForOthers(t *testing.T) {
	_, url := startBroker(t, Config{})
	c1, ch1 := dial(t, url)
	if _, err := ch1.QueueDeclare("ex", false, false, true, false, nil); err != nil {
		t.Fatal(err)
	}
	_, ch2 := dial(t, url)
	_, err := ch2.QueueDeclarePassive("ex", false, false, true, false, nil)
	if e := amqpErr(t, err); e.Code != 405 || !strings.HasPrefix(e.Reason, "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'ex' in vhost '/'.") {
		t.Fatalf("got %d %q", e.Code, e.Reason)
	}
	c1.Close()
	_, ch3 := dial(t, url)
	if _, err := ch3.QueueDeclarePassive("ex", false, false, false, false, nil); amqpErr(t, err).Code != 404 {
		t.Fatal("the exclusive queue outlived its connection")
	}
}

func TestNackRequeueRedelivers(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	q, _ := ch.QueueDeclare("", false, true, true, false, nil)
	for _, b := range []string{"a", "b", "c"} {
		ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte(b)})
	}
	var got []string
	for range 3 {
		m, ok, err := ch.Get(q.Name, false)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		got = append(got, string(m.Body))
	}
	if err := ch.Nack(3, true, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a", "b", "c"} {
		m, ok, err := ch.Get(q.Name, true)
		if err != nil || !ok || string(m.Body) != want || !m.Redelivered {
			t.Fatalf("after requeue: %q redelivered=%v ok=%v err=%v, want %q", m.Body, m.Redelivered, ok, err, want)
		}
	}
	if _, ok, _ := ch.Get(q.Name, true); ok {
		t.Fatal("queue not empty")
	}
}

// collect is a pipeline sink that keeps units.
type collect struct {
	mu    sync.Mutex
	units []*decode.Unit
}

func (c *collect) add(u *decode.Unit) {
	c.mu.Lock()
	c.units = append(c.units, u)
	c.mu.Unlock()
}

// TestTapDecodesAsACapture: the broker's own connections, tapped, decode
// into the units a capture of the same session would give.
func TestTapDecodesAsACapture(t *testing.T) {
	var sink collect
	pl := pipeline.New(pipeline.Config{Sink: sink.add})
	b, url := startBroker(t, Config{Tap: capture.NewSerial(pl)})
	conn, ch := dial(t, url)
	q, _ := ch.QueueDeclare("tapq", false, true, false, false, nil)
	ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("hello")})
	m, ok, err := ch.Get(q.Name, true)
	if err != nil || !ok || string(m.Body) != "hello" {
		t.Fatal(ok, err)
	}
	conn.Close()
	// The tap runs on its own goroutine: wait for the connection's end.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		sink.mu.Lock()
		n := len(sink.units)
		var last string
		if n > 0 {
			last = sink.units[n-1].Type
		}
		sink.mu.Unlock()
		if last == "connection.close-ok" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close() // the tap delivers what it holds before the pipeline ends
	pl.Finish()
	var types []string
	for _, u := range sink.units {
		if u.Err() != "" {
			t.Errorf("unit %d %s: %s", u.N, u.Type, u.Err())
		}
		types = append(types, u.Dir.String()+" "+u.Type)
	}
	want := []string{
		"F protocol-header", "B connection.start", "F connection.start-ok", "B connection.tune",
		"F connection.tune-ok", "F connection.open", "B connection.open-ok", "F channel.open", "B channel.open-ok",
		"F queue.declare", "B queue.declare-ok", "F basic.publish", "F content-header", "F content-body",
		"F basic.get", "B basic.get-ok", "B content-header", "B content-body",
		"F connection.close", "B connection.close-ok",
	}
	if strings.Join(types, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tapped units:\n%s\nwant:\n%s", strings.Join(types, "\n"), strings.Join(want, "\n"))
	}
}

// TestBadFramesAndNoLeaks: malformed input closes only its own connection
// with RabbitMQ's code, others keep working, and no goroutine is left.
func TestBadFramesAndNoLeaks(t *testing.T) {
	b, url := startBroker(t, Config{})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "amqp://guest:guest@"), "/")
	before := runtime.NumGoroutine()
	_, good := dial(t, url)
	if _, err := good.QueueDeclare("steady", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		send []byte
		want string // a reply we expect to read, "" for none
	}{
		{"bad protocol header", []byte("GET / HTTP/1.1\r\n\r\n"), amqp091.ProtocolHeader},
		{"garbage after header", append([]byte(amqp091.ProtocolHeader), make([]byte, 64)...), ""},
		{"cut mid-frame", append([]byte(amqp091.ProtocolHeader), 1, 0, 0, 0, 0, 1), ""},
	}
	for _, tc := range cases {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(tc.send)
		nc.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 4096)
		n, _ := nc.Read(buf)
		if tc.want != "" && !strings.HasPrefix(string(buf[:n]), tc.want) {
			t.Errorf("%s: read %q, want %q", tc.name, buf[:n], tc.want)
		}
		nc.Close()
	}
	if err := good.Publish("", "steady", false, false, amqp.Publishing{Body: []byte("still here")}); err != nil {
		t.Fatal(err)
	}
	if m, ok, err := good.Get("steady", true); err != nil || !ok || string(m.Body) != "still here" {
		t.Fatalf("the good connection was disturbed: %v %v", ok, err)
	}
	// Many connections opened and closed leave nothing behind.
	for range 50 {
		c, err := amqp.Dial(url)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before+8 {
		t.Fatalf("%d goroutines before, %d after", before, g)
	}
	if n := len(b.Connections()); n != 1 {
		t.Fatalf("%d connections open, want the good one", n)
	}
}

// TestSenderSelectedDistribution: CC and BCC route to more keys, and BCC
// is not delivered.
func TestSenderSelectedDistribution(t *testing.T) {
	_, url := startBroker(t, Config{})
	_, ch := dial(t, url)
	for _, q := range []string{"to", "cc", "bcc"} {
		if _, err := ch.QueueDeclare(q, false, true, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind(q, q, "amq.direct", false, nil); err != nil {
			t.Fatal(err)
		}
	}
	err := ch.Publish("amq.direct", "to", false, false, amqp.Publishing{Body: []byte("x"),
		Headers: amqp.Table{"CC": []any{"cc"}, "BCC": []any{"bcc"}, "keep": "me"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"to", "cc", "bcc"} {
		m, ok, err := ch.Get(q, true)
		if err != nil || !ok {
			t.Fatalf("queue %s got nothing (%v)", q, err)
		}
		if _, has := m.Headers["BCC"]; has || m.Headers["keep"] != "me" {
			t.Fatalf("queue %s: headers %v", q, m.Headers)
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wiretap test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestAMQPS: a TLS listener serves clients as the plain one does, and
// without client certificates EXTERNAL is not offered.
func TestAMQPS(t *testing.T) {
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	b, err := New(Config{TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Serve(ctx, tls.NewListener(l, cfg)); close(done) }()
	defer func() { cancel(); <-done; b.Close() }()
	c, err := amqp.DialTLS("amqps://guest:guest@"+l.Addr().String()+"/", &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if mechs := c.Config.SASL; len(mechs) == 0 {
		t.Fatal("no SASL mechanism used")
	}
	ch, err := c.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.Publish("", q.Name, false, false, amqp.Publishing{Body: []byte("over tls")})
	if m, ok, err := ch.Get(q.Name, true); err != nil || !ok || string(m.Body) != "over tls" {
		t.Fatalf("get over TLS: %v %v", ok, err)
	}
	conns := b.Connections()
	if len(conns) != 1 || !conns[0].TLS {
		t.Fatalf("connections %+v: want one, over TLS", conns)
	}
	if strings.Contains(string(b.startTLS.Mechanisms), "EXTERNAL") {
		t.Fatalf("EXTERNAL offered without client certificates: %q", b.startTLS.Mechanisms)
	}
}

// externalTLS starts a broker with TLS that asks for client certificates
// from a CA of the test's own, and a user "extuser" that EXTERNAL logs in
// by its certificate's common name. It returns the broker, its TLS
// address and a client certificate for extuser.
func externalTLS(t *testing.T) (*Broker, string, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(10), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	clientKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	clientTmpl := &x509.Certificate{SerialNumber: big.NewInt(11), Subject: pkix.Name{CommonName: "extuser"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, ca, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	users := auth.NewDefaultStore()
	users.SetCertLoginFrom(auth.CommonName)
	users.PutUser("extuser", "unused", nil)
	if err := users.SetPermissions("extuser", "/", ".*", ".*", ".*"); err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	b, err := New(Config{TLS: cfg, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Serve(ctx, tls.NewListener(l, cfg)); close(done) }()
	t.Cleanup(func() { cancel(); <-done; b.Close() })
	return b, l.Addr().String(), tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey}
}

// TestExternalOverTLS: a client certificate signed by the CA the broker
// trusts logs in with EXTERNAL as the user its common name names.
func TestExternalOverTLS(t *testing.T) {
	b, addr, cert := externalTLS(t)
	if !strings.Contains(string(b.startTLS.Mechanisms), "EXTERNAL") || strings.Contains(string(b.start.Mechanisms), "EXTERNAL") {
		t.Fatalf("mechanisms: plain %q, TLS %q", b.start.Mechanisms, b.startTLS.Mechanisms)
	}
	c, err := amqp.DialConfig("amqps://"+addr+"/", amqp.Config{
		SASL:            []amqp.Authentication{&amqp.ExternalAuth{}},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conns := b.Connections()
	if len(conns) != 1 || conns[0].User != "extuser" || conns[0].AuthMechanism != "EXTERNAL" {
		t.Fatalf("connections %+v: want extuser by EXTERNAL", conns)
	}
}
