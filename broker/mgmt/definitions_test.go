package mgmt

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestDefinitionsExport(t *testing.T) {
	fx := newFixture()
	w := fx.do(t, http.MethodGet, "/api/definitions", "guest:guest", nil)
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Content-Disposition") != "" {
		t.Fatalf("GET: %d %v", w.Code, w.Header())
	}
	if got := field(t, decodeJSON(t, w.Body.Bytes()), "vhost_asked"); got != "" {
		t.Errorf("exported vhost %q, want all", got)
	}
	w = fx.do(t, http.MethodGet, "/api/definitions/%2F?download=rabbit_localhost.json", "guest:guest", nil)
	if w.Code != 200 || w.Header().Get("Content-Disposition") != "attachment; filename=rabbit_localhost.json" {
		t.Errorf("download: %d %v", w.Code, w.Header())
	}
	if got := field(t, decodeJSON(t, w.Body.Bytes()), "vhost_asked"); got != "/" {
		t.Errorf("exported vhost %q, want /", got)
	}
	w = fx.do(t, http.MethodGet, "/api/all-configuration", "guest:guest", nil)
	if w.Code != 200 {
		t.Errorf("all-configuration: %d", w.Code)
	}
	w = fx.do(t, http.MethodGet, "/api/definitions/nope", "guest:guest", nil)
	if w.Code != 400 || w.Body.String() != `{"error":"bad_request","reason":"vhost_not_found"}` {
		t.Errorf("missing vhost: %d %s", w.Code, w.Body)
	}
	if want := []string{"", "/", ""}; !slices.Equal(fx.defs.exported, want) {
		t.Errorf("exports %q, want %q", fx.defs.exported, want)
	}
}

func post(fx *fixture, t *testing.T, path, contentType, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.SetBasicAuth("guest", "guest")
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	fx.h.ServeHTTP(w, r)
	return w
}

func TestDefinitionsImport(t *testing.T) {
	fx := newFixture()
	doc := `{"rabbit_version":"3.10.8","queues":[{"name":"q","vhost":"/","durable":true,"auto_delete":false,"arguments":{}}]}`
	w := post(fx, t, "/api/definitions", "application/json", doc)
	if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	if len(fx.defs.imported) != 1 || string(fx.defs.imported[0]) != doc {
		t.Errorf("imported %q", fx.defs.imported)
	}
	for _, c := range []struct {
		path, ctype, body string
		code              int
		resp              string
	}{
		{"/api/definitions", "application/json", "{bad", 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
		{"/api/definitions", "application/json", "[1]", 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
		{"/api/definitions", "application/json", "", 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
		{"/api/definitions", "application/json", "{} {}", 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
		{"/api/definitions", "application/x-www-form-urlencoded", "{}", 415, ``},
		{"/api/definitions", "", "{}", 415, ``},
		{"/api/definitions/nope", "application/json", "{}", 404, `{"error":"not_found","reason":"vhost_not_found"}`},
		{"/api/definitions/%2F", "application/json", `{"queues":[1]}`, 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
		{"/api/definitions/%2F", "application/json", `{"queues":[null]}`, 400, `{"error":"bad_request","reason":"failed_to_parse_json"}`},
	} {
		w := post(fx, t, c.path, c.ctype, c.body)
		if w.Code != c.code || w.Body.String() != c.resp {
			t.Errorf("POST %s %q %q: %d %s, want %d %s", c.path, c.ctype, c.body, w.Code, w.Body, c.code, c.resp)
		}
	}
	if len(fx.defs.imported) != 1 {
		t.Errorf("bad documents were imported: %q", fx.defs.imported[1:])
	}
	fx.defs.fail = errImport
	w = post(fx, t, "/api/definitions", "application/json; charset=utf-8", "{}")
	want := `{"error":"bad_request","reason":"inequivalent arg 'durable' for queue 'q' in vhost '/'"}`
	if w.Code != 400 || w.Body.String() != want {
		t.Errorf("failed import: %d %s", w.Code, w.Body)
	}
}

// POST /api/definitions/V takes a vhost's definitions, whose objects name
// no vhost, and imports them into V alone.
func TestDefinitionsImportIntoVHost(t *testing.T) {
	fx := newFixture()
	doc := `{"rabbit_version":"3.10.8","users":[{"name":"x"}],"vhosts":[{"name":"other"}],
		"queues":[{"name":"q","durable":true,"auto_delete":false,"arguments":{}}],
		"exchanges":[{"name":"x","vhost":"other","type":"topic"}],
		"bindings":[{"source":"x","destination":"q","destination_type":"queue","routing_key":"#","arguments":{}}]}`
	w := post(fx, t, "/api/definitions/app", "application/json", doc)
	if w.Code != http.StatusNoContent {
		t.Fatalf("POST: %d %s", w.Code, w.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(fx.defs.imported[0], &got); err != nil {
		t.Fatal(err)
	}
	if keys := keysOf(got); !slices.Equal(keys, []string{"bindings", "exchanges", "queues", "rabbit_version"}) {
		t.Errorf("keys %v", keys)
	}
	for _, kind := range []string{"queues", "exchanges", "bindings"} {
		for _, it := range got[kind].([]any) {
			if v := it.(map[string]any)["vhost"]; v != "app" {
				t.Errorf("%s item in vhost %v", kind, v)
			}
		}
	}
}

func TestDefinitionsUpload(t *testing.T) {
	fx := newFixture()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "defs.json")
	fw.Write([]byte(`{"queues":[]}`))
	mw.Close()
	w := post(fx, t, "/api/definitions", mw.FormDataContentType(), body.String())
	if w.Code != http.StatusNoContent || len(fx.defs.imported) != 1 || string(fx.defs.imported[0]) != `{"queues":[]}` {
		t.Errorf("upload: %d %s %q", w.Code, w.Body, fx.defs.imported)
	}
	body.Reset()
	mw = multipart.NewWriter(&body)
	mw.WriteField("other", "x")
	mw.Close()
	if w := post(fx, t, "/api/definitions", mw.FormDataContentType(), body.String()); w.Code != 400 {
		t.Errorf("upload without file: %d %s", w.Code, w.Body)
	}
}

func TestDefinitionsTooLarge(t *testing.T) {
	fx := newFixture()
	big := `{"x":"` + strings.Repeat("a", MaxDefinitionsSize) + `"}`
	w := post(fx, t, "/api/definitions", "application/json", big)
	if w.Code != http.StatusRequestEntityTooLarge || len(fx.defs.imported) != 0 {
		t.Errorf("too large: %d %s", w.Code, w.Body)
	}
}

func TestDefinitionsUnavailable(t *testing.T) {
	fx := newFixture()
	fx.h.cfg.Definitions = nil
	w := fx.do(t, http.MethodGet, "/api/definitions", "guest:guest", nil)
	if w.Code != 500 || !strings.Contains(w.Body.String(), "not available") {
		t.Errorf("no Definitions: %d %s", w.Code, w.Body)
	}
}
