package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/internal/rabbitlive"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The live tests run against the RabbitMQ of .ci/services.sh and compare
// its answers with the Store's. They skip when it is not there, and fail
// then under CI=true.

// rabbit is the live node, with the helpers these tests add.
type rabbit struct{ *rabbitlive.Node }

func liveRabbit(t *testing.T) *rabbit { return &rabbit{rabbitlive.Need(t)} }

func (r *rabbit) ctl(args ...string) string { r.T.Helper(); return r.Ctl(args...) }

// importJSON imports doc with rabbitmqctl, from a file it can read when
// it runs as another user.
func (r *rabbit) importJSON(doc []byte) {
	r.T.Helper()
	dir, err := os.MkdirTemp("", "wt-auth-test-")
	if err != nil {
		r.T.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		r.T.Fatal(err)
	}
	file := filepath.Join(dir, "import.json")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		r.T.Fatal(err)
	}
	r.ctl("import_definitions", file)
}

// tempUser adds a user of a unique name (the server is shared) that the
// test's end deletes.
func (r *rabbit) tempUser(password string) string {
	var b [6]byte
	rand.Read(b[:])
	name := "wt-auth-test-" + hex.EncodeToString(b[:])
	r.ctl("add_user", name, password)
	r.T.Cleanup(func() {
		exec.Command("rabbitmqctl", "-q", "-n", r.Name, "delete_user", name).Run()
	})
	return name
}

func (r *rabbit) dial(user, password, vhost string) (*amqp.Connection, error) {
	u := url.URL{Scheme: "amqp", User: url.UserPassword(user, password), Host: r.Host, Path: "/" + vhost}
	return amqp.Dial(u.String())
}

func TestLiveHashes(t *testing.T) {
	r := liveRabbit(t)
	passwords := map[string]string{}
	for _, p := range []string{"pässwörd", "a longer password with spaces and symbols !@#$%^&*()"} {
		passwords[r.tempUser(p)] = p
	}
	raw := []byte(r.ctl("export_definitions", "-"))
	var defs struct {
		Users []struct {
			Name             string   `json:"name"`
			PasswordHash     string   `json:"password_hash"`
			HashingAlgorithm string   `json:"hashing_algorithm"`
			Tags             []string `json:"tags"`
		} `json:"users"`
	}
	if err := json.Unmarshal(raw, &defs); err != nil {
		t.Fatal(err)
	}
	s := NewStore()
	found := 0
	for _, u := range defs.Users {
		p, ok := passwords[u.Name]
		if !ok {
			continue
		}
		found++
		if err := s.PutUserHash(u.Name, u.PasswordHash, u.HashingAlgorithm, u.Tags); err != nil {
			t.Fatal(err)
		}
		if !s.CheckPassword(u.Name, p) {
			t.Errorf("RabbitMQ's hash %s (%s) does not check %q", u.PasswordHash, u.HashingAlgorithm, p)
		}
		if s.CheckPassword(u.Name, p+"x") {
			t.Errorf("%s: a wrong password checks", u.Name)
		}
	}
	if found != len(passwords) {
		t.Fatalf("export has %d of the %d users", found, len(passwords))
	}
	// And the other way: a hash we made logs in to RabbitMQ.
	var b [6]byte
	rand.Read(b[:])
	name := "wt-auth-test-" + hex.EncodeToString(b[:])
	imp, _ := json.Marshal(map[string]any{
		"users": []map[string]any{{"name": name, "password_hash": HashPassword("ours", newSalt()),
			"hashing_algorithm": HashingSHA256, "tags": []string{}}},
		"permissions": []map[string]any{{"user": name, "vhost": "/", "configure": "^$", "write": "^$", "read": "^$"}},
	})
	r.importJSON(imp)
	t.Cleanup(func() { exec.Command("rabbitmqctl", "-q", "-n", r.Name, "delete_user", name).Run() })
	c, err := r.dial(name, "ours", "")
	if err != nil {
		t.Fatalf("RabbitMQ refuses our hash: %v", err)
	}
	c.Close()
}

// TestLiveCheck sets each pattern of patternCases on RabbitMQ and on a
// Store and declares the queue: both must agree, in outcome and text.
func TestLiveCheck(t *testing.T) {
	r := liveRabbit(t)
	byPattern := map[string][]string{}
	var order []string
	for _, c := range patternCases {
		// queue.declare "" asks for a server-made name, and RabbitMQ
		// refuses names that are not UTF-8 (501 FRAME_ERROR).
		if c.name == "" || !utf8.ValidString(c.name) {
			continue
		}
		if _, ok := byPattern[c.pattern]; !ok {
			order = append(order, c.pattern)
		}
		byPattern[c.pattern] = append(byPattern[c.pattern], c.name)
	}
	// One user per pattern, made with one import (rabbitmqctl is slow).
	s := NewStore()
	s.PutVHost("/", "", nil)
	base := r.tempUser("pw")
	var users, perms []map[string]any
	for i, pattern := range order {
		user := base + "-" + strconv.Itoa(i)
		users = append(users, map[string]any{"name": user, "password": "pw", "tags": []string{}})
		perms = append(perms, map[string]any{"user": user, "vhost": "/", "configure": pattern, "write": "^$", "read": "^$"})
		s.PutUser(user, "pw", nil)
		if err := s.SetPermissions(user, "/", pattern, "^$", "^$"); err != nil {
			t.Fatal(err)
		}
	}
	doc, _ := json.Marshal(map[string]any{"users": users, "permissions": perms})
	r.importJSON(doc)
	t.Cleanup(func() {
		exec.Command("rabbitmqctl", "-q", "-n", r.Name, "eval",
			`[rabbit_auth_backend_internal:delete_user(<<"`+base+`-", (integer_to_binary(I))/binary>>, <<"wiretap-test">>) || I <- lists:seq(0, `+
				strconv.Itoa(len(order)-1)+`)].`).Run()
	})
	for i, pattern := range order {
		user := base + "-" + strconv.Itoa(i)
		conn, err := r.dial(user, "pw", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range byPattern[pattern] {
			ch, err := conn.Channel()
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := ch.QueueDeclare(name, false, true, true, false, nil)
			ours := s.Check(user, "/", Configure, "queue", name)
			compare(t, pattern+" on "+name, rerr, ours)
			if rerr == nil {
				ch.Close()
			}
		}
		conn.Close()
	}
}

// compare checks that RabbitMQ's channel or connection error and ours
// are the same refusal, or both nil.
func compare(t *testing.T, what string, rabbitErr, ours error) {
	t.Helper()
	var re *amqp.Error
	var ae *AMQPError
	switch {
	case rabbitErr == nil && ours == nil:
	case rabbitErr == nil || ours == nil:
		t.Errorf("%s: RabbitMQ %v, ours %v", what, rabbitErr, ours)
	case !errors.As(rabbitErr, &re) || !errors.As(ours, &ae):
		t.Errorf("%s: RabbitMQ %v, ours %v", what, rabbitErr, ours)
	case uint16(re.Code) != ae.Code || re.Reason != ae.Text:
		t.Errorf("%s:\nRabbitMQ %d %q\nours     %d %q", what, re.Code, re.Reason, ae.Code, ae.Text)
	}
}

// TestLiveOperations checks the permission table of doc.go where it says
// "none" or names the default exchange, and connection.open's texts.
func TestLiveOperations(t *testing.T) {
	r := liveRabbit(t)
	user := r.tempUser("pw")
	s := NewStore()
	s.PutVHost("/", "", nil)
	s.PutUser(user, "pw", nil)

	conn, err := r.dial(user, "pw", "")
	compare(t, "no permissions", err, s.CheckVHostAccess(user, "/"))
	if err == nil {
		conn.Close()
	}
	_, err = r.dial(user, "pw", "wt-auth-no-such-vhost")
	compare(t, "no vhost", err, s.CheckVHostAccess(user, "wt-auth-no-such-vhost"))

	// A queue the user may not configure, declared by guest.
	guest, err := r.dial("guest", "guest", "")
	if err != nil {
		t.Skip("guest cannot log in:", err)
	}
	defer guest.Close()
	gch, err := guest.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := "wt-auth-test-passive-" + user[len(user)-6:]
	if _, err := gch.QueueDeclare(q, false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	defer gch.QueueDelete(q, false, false, false)

	r.ctl("set_permissions", "-p", "/", user, "^nothing$", "^$", "^$")
	if err := s.SetPermissions(user, "/", "^nothing$", "^$", "^$"); err != nil {
		t.Fatal(err)
	}
	conn, err = r.dial(user, "pw", "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	op := func(what string, f func(*amqp.Channel) error, ours error) {
		t.Helper()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		rerr := f(ch)
		compare(t, what, rerr, ours)
		if rerr == nil {
			ch.Close()
		}
	}
	op("passive declare", func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(q, false, true, false, false, nil)
		return err
	}, nil) // no check
	op("delete", func(ch *amqp.Channel) error { _, err := ch.QueueDelete(q, false, false, false); return err },
		s.Check(user, "/", Configure, "queue", q))
	// The publish error comes back on the next synchronous call.
	op("publish to the default exchange", func(ch *amqp.Channel) error {
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ch.Publish("", q, false, false, amqp.Publishing{Body: []byte("x")})
		_, err := ch.QueueDeclarePassive(q, false, true, false, false, nil)
		if err == amqp.ErrClosed {
			// The refusal closed the channel before the declare went out:
			// the reason is the channel's close.
			if e := <-closed; e != nil {
				return e
			}
		}
		return err
	}, s.Check(user, "/", Write, "exchange", ""))
	op("publish to a missing exchange", func(ch *amqp.Channel) error {
		closed := ch.NotifyClose(make(chan *amqp.Error, 1))
		ch.Publish("wt-auth-no-such-exchange", q, false, false, amqp.Publishing{Body: []byte("x")})
		_, err := ch.QueueDeclarePassive(q, false, true, false, false, nil)
		if err == amqp.ErrClosed {
			if e := <-closed; e != nil {
				return e
			}
		}
		return err
	}, s.Check(user, "/", Write, "exchange", "wt-auth-no-such-exchange"))
	op("consume", func(ch *amqp.Channel) error { _, err := ch.Consume(q, "", true, false, false, false, nil); return err },
		s.Check(user, "/", Read, "queue", q))
	op("reply-to consume", func(ch *amqp.Channel) error {
		_, err := ch.Consume("amq.rabbitmq.reply-to", "", true, false, false, false, nil)
		return err
	}, nil) // no check
	op("bind", func(ch *amqp.Channel) error { return ch.QueueBind(q, "k", "amq.direct", false, nil) },
		s.Check(user, "/", Write, "queue", q)) // write on the queue comes first
}

// TestLiveLogin compares start-ok outcomes on the wire.
func TestLiveLogin(t *testing.T) {
	r := liveRabbit(t)
	user := r.tempUser("pw")
	s := NewStore()
	s.PutUser(user, "pw", nil)
	s.SetLoopbackUsers() // .ci/services.sh sets loopback_users = none

	mechanisms, close := r.startOk(t, PLAIN, []byte("\x00"+user+"\x00bad"), true)
	// The set, not the order: RabbitMQ's order follows its registry table
	// and changes with the plugins loaded.
	if got, want := sortedFields(mechanisms), sortedFields(s.MechanismList(false)); !slices.Equal(got, want) {
		t.Errorf("RabbitMQ offers %q, we %q", mechanisms, s.MechanismList(false))
	}
	_, err := s.Authenticate(PLAIN, []byte("\x00"+user+"\x00bad"), loopback, nil)
	var le *LoginError
	if !errors.As(err, &le) {
		t.Fatalf("bad password: %v", err)
	}
	if want := le.AMQPError(); close == nil || close.ReplyCode != want.Code || string(close.ReplyText) != want.Text {
		t.Errorf("bad password: RabbitMQ closed with %+v, we %+v", close, want)
	}
	// Without authentication_failure_close RabbitMQ says nothing.
	if _, close := r.startOk(t, AMQPLAIN, amqplain(amqp091.StringValue(user), amqp091.StringValue("bad")), false); close != nil {
		t.Errorf("RabbitMQ sent %+v to a client without authentication_failure_close", close)
	}
	// An authzid is a syntax error, which RabbitMQ does not answer.
	if _, close := r.startOk(t, PLAIN, []byte(user+"\x00"+user+"\x00pw"), true); close != nil {
		t.Errorf("authzid: RabbitMQ sent %+v", close)
	}
	var ae *AMQPError
	if _, err := s.Authenticate(PLAIN, []byte(user+"\x00"+user+"\x00pw"), loopback, nil); !errors.As(err, &ae) || !ae.Silent {
		t.Errorf("authzid: ours %v", err)
	}
}

// startOk opens a raw connection, answers connection.start with the
// mechanism and response, and returns the offered mechanisms and the
// connection.close that came back, if any.
func (r *rabbit) startOk(t *testing.T, mechanism string, response []byte, failureClose bool) (string, *amqp091.ConnectionClose) {
	t.Helper()
	c, err := net.Dial("tcp", r.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
		t.Fatal(err)
	}
	fr := amqp091.NewFrameReader(c)
	var md amqp091.MethodDecoder
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	m, err := md.Decode(f.Payload)
	start, ok := m.(*amqp091.ConnectionStart)
	if err != nil || !ok {
		t.Fatalf("first frame: %v %v", m, err)
	}
	mechanisms := string(start.Mechanisms)
	var caps amqp091.Table
	if failureClose {
		caps = caps.Append("authentication_failure_close", amqp091.BoolValue(true))
	}
	props := amqp091.Table(nil).Append("capabilities", amqp091.TableValue(caps))
	out := amqp091.AppendMethodFrame(nil, 0, &amqp091.ConnectionStartOk{
		ClientProperties: props, Mechanism: []byte(mechanism), Response: response, Locale: []byte("en_US")})
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	f, err = fr.ReadFrame()
	if err != nil {
		return mechanisms, nil // closed without a word
	}
	m, err = md.Decode(f.Payload)
	if cl, ok := m.(*amqp091.ConnectionClose); ok && err == nil {
		return mechanisms, &amqp091.ConnectionClose{ReplyCode: cl.ReplyCode, ReplyText: bytes.Clone(cl.ReplyText)}
	}
	t.Fatalf("after start-ok: %v %v", m, err)
	return "", nil
}

// sortedFields is s's space-separated fields, sorted.
func sortedFields(s string) []string {
	f := strings.Fields(s)
	slices.Sort(f)
	return f
}
