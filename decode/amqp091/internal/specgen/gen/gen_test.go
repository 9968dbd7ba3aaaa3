package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"routing-key": "RoutingKey", "class-id": "ClassID", "reserved-1": "Reserved1",
		"update-secret-ok": "UpdateSecretOk", "nowait": "Nowait",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWiresharkName(t *testing.T) {
	for _, c := range []struct{ scope, name, typ, want string }{
		{"basic.publish", "routing-key", "shortstr", "routing_key"},
		{"basic.consume", "no-wait", "bit", "nowait"},
		{"queue.declare", "reserved-1", "short", "ticket"},
		{"connection.open", "reserved-1", "shortstr", "capabilities"},
		{"property", "reserved", "shortstr", "cluster_id"},
	} {
		if got := wiresharkName(c.scope, c.name, c.typ); got != c.want {
			t.Errorf("wiresharkName(%s, %s) = %q, want %q", c.scope, c.name, got, c.want)
		}
	}
}

func writeSpec(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "spec.xml")
	if err := os.WriteFile(p, []byte(`<amqp major="0" minor="9" revision="1">`+body+`</amqp>`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const miniSpec = `<domain name="shortstr" type="shortstr"/><domain name="bit" type="bit"/>
<class name="basic" index="60"><field name="content-type" domain="shortstr"/>
<method name="publish" index="40" content="1"><field name="routing-key" domain="shortstr"/>
<field name="a" domain="bit"/><field name="b" domain="bit"/></method></class>`

func TestFiles(t *testing.T) {
	spec := writeSpec(t, miniSpec)
	ext := writeSpec(t, `<class name="basic" index="60"><method name="extra" index="41"/></class>`)
	code, tests, err := Files(spec, ext)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"type BasicPublish struct", "type BasicExtra struct", "bits&2 != 0", "FlagContentType uint16 = 1 << 15"} {
		if !strings.Contains(string(code), want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
	if !strings.Contains(string(tests), "&BasicExtra{") {
		t.Error("generated samples lack the extension")
	}
	// An extension may not redefine a method.
	clash := writeSpec(t, `<class name="basic" index="60"><method name="publish" index="40"/></class>`)
	if _, _, err := Files(spec, clash); err == nil {
		t.Error("clashing extension accepted")
	}
	// Unknown domains are refused.
	bad := writeSpec(t, `<class name="basic" index="60"><field name="x" domain="nope"/><method name="m" index="1"/></class>`)
	if _, _, err := Files(bad, ""); err == nil {
		t.Error("unknown domain accepted")
	}
}
