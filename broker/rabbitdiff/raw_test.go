package rabbitdiff

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// scriptedServer is the server half of a handshake, checking what the
// raw client sends.
func scriptedServer(t *testing.T, c net.Conn, closeWith *amqp091.ConnectionClose, got chan<- string) {
	fr := amqp091.NewFrameReader(c)
	var md amqp091.MethodDecoder
	hdr, err := fr.ReadProtocolHeader()
	if err != nil || string(hdr[:]) != amqp091.ProtocolHeader {
		got <- "bad header"
		return
	}
	read := func() amqp091.Method {
		f, err := fr.ReadFrame()
		if err != nil {
			return nil
		}
		m, _ := md.Decode(f.Payload)
		return m
	}
	caps := amqp091.Table(nil).Append("basic.nack", amqp091.BoolValue(true))
	c.Write(method(0, &amqp091.ConnectionStart{VersionMinor: 9, ServerProperties: amqp091.Table(nil).Append("capabilities", amqp091.TableValue(caps)),
		Mechanisms: []byte("PLAIN AMQPLAIN"), Locales: []byte("en_US")}))
	so, ok := read().(*amqp091.ConnectionStartOk)
	if !ok {
		got <- "no start-ok"
		return
	}
	v, _ := so.ClientProperties.Get("capabilities")
	_, afc := v.Table().Get("authentication_failure_close")
	got <- string(so.Mechanism) + " " + string(so.Response) + " afc=" + map[bool]string{true: "yes", false: "no"}[afc]
	if closeWith != nil {
		c.Write(method(0, closeWith))
		if _, ok := read().(*amqp091.ConnectionCloseOk); ok {
			got <- "close-ok"
		}
		return
	}
	c.Write(method(0, &amqp091.ConnectionTune{ChannelMax: 2047, FrameMax: 131072, Heartbeat: 60}))
	to, ok := read().(*amqp091.ConnectionTuneOk)
	if !ok {
		got <- "no tune-ok"
		return
	}
	got <- "tune-ok " + strconv.Itoa(int(to.ChannelMax)) + " " + strconv.Itoa(int(to.FrameMax)) + " " + strconv.Itoa(int(to.Heartbeat))
	if o, ok := read().(*amqp091.ConnectionOpen); ok {
		got <- "open " + string(o.VirtualHost)
	}
	c.Write(method(0, &amqp091.ConnectionOpenOk{}))
	if _, ok := read().(*amqp091.ConnectionClose); ok {
		c.Write(method(0, &amqp091.ConnectionCloseOk{}))
		got <- "closed"
	}
}

func TestRawClientHandshake(t *testing.T) {
	got := make(chan string, 10)
	addr := fakeServer(t, func(c net.Conn) { scriptedServer(t, c, nil, got) })
	c, err := DialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Handshake(Handshake{Mechanism: "AMQPLAIN", User: "u", Password: "p", VHost: "v",
		Tune: func(o amqp091.ConnectionTune) amqp091.ConnectionTuneOk {
			return amqp091.ConnectionTuneOk{ChannelMax: o.ChannelMax - 1, FrameMax: 4096, Heartbeat: 7}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CloseConnection(); err != nil {
		t.Fatal(err)
	}
	amqplain := string(amqp091.Table(nil).Append("LOGIN", amqp091.StringValue("u")).Append("PASSWORD", amqp091.StringValue("p")))
	for _, want := range []string{"AMQPLAIN " + amqplain + " afc=yes", "tune-ok 2046 4096 7", "open v", "closed"} {
		if g := <-got; g != want {
			t.Errorf("server saw %q, want %q", g, want)
		}
	}
	if c.FrameMax != 4096 {
		t.Errorf("FrameMax %d", c.FrameMax)
	}
}

func TestRawClientRefused(t *testing.T) {
	got := make(chan string, 10)
	refusal := &amqp091.ConnectionClose{ReplyCode: 403, ReplyText: []byte("ACCESS_REFUSED")}
	addr := fakeServer(t, func(c net.Conn) { scriptedServer(t, c, refusal, got) })
	c, err := DialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Handshake(Handshake{Password: "wrong", NoAuthFailureClose: true})
	var ue *UnexpectedError
	if !errors.As(err, &ue) || ue.Want != "connection.tune" || ue.Method.Name() != "connection.close" {
		t.Fatalf("handshake: %v", err)
	}
	if end := c.Drain(); end != EndClose {
		t.Errorf("drain: %q", end)
	}
	for _, want := range []string{"PLAIN \x00guest\x00wrong afc=no", "close-ok"} {
		if g := <-got; g != want {
			t.Errorf("server saw %q, want %q", g, want)
		}
	}
}

func TestRawClientDrainSilence(t *testing.T) {
	addr := fakeServer(t, func(c net.Conn) { c.Read(make([]byte, 1)) })
	c, err := DialRaw(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Timeout = 100 * time.Millisecond
	if end := c.Drain(); end != EndTimeout {
		t.Errorf("drain: %q", end)
	}
	c.Write([]byte("x"))
	c.Timeout = 0
	if end := c.Drain(); end != EndEOF {
		t.Errorf("drain after the server left: %q", end)
	}
}
