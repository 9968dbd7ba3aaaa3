package definitions

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/broker/auth"
)

const fixture = "testdata/rabbitmq-3.10.8.json" // made by testdata/gen.sh

func parseFile(t *testing.T, path string) (*Definitions, []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d, raw
}

// jsonValue decodes b for comparison, numbers kept as written.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := decodeNumbers(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// roundTrip writes d, parses that and checks both that nothing changed
// and that the JSON written is the JSON read (original).
func roundTrip(t *testing.T, d *Definitions, original []byte) {
	t.Helper()
	var out bytes.Buffer
	if err := d.Write(&out); err != nil {
		t.Fatal(err)
	}
	again, err := Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("parsing what Write wrote: %v\n%s", err, out.Bytes())
	}
	if !reflect.DeepEqual(d, again) {
		t.Errorf("changed by a round trip:\n%+v\n%+v", d, again)
	}
	if original != nil {
		a, b := jsonValue(t, original), jsonValue(t, out.Bytes())
		tagsAsArrays(a)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("Write differs from RabbitMQ's JSON:\nRabbitMQ %v\nours     %v", a, b)
		}
	}
}

// tagsAsArrays rewrites, in a decoded document, the one thing Write spells
// differently from RabbitMQ 3.10 on purpose: a vhost's metadata tags,
// which 3.10 writes as a comma-separated string ("" for none) and Write as
// an array, as 3.10 writes every other list of tags.
func tagsAsArrays(doc any) {
	top, _ := doc.(map[string]any)
	vhosts, _ := top["vhosts"].([]any)
	for _, v := range vhosts {
		meta, _ := v.(map[string]any)["metadata"].(map[string]any)
		if s, ok := meta["tags"].(string); ok {
			tags := []any{}
			for _, tag := range strings.Split(s, ",") {
				if tag = strings.TrimSpace(tag); tag != "" {
					tags = append(tags, tag)
				}
			}
			meta["tags"] = tags
		}
	}
}

func TestFixture(t *testing.T) {
	d, raw := parseFile(t, fixture)
	roundTrip(t, d, raw)

	if d.RabbitVersion != "3.10.8" || d.RabbitMQVersion != "3.10.8" {
		t.Errorf("versions %q %q", d.RabbitVersion, d.RabbitMQVersion)
	}
	// gen.sh gave the users passwords "<name>-password": the exported
	// hashes must check through broker/auth.
	s := auth.NewStore()
	users := map[string]User{}
	for _, u := range d.Users {
		users[u.Name] = u
		if err := s.PutUserHash(u.Name, u.PasswordHash, u.HashingAlgorithm, u.Tags); err != nil {
			t.Fatal(err)
		}
		if !s.CheckPassword(u.Name, u.Name+"-password") {
			t.Errorf("%s: password does not check", u.Name)
		}
	}
	// gen.sh gave the monitor's tags as a comma string; RabbitMQ exports
	// an array.
	if got := users["wiretap-defs-monitor"].Tags; !reflect.DeepEqual(got, Tags{"monitoring", "policymaker"}) {
		t.Errorf("monitor tags %q", got)
	}
	if got := users["wiretap-defs-app"].Limits["max-connections"]; got != json.Number("8") {
		t.Errorf("app's max-connections %v (%T)", got, got)
	}
	if len(d.VHosts) != 1 {
		t.Fatalf("vhosts %+v", d.VHosts)
	}
	v := d.VHosts[0]
	if desc, tags := v.Describe(); desc != "wiretap's definitions fixture" || !reflect.DeepEqual(tags, []string{"test", "wiretap"}) {
		t.Errorf("vhost description %q tags %q", desc, tags)
	}
	if v.Limits["max-queues"] != json.Number("256") {
		t.Errorf("vhost limits %v", v.Limits)
	}
	queues := map[string]Queue{}
	for _, q := range d.Queues {
		queues[q.Name] = q
	}
	if a := queues["orders"].Arguments; a["x-max-length"] != json.Number("10") || a["x-queue-mode"] != "lazy" {
		t.Errorf("orders arguments %v", a)
	}
	if q := queues["work.q"]; q.Type != "quorum" || q.Arguments["x-queue-type"] != "quorum" {
		t.Errorf("work.q %+v", q)
	}
	// The two bindings that differ only in their arguments are both
	// there, and the exchange-to-exchange one.
	var headerBindings, e2e int
	for _, b := range d.Bindings {
		if b.Source == "by-header" && b.Destination == "work.q" {
			headerBindings++
		}
		if b.DestinationType == "exchange" {
			e2e++
		}
	}
	if headerBindings != 2 || e2e != 1 {
		t.Errorf("bindings %+v", d.Bindings)
	}
	policies := map[string]Policy{}
	for _, p := range d.Policies {
		policies[p.Name] = p
	}
	if p := policies["wiretap-defs-ttl"]; p.Priority != 7 || p.ApplyTo != "queues" || p.Definition["message-ttl"] != json.Number("30000") {
		t.Errorf("ttl policy %+v", p)
	}
	if len(d.TopicPermissions) != 1 || d.TopicPermissions[0].Exchange != "events" {
		t.Errorf("topic permissions %+v", d.TopicPermissions)
	}
	if len(d.Parameters) != 1 || d.Parameters[0].Component != "vhost-limits" {
		t.Errorf("parameters %+v", d.Parameters)
	}
	if len(d.GlobalParameters) != 1 {
		t.Errorf("global parameters %+v", d.GlobalParameters)
	}
}

func TestWriteLayout(t *testing.T) {
	var out bytes.Buffer
	d := &Definitions{Queues: []Queue{{Name: "q<&>", VHost: "/"}}}
	if err := d.Write(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	// Empty sections are [], missing arguments {}, nothing HTML-escaped,
	// and the keys in RabbitMQ's order.
	for _, want := range []string{`"bindings": [],`, `"arguments": {},`, `"name": "q<&>",`, "\n  \"vhosts\": []\n}\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	order := []string{"bindings", "exchanges", "global_parameters", "parameters", "permissions", "policies",
		"queues", "topic_permissions", "users", "vhosts"}
	last := -1
	for _, k := range order {
		i := strings.Index(s, `"`+k+`"`)
		if i < last {
			t.Errorf("%s out of order", k)
		}
		last = i
	}
	if d.Queues[0].Arguments != nil {
		t.Error("Write changed the caller's queue")
	}
}

func TestParseLenient(t *testing.T) {
	// Older and hand-written forms RabbitMQ imports.
	doc := `{
		"rabbit_version": "3.5.7", "unknown_section": [1, 2], "users": [
		 {"name": "a", "password_hash": "", "tags": "administrator,management", "extra": true},
		 {"name": "b", "password": "clear", "tags": ""}],
		"vhosts": [{"name": "v", "description": "top", "tags": ["t"], "metadata": {"description": "meta", "tags": "m"},
		            "limits": {"max-queues": 3}},
		           {"name": "w", "metadata": {"description": "meta", "tags": "m1, m2", "default_queue_type": "quorum"}}],
		"policies": [{"vhost": "v", "name": "p", "pattern": ".*", "definition": {}}],
		"exchanges": [{"name": "x", "vhost": "v", "type": "direct", "internal": true}],
		"queues": null}`
	d, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.Users[0].Tags, Tags{"administrator", "management"}) || len(d.Users[1].Tags) != 0 || d.Users[1].Password != "clear" {
		t.Errorf("users %+v", d.Users)
	}
	if desc, tags := d.VHosts[0].Describe(); desc != "top" || !reflect.DeepEqual(tags, []string{"t"}) {
		t.Errorf("top-level description and tags win: %q %q", desc, tags)
	}
	if desc, tags := d.VHosts[1].Describe(); desc != "meta" || !reflect.DeepEqual(tags, []string{"m1", "m2"}) ||
		d.VHosts[1].Metadata.DefaultQueueType != "quorum" {
		t.Errorf("metadata: %q %q", desc, tags)
	}
	if d.VHosts[0].Limits["max-queues"] != json.Number("3") {
		t.Errorf("limits object %v", d.VHosts[0].Limits)
	}
	if d.Policies[0].ApplyTo != "all" {
		t.Errorf("apply-to default %q", d.Policies[0].ApplyTo)
	}
	if !d.Exchanges[0].Internal {
		t.Error("internal lost")
	}
	if d.Queues == nil || d.Bindings == nil {
		t.Error("absent sections are nil")
	}
	roundTrip(t, d, nil)
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ doc, err string }{
		{`[]`, "definitions: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{`null`, "definitions: not a JSON object"},
		{`{} {}`, "definitions: data after the JSON object"},
		{`{"rabbit_version": 3}`, "definitions: rabbit_version: not a string"},
		{`{"queues": {}}`, "definitions: queues: not an array"},
		{`{"queues": [{"name": "a"}, 7]}`, "definitions: queues[1]: not an object"},
		{`{"queues": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d", "durable": "yes"}]}`,
			`definitions: queues[3]: "durable" is string, not true or false`},
		{`{"queues": [{"vhost": "/"}]}`, `definitions: queues[0]: no "name"`},
		{`{"queues": [{"name": null}]}`, `definitions: queues[0]: no "name"`},
		{`{"queues": [{"name": "q", "arguments": [1]}]}`, `definitions: queues[0]: "arguments" is array, not an object`},
		{`{"exchanges": [{"name": "x", "type": ""}]}`, `definitions: exchanges[0]: "type" is empty`},
		{`{"exchanges": [{"name": "x"}]}`, `definitions: exchanges[0]: no "type"`},
		{`{"bindings": [{"source": "x", "destination": "q", "destination_type": "table"}]}`,
			`definitions: bindings[0]: "destination_type" is "table", not queue or exchange`},
		{`{"users": [{"name": "u", "tags": 5}]}`, "definitions: users[0]: tags must be an array of strings or a comma-separated string"},
		{`{"users": [{"name": "u", "password": "a", "password_hash": "b"}]}`,
			`definitions: users[0]: both "password" and "password_hash" are given`},
		{`{"vhosts": [{"name": "v", "limits": [["a"]]}]}`, "definitions: vhosts[0]: limits must be an object or a list of [name, value] pairs"},
		{`{"policies": [{"name": "p", "pattern": "", "definition": {}, "priority": 1.5}]}`,
			`definitions: policies[0]: "priority" is number 1.5, not an integer`},
		{`{"policies": [{"name": "p", "pattern": "", "definition": {}, "apply-to": "queue"}]}`,
			`definitions: policies[0]: "apply-to" is "queue", not all, queues or exchanges`},
		{`{"permissions": [{"user": "u", "vhost": "/", "configure": ".*", "write": ".*"}]}`, `definitions: permissions[0]: no "read"`},
	}
	for _, c := range cases {
		_, err := Parse(strings.NewReader(c.doc))
		if err == nil || err.Error() != c.err {
			t.Errorf("%s:\n got %v\nwant %s", c.doc, err, c.err)
		}
	}
}

// FuzzParse: no panic, and whatever parses survives Write and Parse
// unchanged.
func FuzzParse(f *testing.F) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"users":[{"name":"a","tags":"x,y"}],"vhosts":[{"name":"v","limits":[["max-queues",1]]}]}`))
	f.Add([]byte(`{"queues":[{"name":"q","arguments":{"a":[1,2.5,{"b":null}]}}]}`))
	f.Add([]byte(`{"bindings":[{"source":"","destination":"q","destination_type":"queue"}]}`))
	f.Add([]byte(`{"policies":[{"name":"p","pattern":"","definition":{},"apply-to":""}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		d, err := Parse(bytes.NewReader(doc))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "definitions: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := d.Write(&out); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("%v\n%s", err, out.Bytes())
		}
		if !reflect.DeepEqual(d, again) {
			t.Fatalf("round trip changed it:\n%+v\n%+v", d, again)
		}
		for _, q := range d.Queues {
			ToTable(q.Arguments) // must not panic
		}
	})
}

func BenchmarkParse(b *testing.B) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	raw, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	d, err := Parse(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Write(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
