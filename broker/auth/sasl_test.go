package auth

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

var (
	loopback = netip.MustParseAddr("127.0.0.1")
	remote   = netip.MustParseAddr("192.0.2.7")
)

// Responses real clients sent for guest/guest.
var captured = []struct {
	client, mechanism, hex string
}{
	// testdata/amqp091-pika.pcapng, frame 3 (pika 1.2.0; pika speaks PLAIN
	// and EXTERNAL only).
	{"pika 1.2.0", PLAIN, "006775657374006775657374"},
	// testdata/amqp091-go.pcapng, frame 3: the table without its length.
	{"amqp091-go", AMQPLAIN, "054c4f47494e530000000567756573740850415353574f524453000000056775657374"},
	// py-amqp 5.1.1 (kombu's), amqp.sasl.AMQPLAIN("guest", "guest").start():
	// the same bytes, its own code skipping the length.
	{"py-amqp 5.1.1", AMQPLAIN, "054c4f47494e530000000567756573740850415353574f524453000000056775657374"},
	{"py-amqp 5.1.1", PLAIN, "006775657374006775657374"},
}

func TestAuthenticateCapturedResponses(t *testing.T) {
	s := NewDefaultStore()
	for _, c := range captured {
		resp, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		user, err := s.Authenticate(c.mechanism, resp, loopback, nil)
		if err != nil || user != "guest" {
			t.Errorf("%s %s: %q, %v", c.client, c.mechanism, user, err)
		}
		// The same bytes with a wrong password are refused, so the
		// password was read, not skipped.
		// The password is the last five bytes in every capture.
		bad := append(resp[:len(resp)-5:len(resp)-5], "guesx"...)
		if _, err := s.Authenticate(c.mechanism, bad, loopback, nil); !isLoginError(err, "user 'guest' - invalid credentials") {
			t.Errorf("%s %s wrong password: %v", c.client, c.mechanism, err)
		}
	}
}

func isLoginError(err error, detail string) bool {
	var le *LoginError
	return errors.As(err, &le) && le.Detail == detail
}

func amqplain(login, password amqp091.Value) []byte {
	return amqp091.Table(nil).Append("LOGIN", login).Append("PASSWORD", password)
}

func TestAuthenticate(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "pw", nil)
	s.PutUser("nopass", "", nil)
	str := amqp091.StringValue
	blank := func(u string) string {
		return "user '" + u + "' attempted to log in with a blank password, which is prohibited by the internal authN backend. " +
			"To use TLS/x509 certificate-based authentication, see the rabbitmq_auth_mechanism_ssl plugin and configure the client to use the EXTERNAL authentication mechanism. " +
			"Alternatively change the password for the user to be non-blank."
	}
	type want struct {
		user   string
		detail string // LoginError
		code   uint16 // AMQPError
		text   string
	}
	cases := []struct {
		name      string
		mechanism string
		response  []byte
		peer      netip.Addr
		want      want
	}{
		{"plain", PLAIN, []byte("\x00u\x00pw"), remote, want{user: "u"}},
		{"plain v6 loopback guest", PLAIN, []byte("\x00guest\x00guest"), netip.MustParseAddr("::1"), want{user: "guest"}},
		{"plain mapped loopback guest", PLAIN, []byte("\x00guest\x00guest"), netip.MustParseAddr("::ffff:127.0.0.2"), want{user: "guest"}},
		{"plain remote guest", PLAIN, []byte("\x00guest\x00guest"), remote, want{detail: "user 'guest' can only connect via localhost"}},
		{"plain bad password", PLAIN, []byte("\x00u\x00px"), loopback, want{detail: "user 'u' - invalid credentials"}},
		{"plain unknown user", PLAIN, []byte("\x00x\x00pw"), loopback, want{detail: "user 'x' - invalid credentials"}},
		{"plain blank password", PLAIN, []byte("\x00u\x00"), loopback, want{detail: blank("u")}},
		{"plain no password user", PLAIN, []byte("\x00nopass\x00x"), loopback, want{detail: "user 'nopass' - invalid credentials"}},
		{"plain authzid", PLAIN, []byte("u\x00u\x00pw"), loopback, want{code: 502,
			text: "SYNTAX_ERROR - response <<117,0,117,0,112,119>> invalid"}},
		{"plain no second nul", PLAIN, []byte("\x00u"), loopback, want{code: 502, text: "SYNTAX_ERROR - response <<0,117>> invalid"}},
		{"plain trailing nul", PLAIN, []byte("\x00u\x00pw\x00"), loopback, want{code: 502, text: "SYNTAX_ERROR - response <<0,117,0,112,119,0>> invalid"}},
		{"plain empty", PLAIN, nil, loopback, want{code: 502, text: "SYNTAX_ERROR - response <<>> invalid"}},
		{"amqplain", AMQPLAIN, amqplain(str("u"), str("pw")), loopback, want{user: "u"}},
		{"amqplain first of each wins", AMQPLAIN, amqp091.Table(amqplain(str("u"), str("pw"))).Append("LOGIN", str("x")).Append("PASSWORD", str("y")), loopback, want{user: "u"}},
		{"amqplain other fields", AMQPLAIN, amqp091.Table(nil).Append("X", amqp091.Int32Value(1)).Append("PASSWORD", str("pw")).Append("LOGIN", str("u")), loopback, want{user: "u"}},
		{"amqplain bad password", AMQPLAIN, amqplain(str("u"), str("p")), loopback, want{detail: "user 'u' - invalid credentials"}},
		{"amqplain int password", AMQPLAIN, amqplain(str("u"), amqp091.Int32Value(5)), loopback, want{
			detail: "User 'u' authentication failed with internal error. Enable debug logs to see the real error."}},
		{"amqplain both ints", AMQPLAIN, amqplain(amqp091.Int32Value(4), amqp091.Int32Value(5)), loopback, want{code: 502,
			text: "SYNTAX_ERROR - AMQPLAIN auth info uses unsupported type for LOGIN or PASSWORD field"}},
		{"amqplain bytes", AMQPLAIN, amqplain(amqp091.BytesValue([]byte("u")), amqp091.BytesValue([]byte("pw"))), loopback, want{code: 502,
			text: "SYNTAX_ERROR - AMQPLAIN auth info uses unsupported type for LOGIN or PASSWORD field"}},
		{"amqplain missing", AMQPLAIN, amqp091.Table(nil).Append("LOGIN", str("u")), loopback, want{code: 502,
			text: "SYNTAX_ERROR - AMQPLAIN auth info is missing LOGIN or PASSWORD field"}},
		{"amqplain length prefixed", AMQPLAIN, append([]byte{0, 0, 0, 24}, amqplain(str("u"), str("pw"))...), loopback, want{code: 502}},
		{"unknown mechanism", "FOO", nil, loopback, want{code: 503, text: "COMMAND_INVALID - unknown authentication mechanism 'FOO'"}},
		{"cr-demo", "RABBIT-CR-DEMO", nil, loopback, want{code: 503, text: "COMMAND_INVALID - invalid authentication mechanism 'RABBIT-CR-DEMO'"}},
		{"external without tls", EXTERNAL, nil, loopback, want{detail: "not a TLS-enabled connection"}},
	}
	for _, c := range cases {
		user, err := s.Authenticate(c.mechanism, c.response, c.peer, nil)
		switch w := c.want; {
		case w.user != "":
			if err != nil || user != w.user {
				t.Errorf("%s: %q, %v; want %q", c.name, user, err, w.user)
			}
		case w.detail != "":
			var le *LoginError
			if !errors.As(err, &le) || le.Detail != w.detail || le.Mechanism != c.mechanism {
				t.Errorf("%s: %q, %v; want login error %q", c.name, user, err, w.detail)
				continue
			}
			want := "ACCESS_REFUSED - Login was refused using authentication mechanism " + c.mechanism + ". For details see the broker logfile."
			if ae := le.AMQPError(); ae.Code != 403 || ae.Text != want || ae.Silent {
				t.Errorf("%s: sent as %+v", c.name, ae)
			}
		default:
			var ae *AMQPError
			if !errors.As(err, &ae) || ae.Code != w.code || (w.text != "" && ae.Text != w.text) || !ae.Silent {
				t.Errorf("%s: %q, %v; want silent %d %q", c.name, user, err, w.code, w.text)
			}
		}
	}
}

func TestLoopbackUsers(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "pw", nil)
	s.SetLoopbackUsers("u")
	if _, err := s.Authenticate(PLAIN, []byte("\x00guest\x00guest"), remote, nil); err != nil {
		t.Errorf("guest no longer loopback-only: %v", err)
	}
	if _, err := s.Authenticate(PLAIN, []byte("\x00u\x00pw"), remote, nil); !isLoginError(err, "user 'u' can only connect via localhost") {
		t.Errorf("u from remote: %v", err)
	}
	s.SetLoopbackUsers()
	if _, err := s.Authenticate(PLAIN, []byte("\x00u\x00pw"), remote, nil); err != nil {
		t.Errorf("no loopback users: %v", err)
	}
}

func TestMechanisms(t *testing.T) {
	s := NewStore()
	for _, ext := range []bool{false, true} {
		if got, want := strings.Join(s.Mechanisms(ext), " "), s.MechanismList(ext); got != want {
			t.Errorf("external=%v: %q, list %q", ext, got, want)
		}
	}
	// RabbitMQ 3.10.8's default auth_mechanisms, in its order
	// (TestLiveLogin checks the set against a live node).
	if got := s.MechanismList(false); got != "PLAIN AMQPLAIN" {
		t.Errorf("mechanisms %q", got)
	}
	if got := s.Mechanisms(true); len(got) != 3 || got[2] != EXTERNAL {
		t.Errorf("with EXTERNAL: %q", got)
	}
}

func TestAuthenticateAllocs(t *testing.T) {
	s := NewDefaultStore()
	plain := []byte("\x00guest\x00guest")
	table := amqplain(amqp091.StringValue("guest"), amqp091.StringValue("guest"))
	for _, c := range []struct {
		mech string
		resp []byte
	}{{PLAIN, plain}, {AMQPLAIN, table}} {
		n := testing.AllocsPerRun(200, func() {
			if u, err := s.Authenticate(c.mech, c.resp, loopback, nil); err != nil || u != "guest" {
				t.Fatal(u, err)
			}
		})
		if n != 0 {
			t.Errorf("%s login allocates %v times", c.mech, n)
		}
	}
	n := testing.AllocsPerRun(200, func() {
		if !s.CheckPassword("guest", "guest") {
			t.Fatal("refused")
		}
	})
	if n != 0 {
		t.Errorf("CheckPassword allocates %v times", n)
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	s := NewDefaultStore()
	plain := []byte("\x00guest\x00guest")
	table := amqplain(amqp091.StringValue("guest"), amqp091.StringValue("guest"))
	for _, c := range []struct {
		mech string
		resp []byte
	}{{PLAIN, plain}, {AMQPLAIN, table}} {
		b.Run(c.mech, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Authenticate(c.mech, c.resp, loopback, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzAuthenticate feeds any mechanism and response: no panic, and an
// answer of one of the documented kinds.
func FuzzAuthenticate(f *testing.F) {
	for _, c := range captured {
		resp, _ := hex.DecodeString(c.hex)
		f.Add(c.mechanism, resp)
	}
	f.Add(PLAIN, []byte("\x00u\x00pw"))
	f.Add(PLAIN, []byte("a\x00u\x00pw\x00"))
	f.Add(AMQPLAIN, amqplain(amqp091.StringValue("u"), amqp091.Int32Value(1)))
	f.Add(AMQPLAIN, []byte{5, 'L', 'O', 'G', 'I', 'N', 'S', 0xff, 0xff, 0xff, 0xff})
	f.Add(AMQPLAIN, []byte{5, 'L', 'O', 'G', 'I', 'N', 'F', 0, 0, 0, 2, 1})
	f.Add(EXTERNAL, []byte(nil))
	f.Add("FOO", []byte("x"))
	s := NewDefaultStore()
	s.PutUser("u", "pw", nil)
	f.Fuzz(func(t *testing.T, mechanism string, response []byte) {
		user, err := s.Authenticate(mechanism, response, loopback, nil)
		var le *LoginError
		var ae *AMQPError
		switch {
		case err == nil:
			if user != "guest" && user != "u" {
				t.Fatalf("logged in as %q", user)
			}
		case errors.As(err, &le):
			if le.Mechanism != mechanism || le.AMQPError().Code != 403 {
				t.Fatalf("login error %+v", le)
			}
		case errors.As(err, &ae):
			if !ae.Silent || (ae.Code != 502 && ae.Code != 503) {
				t.Fatalf("amqp error %+v", ae)
			}
		default:
			t.Fatalf("error of type %T: %v", err, err)
		}
	})
}
