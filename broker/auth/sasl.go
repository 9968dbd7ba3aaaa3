package auth

import (
	"bytes"
	"crypto/tls"
	"net/netip"
	"strconv"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// Mechanism is a SASL mechanism name as connection.start-ok carries it.
type Mechanism = string

// The mechanisms Authenticate knows.
const (
	PLAIN    Mechanism = "PLAIN"    // RFC 4616: "\x00user\x00password"
	AMQPLAIN Mechanism = "AMQPLAIN" // a field table with LOGIN and PASSWORD
	EXTERNAL Mechanism = "EXTERNAL" // the TLS client certificate names the user
)

// In the order of RabbitMQ 3.10's default auth_mechanisms setting,
// ['PLAIN', 'AMQPLAIN'], EXTERNAL last when it is offered. RabbitMQ itself
// lists them in the order of its registry's ETS table, which changes with
// the plugins loaded: a node with rabbitmq_management says "AMQPLAIN
// PLAIN", one without it "PLAIN AMQPLAIN". Clients pick by name, so only
// the set matters; the differential tests compare it as a set.
var (
	mechanismsPlain    = []string{PLAIN, AMQPLAIN}
	mechanismsExternal = []string{PLAIN, AMQPLAIN, EXTERNAL}
)

// Mechanisms returns the mechanisms to offer in connection.start, to be
// joined with spaces: "PLAIN AMQPLAIN", and EXTERNAL too when external
// (clients are asked for TLS certificates). The slice is shared: do not
// modify it.
func (s *Store) Mechanisms(external bool) []string {
	if external {
		return mechanismsExternal
	}
	return mechanismsPlain
}

// MechanismList is Mechanisms joined with spaces, for connection.start's
// mechanisms longstr.
func (s *Store) MechanismList(external bool) string {
	if external {
		return "PLAIN AMQPLAIN EXTERNAL"
	}
	return "PLAIN AMQPLAIN"
}

// Authenticate checks connection.start-ok's mechanism and response and
// returns the user logged in. peer is the client's address; a loopback
// user (guest by default) is refused unless it is a loopback address
// (RabbitMQ tests the socket's own address, which over TCP is loopback
// exactly when the peer's is). conn is the TLS state, nil for plain TCP;
// EXTERNAL needs a verified client certificate and a user of the name
// SetCertLoginFrom picks (no password is checked).
//
// Errors, as RabbitMQ 3.10 has them:
//   - a refused login (unknown user, wrong or blank password, loopback
//     rule, no certificate) is a *[LoginError];
//   - an unknown mechanism is a silent *[AMQPError] 503 "COMMAND_INVALID -
//     unknown authentication mechanism 'X'" (RABBIT-CR-DEMO, which
//     RabbitMQ knows but does not offer: "invalid authentication mechanism");
//   - a response that cannot be parsed is a silent *[AMQPError] 502
//     SYNTAX_ERROR.
//
// A successful PLAIN or AMQPLAIN login allocates nothing.
func (s *Store) Authenticate(mechanism string, response []byte, peer netip.Addr, conn *tls.ConnectionState) (string, error) {
	var name, password []byte
	switch mechanism {
	case PLAIN:
		var ok bool
		name, password, ok = parsePLAIN(response)
		if !ok {
			return "", syntaxError("response " + erlangBinary(response) + " invalid")
		}
	case AMQPLAIN:
		var err error
		name, password, err = s.parseAMQPLAIN(response)
		if err != nil {
			return "", err
		}
	case EXTERNAL:
		return s.external(peer, conn)
	case "RABBIT-CR-DEMO":
		return "", &AMQPError{Code: amqp091.CommandInvalid, Silent: true,
			Text: "COMMAND_INVALID - invalid authentication mechanism '" + mechanism + "'"}
	default:
		return "", &AMQPError{Code: amqp091.CommandInvalid, Silent: true,
			Text: "COMMAND_INVALID - unknown authentication mechanism '" + mechanism + "'"}
	}
	return s.login(mechanism, name, password, peer)
}

func (s *Store) login(mechanism string, name, password []byte, peer netip.Addr) (string, error) {
	if len(password) == 0 {
		n := string(name)
		return "", refused(mechanism, n, "user '"+n+"' attempted to log in with a blank password, "+
			"which is prohibited by the internal authN backend. To use TLS/x509 certificate-based "+
			"authentication, see the rabbitmq_auth_mechanism_ssl plugin and configure the client to use "+
			"the EXTERNAL authentication mechanism. Alternatively change the password for the user to be non-blank.")
	}
	s.mu.RLock()
	u := s.users[string(name)]
	loopbackOnly := u != nil && s.loopback[u.name]
	s.mu.RUnlock()
	if u == nil || !matchHash(u.hash, u.hashing, string(password)) {
		return "", invalidCredentials(mechanism, string(name))
	}
	return s.loopbackRule(mechanism, u.name, loopbackOnly, peer)
}

func (s *Store) loopbackRule(mechanism, name string, loopbackOnly bool, peer netip.Addr) (string, error) {
	if loopbackOnly && !peer.IsLoopback() { // IsLoopback unmaps ::ffff:127.x itself
		return "", refused(mechanism, name, "user '"+name+"' can only connect via localhost")
	}
	return name, nil
}

// parsePLAIN splits "\x00user\x00password" as RabbitMQ does: the authzid
// must be empty (RabbitMQ refuses "authz\x00user\x00password" as a syntax
// error, and so do we), and nothing may follow the password.
func parsePLAIN(b []byte) (name, password []byte, ok bool) {
	if len(b) == 0 || b[0] != 0 {
		return nil, nil, false
	}
	b = b[1:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, false
	}
	name, b = b[:i], b[i+1:]
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, nil, false
	}
	return name, b, true
}

// parseAMQPLAIN reads RabbitMQ's AMQPLAIN response: a field table without
// its 4-byte length (as amqp091-go and py-amqp send it), whose first LOGIN
// and first PASSWORD fields are longstrs.
func (s *Store) parseAMQPLAIN(b []byte) (name, password []byte, err error) {
	var login, pass amqp091.Value
	var haveLogin, havePass bool
	it := amqp091.Table(b).Iter()
	for it.Next() {
		switch k := it.Key(); {
		case !haveLogin && string(k) == "LOGIN":
			login, haveLogin = it.Value(), true
		case !havePass && string(k) == "PASSWORD":
			pass, havePass = it.Value(), true
		}
	}
	if it.Err() != nil {
		// RabbitMQ's table parser crashes on this; the connection is
		// closed without a word all the same.
		return nil, nil, syntaxError("AMQPLAIN response is not a field table: " + it.Err().Error())
	}
	if !haveLogin || !havePass {
		return nil, nil, syntaxError("AMQPLAIN auth info is missing LOGIN or PASSWORD field")
	}
	loginStr, passStr := login.Type == amqp091.TypeLongstr, pass.Type == amqp091.TypeLongstr
	switch {
	case loginStr && passStr:
		return login.Bytes(), pass.Bytes(), nil
	case !loginStr && !passStr:
		return nil, nil, syntaxError("AMQPLAIN auth info uses unsupported type for LOGIN or PASSWORD field")
	}
	// RabbitMQ lets a table with one string through and then fails inside
	// its backend: a refused login.
	n := ""
	if loginStr {
		n = string(login.Bytes())
	}
	return nil, nil, refused(AMQPLAIN, n, "User '"+n+"' authentication failed with internal error. "+
		"Enable debug logs to see the real error.")
}

func (s *Store) external(peer netip.Addr, conn *tls.ConnectionState) (string, error) {
	switch {
	case conn == nil:
		return "", refused(EXTERNAL, "", "not a TLS-enabled connection")
	case len(conn.PeerCertificates) == 0:
		return "", refused(EXTERNAL, "", "connection peer presented no TLS (x.509) certificate")
	case len(conn.VerifiedChains) == 0:
		// RabbitMQ insists on verify_peer before it trusts a name from a
		// certificate.
		return "", refused(EXTERNAL, "", "TLS configuration is unsafe")
	}
	s.mu.RLock()
	from := s.certLogin
	s.mu.RUnlock()
	name, ok := certName(conn.PeerCertificates[0], from)
	if !ok {
		return "", refused(EXTERNAL, "", "no name found")
	}
	s.mu.RLock()
	u := s.users[name]
	loopbackOnly := u != nil && s.loopback[u.name]
	s.mu.RUnlock()
	if u == nil {
		return "", invalidCredentials(EXTERNAL, name)
	}
	return s.loopbackRule(EXTERNAL, u.name, loopbackOnly, peer)
}

func syntaxError(text string) *AMQPError {
	return &AMQPError{Code: amqp091.SyntaxError, Text: "SYNTAX_ERROR - " + text, Silent: true}
}

// erlangBinary writes b as Erlang's ~p does a binary that is not printable
// text, <<0,117,...>>, as RabbitMQ logs it; cut at 64 bytes.
func erlangBinary(b []byte) string {
	const max = 64
	out := []byte("<<")
	for i, c := range b {
		if i == max {
			out = append(out, ",..."...)
			break
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return string(append(out, ">>"...))
}
