package auth

import (
	"slices"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestCheckTopic(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "p", nil)
	if err := s.SetTopicPermissions("u", "/", "amq.topic", "^{username}\\.{vhost}", "^read\\."); err != nil {
		t.Fatal(err)
	}
	text := func(rk string) string {
		return "ACCESS_REFUSED - access to topic '" + rk + "' in exchange 'amq.topic' in vhost '/' refused for user 'u'"
	}
	for _, c := range []struct {
		exchange string
		p        Perm
		rk       string
		text     string
	}{
		{"amq.topic", Write, "u./.x", ""},
		{"amq.topic", Write, "w./.x", text("w./.x")},
		{"amq.topic", Read, "read.a", ""},
		{"amq.topic", Read, "u./.x", text("u./.x")},
		{"amq.topic", Configure, "read.a", text("read.a")},
		{"other", Write, "anything", ""}, // no topic permissions there
	} {
		code := uint16(0)
		if c.text != "" {
			code = 403
		}
		assertAMQPError(t, c.p.String()+" "+c.rk, s.CheckTopic("u", "/", c.exchange, c.p, c.rk), code, c.text)
	}
	want := []TopicPermission{{User: "u", VHost: "/", Exchange: "amq.topic", Write: "^{username}\\.{vhost}", Read: "^read\\."}}
	if got := s.TopicPermissions(); !slices.Equal(got, want) {
		t.Fatalf("%+v", got)
	}
	if err := s.SetTopicPermissions("nobody", "/", "x", "", ""); err == nil {
		t.Fatal("unknown user")
	}
	s.DeleteUser("u")
	if len(s.TopicPermissions()) != 0 {
		t.Fatal("DeleteUser left topic permissions")
	}
	n := testing.AllocsPerRun(100, func() { _ = s.CheckTopic("guest", "/", "amq.topic", Write, "a.b") })
	if n != 0 {
		t.Errorf("CheckTopic allocates %v times", n)
	}
}

func TestLiveTopic(t *testing.T) {
	r := liveRabbit(t)
	user := r.tempUser("pw")
	r.ctl("set_permissions", "-p", "/", user, "^wt-auth-test-", ".*", ".*")
	r.ctl("set_topic_permissions", "-p", "/", user, "amq.topic", "^{username}\\.", "^x$")
	s := NewStore()
	s.PutVHost("/", "", nil)
	s.PutUser(user, "pw", nil)
	if err := s.SetTopicPermissions(user, "/", "amq.topic", "^{username}\\.", "^x$"); err != nil {
		t.Fatal(err)
	}
	conn, err := r.dial(user, "pw", "")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	q := "wt-auth-test-topic-" + user[len(user)-6:]
	for _, c := range []struct {
		p  Perm
		rk string
	}{{Write, user + ".a"}, {Write, "other.a"}, {Read, "x"}, {Read, "y"}} {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare(q, false, true, true, false, nil); err != nil {
			t.Fatal(err)
		}
		var rerr error
		if c.p == Write {
			closed := ch.NotifyClose(make(chan *amqp.Error, 1))
			ch.Publish("amq.topic", c.rk, false, false, amqp.Publishing{Body: []byte("x")})
			_, rerr = ch.QueueDeclarePassive(q, false, true, true, false, nil)
			if rerr == amqp.ErrClosed {
				// The refusal closed the channel before the declare
				// went out: the reason is the channel's close.
				if e := <-closed; e != nil {
					rerr = e
				}
			}
		} else {
			rerr = ch.QueueBind(q, c.rk, "amq.topic", false, nil)
		}
		compare(t, c.p.String()+" "+c.rk, rerr, s.CheckTopic(user, "/", "amq.topic", c.p, c.rk))
		if rerr == nil {
			ch.Close()
		}
	}
}
