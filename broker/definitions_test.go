package broker

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/definitions"
)

// TestDefinitionsRoundTrip: a real RabbitMQ export loads, its topology
// works, and the broker's export holds what was loaded.
func TestDefinitionsRoundTrip(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("definitions", "testdata", "rabbitmq-3.10.8.json"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := definitions.Parse(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := startBroker(t, Config{})
	warns, err := b.LoadDefinitions(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Policies) > 0 && !strings.Contains(strings.Join(warns, "\n"), "policies not applied") {
		t.Fatalf("warnings %q: the policies were not reported", warns)
	}
	out := b.Definitions("")
	key := func(parts ...string) string { return strings.Join(parts, "|") }
	set := func(keys []string) string { sort.Strings(keys); return strings.Join(keys, "\n") }
	var want, got []string
	for _, q := range in.Queues {
		want = append(want, key(q.VHost, q.Name))
	}
	for _, q := range out.Queues {
		got = append(got, key(q.VHost, q.Name))
	}
	if set(want) != set(got) {
		t.Fatalf("queues:\n%s\nwant:\n%s", set(got), set(want))
	}
	want, got = nil, nil
	for _, x := range in.Exchanges {
		want = append(want, key(x.VHost, x.Name, x.Type))
	}
	for _, x := range out.Exchanges {
		got = append(got, key(x.VHost, x.Name, x.Type))
	}
	if set(want) != set(got) {
		t.Fatalf("exchanges:\n%s\nwant:\n%s", set(got), set(want))
	}
	want, got = nil, nil
	for _, bd := range in.Bindings {
		want = append(want, key(bd.VHost, bd.Source, bd.Destination, bd.DestinationType, bd.RoutingKey))
	}
	for _, bd := range out.Bindings {
		got = append(got, key(bd.VHost, bd.Source, bd.Destination, bd.DestinationType, bd.RoutingKey))
	}
	if set(want) != set(got) {
		t.Fatalf("bindings:\n%s\nwant:\n%s", set(got), set(want))
	}
	for _, u := range in.Users {
		found := false
		for _, o := range out.Users {
			if o.Name == u.Name && o.PasswordHash == u.PasswordHash {
				found = true
			}
		}
		if !found {
			t.Fatalf("user %s and its hash did not survive the round trip", u.Name)
		}
	}
	// The export reads back as definitions again.
	exported, err := b.ExportDefinitions("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := definitions.Parse(strings.NewReader(string(exported))); err != nil {
		t.Fatalf("the export does not parse: %v", err)
	}
}
