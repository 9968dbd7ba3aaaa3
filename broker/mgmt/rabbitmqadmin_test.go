package mgmt

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rabbitmqadmin finds RabbitMQ 3.10's CLI for the management API: Debian's
// rabbitmq-server installs it as /usr/bin/rabbitmqadmin, and the plugin
// serves the same script from priv/www/cli.
func rabbitmqadmin(t *testing.T) (python, script string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found (CI=true)", what)
		}
		t.Skipf("%s not found; install Debian's rabbitmq-server and python3 to run this test", what)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		missing("python3")
	}
	if p, err := exec.LookPath("rabbitmqadmin"); err == nil {
		return python, p
	}
	m, _ := filepath.Glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/plugins/rabbitmq_management-*/priv/www/cli/rabbitmqadmin")
	if len(m) == 0 {
		missing("rabbitmqadmin")
	}
	return python, m[len(m)-1]
}

// TestRabbitmqadmin runs rabbitmqadmin against the handler:
//
//	python3 /usr/bin/rabbitmqadmin -H 127.0.0.1 -P PORT -u guest -p guest -f raw_json list queues
func TestRabbitmqadmin(t *testing.T) {
	python, script := rabbitmqadmin(t)
	fx := newFixture()
	srv := httptest.NewServer(fx.h)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	run := func(args ...string) []byte {
		t.Helper()
		a := append([]string{script, "-H", u.Hostname(), "-P", u.Port(), "-u", "guest", "-p", "guest"}, args...)
		out, err := exec.Command(python, a...).CombinedOutput()
		if err != nil {
			t.Fatalf("rabbitmqadmin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	list := func(what, key string) []string {
		t.Helper()
		var items []map[string]any
		out := run("-f", "raw_json", "list", what)
		if err := json.Unmarshal(out, &items); err != nil {
			t.Fatalf("list %s: %v\n%s", what, err, out)
		}
		var got []string
		for _, it := range items {
			s, _ := it[key].(string)
			got = append(got, s)
		}
		return got
	}
	if got := list("queues", "name"); !slices.Equal(got, []string{"amq.gen-8r8S4tWjtr5bc-34QJgOSA", "pq", "work"}) {
		t.Errorf("queues: %v", got)
	}
	if got := list("exchanges", "name"); len(got) != 9 || got[4] != "px" {
		t.Errorf("exchanges: %v", got)
	}
	if got := list("connections", "name"); !slices.Equal(got, []string{conn1, conn2}) {
		t.Errorf("connections: %v", got)
	}
	if got := list("vhosts", "name"); !slices.Equal(got, []string{"/", "app"}) {
		t.Errorf("vhosts: %v", got)
	}
	// The table format reads nested columns (queue_totals.messages).
	if out := string(run("show", "overview")); !strings.Contains(out, "3.10.8") || !strings.Contains(out, "| 20 ") {
		t.Errorf("show overview:\n%s", out)
	}
	if out := string(run("-V", "/", "list", "queues", "name", "messages_ready")); !strings.Contains(out, "| pq ") || strings.Contains(out, "work") {
		t.Errorf("list queues in /:\n%s", out)
	}
	if out := string(run("close", "connection", "name="+conn1)); !strings.Contains(out, "connection closed") {
		t.Errorf("close connection: %s", out)
	}
	if want := []string{conn1 + "|Closed via management plugin"}; !slices.Equal(fx.src.closed, want) {
		t.Errorf("closed %v", fx.src.closed)
	}
}
