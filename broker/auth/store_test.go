package auth

import (
	"errors"
	"slices"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/state"
)

func TestDefaultStore(t *testing.T) {
	s := NewDefaultStore()
	if !s.VHostExists("/") {
		t.Fatal(`no vhost "/"`)
	}
	if !s.CheckPassword("guest", "guest") || s.CheckPassword("guest", "Guest") {
		t.Fatal("guest's password is not guest")
	}
	users := s.Users()
	if len(users) != 1 || users[0].Name != "guest" || !slices.Equal(users[0].Tags, []string{"administrator"}) ||
		users[0].HashingAlgorithm != HashingSHA256 {
		t.Fatalf("users = %+v", users)
	}
	want := []state.Permission{{User: "guest", VHost: "/", Configure: ".*", Write: ".*", Read: ".*"}}
	if got := s.Permissions(); !slices.Equal(got, want) {
		t.Fatalf("permissions = %+v, want %+v", got, want)
	}
	if v := s.VHosts(); len(v) != 1 || v[0].Description != "Default virtual host" {
		t.Fatalf("vhosts = %+v", v)
	}
}

func TestSetPermissionsNeedsUserAndVHost(t *testing.T) {
	s := NewStore()
	if err := s.SetPermissions("u", "/", ".*", ".*", ".*"); err == nil || err.Error() != "auth: no such user 'u'" {
		t.Fatalf("unknown user: %v", err)
	}
	s.PutUser("u", "p", nil)
	if err := s.SetPermissions("u", "v", ".*", ".*", ".*"); err == nil || err.Error() != "auth: no such vhost 'v'" {
		t.Fatalf("unknown vhost: %v", err)
	}
	s.PutVHost("v", "", nil)
	if err := s.SetPermissions("u", "v", ".*", "(", ".*"); err == nil {
		t.Fatal("bad regexp accepted")
	} else if re := (*RegexpError)(nil); !errors.As(err, &re) || re.Pattern != "(" {
		t.Fatalf("bad regexp: %v", err)
	}
	if len(s.Permissions()) != 0 {
		t.Fatal("a failed SetPermissions left permissions")
	}
	// PCRE look-ahead, which RabbitMQ takes, is one RE2 refuses.
	if err := s.SetPermissions("u", "v", "^(?!amq\\.).*", ".*", ".*"); err == nil {
		t.Fatal("look-ahead accepted")
	}
}

func TestDeleteCascades(t *testing.T) {
	s := NewStore()
	s.PutUser("u", "p", nil)
	s.PutUser("w", "p", nil)
	s.PutVHost("a", "", nil)
	s.PutVHost("b", "", nil)
	for _, u := range []string{"u", "w"} {
		for _, v := range []string{"a", "b"} {
			if err := s.SetPermissions(u, v, ".*", ".*", ".*"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !s.DeleteUser("u") || s.DeleteUser("u") {
		t.Fatal("DeleteUser results")
	}
	if !s.DeleteVHost("a") || s.DeleteVHost("a") {
		t.Fatal("DeleteVHost results")
	}
	want := []state.Permission{{User: "w", VHost: "b", Configure: ".*", Write: ".*", Read: ".*"}}
	if got := s.Permissions(); !slices.Equal(got, want) {
		t.Fatalf("permissions = %+v, want %+v", got, want)
	}
	s.ClearPermissions("w", "b")
	if len(s.Permissions()) != 0 {
		t.Fatal("ClearPermissions left them")
	}
}

func TestCheckVHostAccess(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "p", nil)
	cases := []struct {
		user, vhost string
		code        uint16
		text        string
	}{
		{"guest", "/", 0, ""},
		{"guest", "nope", 530, "NOT_ALLOWED - vhost nope not found"},
		{"u", "/", 530, "NOT_ALLOWED - access to vhost '/' refused for user 'u'"},
	}
	for _, c := range cases {
		assertAMQPError(t, c.user+"@"+c.vhost, s.CheckVHostAccess(c.user, c.vhost), c.code, c.text)
	}
	// Any permissions at all open the vhost, even ones that grant nothing.
	if err := s.SetPermissions("u", "/", "", "", ""); err != nil {
		t.Fatal(err)
	}
	assertAMQPError(t, "empty patterns", s.CheckVHostAccess("u", "/"), 0, "")
}

func assertAMQPError(t *testing.T, what string, err error, code uint16, text string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	}
	var ae *AMQPError
	if !errors.As(err, &ae) {
		t.Errorf("%s: %v (%T), want AMQPError %d %q", what, err, err, code, text)
		return
	}
	if ae.Code != code || ae.Text != text {
		t.Errorf("%s: %d %q, want %d %q", what, ae.Code, ae.Text, code, text)
	}
}

// The pattern cases were run against RabbitMQ 3.10.8 (TestLiveCheck runs
// them again there when it is up).
var patternCases = []struct {
	pattern string
	name    string
	ok      bool
}{
	{"q", "aqb", true}, // unanchored
	{"q", "zzz", false},
	{"^q$", "aqb", false},
	{"", "", true}, // "" is "^$"
	{"", "a", false},
	{".*", "anything", true},
	{"^(.|qq)$", "a", true},
	{"^(.|qq)$", "qq", true},
	{"^(.|qq)$", "Qq", false},                 // case matters
	{"^(.|qq)$", "é", false},                  // byte-wise: two bytes
	{"^..$", "é", true},                       // byte-wise: two bytes
	{"^é$", "é", true},                        // non-ASCII patterns match their bytes
	{"^[é]$", "\xc3", true},                   // a class of bytes, as PCRE sees it
	{"amq\\.default", "my-amq.default", true}, // not amq.*: RabbitMQ reserves those names
	{"amq\\.default", "my-amqxdefault", false},
	{"^(a|b)+$", "abba", true},
	{"\\d+", "q1", true},
	{"^\\w+$", "é", false},
}

func TestPatterns(t *testing.T) {
	for _, c := range patternCases {
		p, err := compilePattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := p.match(c.name); got != c.ok {
			t.Errorf("%q on %q: %v, want %v", c.pattern, c.name, got, c.ok)
		}
	}
}

func TestCheck(t *testing.T) {
	s := NewStore()
	s.PutVHost("/", "", nil)
	s.PutVHost("v", "", nil)
	s.PutUser("u", "p", nil)
	if err := s.SetPermissions("u", "/", "^conf", "^write|^amq\\.default$", "^read"); err != nil {
		t.Fatal(err)
	}
	refusedText := func(kind, name, vhost string) string {
		return "ACCESS_REFUSED - access to " + kind + " '" + name + "' in vhost '" + vhost + "' refused for user 'u'"
	}
	cases := []struct {
		vhost      string
		p          Perm
		kind, name string
		ok         bool
		text       string
	}{
		{"/", Configure, "queue", "conf-q", true, ""},
		{"/", Configure, "queue", "write-q", false, refusedText("queue", "write-q", "/")},
		{"/", Write, "exchange", "write-x", true, ""},
		{"/", Write, "exchange", "", true, ""}, // the default exchange is amq.default
		{"/", Read, "exchange", "", false, refusedText("exchange", "amq.default", "/")},
		{"/", Read, "queue", "read-q", true, ""},
		{"/", Read, "queue", "conf-q", false, refusedText("queue", "conf-q", "/")},
		{"v", Read, "queue", "read-q", false, refusedText("queue", "read-q", "v")}, // no permissions there
		{"/", Perm(7), "queue", "read-q", false, refusedText("queue", "read-q", "/")},
	}
	for _, c := range cases {
		code := uint16(0)
		if !c.ok {
			code = 403
		}
		assertAMQPError(t, c.p.String()+" "+c.kind+" "+c.name+"@"+c.vhost, s.Check("u", c.vhost, c.p, c.kind, c.name), code, c.text)
	}
	// Permissions replaced take effect at once.
	if err := s.SetPermissions("u", "/", "", "", ".*"); err != nil {
		t.Fatal(err)
	}
	if s.Check("u", "/", Configure, "queue", "conf-q") == nil || s.Check("u", "/", Read, "queue", "conf-q") != nil {
		t.Fatal("new permissions not in force")
	}
}

func TestCheckAllocs(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "p", nil)
	if err := s.SetPermissions("u", "/", "^app\\.[a-z]+$", "^app\\.", "^app\\."); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ user, name string }{{"guest", "orders"}, {"u", "app.orders"}} {
		n := testing.AllocsPerRun(1000, func() {
			if s.Check(c.user, "/", Configure, "queue", c.name) != nil {
				t.Fatal("refused")
			}
		})
		if n != 0 {
			t.Errorf("Check(%s, %s) allocates %v times", c.user, c.name, n)
		}
	}
	n := testing.AllocsPerRun(1000, func() {
		if s.CheckVHostAccess("guest", "/") != nil {
			t.Fatal("refused")
		}
	})
	if n != 0 {
		t.Errorf("CheckVHostAccess allocates %v times", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	s := NewDefaultStore()
	s.PutUser("u", "p", nil)
	if err := s.SetPermissions("u", "/", "^app\\.[a-z]+$", "^app\\.", "^app\\."); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ label, user, name string }{{"all", "guest", "orders"}, {"regexp", "u", "app.orders"}} {
		b.Run(c.label, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if s.Check(c.user, "/", Configure, "queue", c.name) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if s.Check("u", "/", Write, "exchange", "app.x") != nil {
					b.Fatal("refused")
				}
			}
		})
	})
}

// TestConcurrentUse runs checks while permissions, users and vhosts change
// (go test -race finds unguarded state).
func TestConcurrentUse(t *testing.T) {
	s := NewDefaultStore()
	s.PutUser("u", "p", nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			_ = s.SetPermissions("u", "/", "^a", ".*", "")
			s.PutVHost("v", "", nil)
			s.DeleteVHost("v")
			s.PutUser("w", "p", []string{"t"})
			_ = s.SetTopicPermissions("u", "/", "amq.topic", ".*", ".*")
			s.DeleteUser("w")
		}
	}()
	for i := 0; i < 200; i++ {
		_ = s.Check("u", "/", Configure, "queue", "a")
		_ = s.CheckTopic("u", "/", "amq.topic", Write, "k")
		_ = s.CheckVHostAccess("u", "/")
		_, _ = s.Authenticate(PLAIN, []byte("\x00u\x00p"), loopback, nil)
		_ = s.Users()
		_ = s.Permissions()
		_ = s.TopicPermissions()
	}
	<-done
}
