package mgmt

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// FuzzClientProperties renders field tables as a client sends them in
// connection.start-ok (untrusted bytes, decoded as the broker decodes
// them) and checks the JSON is valid and holds every key.
func FuzzClientProperties(f *testing.F) {
	var t amqp091.Table
	for k, v := range map[string]amqp091.Value{
		"s": amqp091.StringValue("x\"\\\n\u2028"), "x": amqp091.BytesValue([]byte{0xff}), "d": amqp091.DecimalValue(amqp091.Decimal{Scale: 2, Value: -7}),
		"f": amqp091.FloatValue(1.5), "i": amqp091.Int64Value(-1), "u": amqp091.Uint64Value(1 << 63), "v": amqp091.VoidValue(),
		"t":      amqp091.TableValue(amqp091.Table(nil).Append("k", amqp091.BoolValue(true))),
		"a":      amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.Int8Value(-3))),
		"\xff\"": amqp091.TimestampValue(start),
	} {
		t = t.Append(k, v)
	}
	f.Add([]byte(t))
	f.Add([]byte{})
	f.Add([]byte("\x01aA\x00\x00\x00\x05Ft\x01\x01b"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, _ := amqp091.Table(data).Map()
		var e encoder
		e.reset(nil)
		e.value(m)
		if !json.Valid(e.buf) {
			t.Fatalf("invalid JSON %q from %x", e.buf, data)
		}
		var back map[string]any
		if err := json.Unmarshal(e.buf, &back); err != nil {
			t.Fatal(err)
		}
		if len(back) > len(m) {
			t.Fatalf("%d keys rendered from %d", len(back), len(m))
		}
		for k := range m {
			// Invalid UTF-8 in a key comes out as U+FFFD per byte, as
			// encoding/json writes it.
			var want string
			kj, _ := json.Marshal(k)
			json.Unmarshal(kj, &want)
			if _, ok := back[want]; !ok && len(back) == len(m) {
				t.Fatalf("key %q lost in %s", k, e.buf)
			}
		}
	})
}

// FuzzServeHTTP sends arbitrary requests: the handler must not panic,
// must answer with a status RabbitMQ uses, and a JSON answer must be
// valid JSON.
func FuzzServeHTTP(f *testing.F) {
	for _, s := range []struct{ method, path, query, auth, ctype, body string }{
		{"GET", "/api/overview", "", "guest:guest", "", ""},
		{"GET", "/api/queues/%2F/pq", "columns=name,message_stats.publish", "guest:guest", "", ""},
		{"GET", "/api/queues", "page=1&page_size=2&name=q&use_regex=true&sort=messages&sort_reverse=true", "guest:guest", "", ""},
		{"GET", "/api/queues", "sort=message_stats.publish.rate..x", "guest:guest", "", ""},
		{"GET", "/api/connections/" + url.PathEscape(conn1) + "/channels", "page=2", "mon:pw", "", ""},
		{"DELETE", "/api/connections/" + url.PathEscape(conn2), "", "app:pw", "", ""},
		{"GET", "/api/channels/" + url.PathEscape(conn1+" (1)"), "", "guest:guest", "", ""},
		{"POST", "/api/definitions/%2F", "", "guest:guest", "application/json", `{"queues":[{"name":"q"}]}`},
		{"POST", "/api/definitions", "", "guest:guest", "multipart/form-data; boundary=x", "--x\r\n"},
		{"GET", "/api/exchanges/%2F/px/bindings/destination", "", "app:pw", "", ""},
		{"PUT", "/api/vhosts/%2F", "", "", "", ""},
		{"GET", "/api/whoami", "", "plain:pw", "", ""},
		{"GET", "/api//queues//", "page=-1", "guest:wrong", "", ""},
	} {
		f.Add(s.method, s.path, s.query, s.auth, s.ctype, s.body)
	}
	fx := newFixture()
	f.Fuzz(func(t *testing.T, method, path, query, auth, ctype, body string) {
		u, err := url.Parse("http://localhost" + path)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		u.RawQuery = query
		r := httptest.NewRequest(http.MethodGet, "/", strings.NewReader(body))
		r.Method = method
		r.URL = u
		r.RequestURI = u.RequestURI()
		if user, pass, ok := strings.Cut(auth, ":"); ok {
			r.SetBasicAuth(user, pass)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		w := httptest.NewRecorder()
		fx.h.ServeHTTP(w, r)
		switch w.Code {
		case 200, 204, 400, 401, 404, 405, 413, 415, 500:
		default:
			t.Fatalf("%s %s: status %d", method, u, w.Code)
		}
		if w.Header().Get("Content-Type") == "application/json" && w.Body.Len() > 0 && !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: invalid JSON %q", method, u, w.Body)
		}
		if n := w.Header().Get("Content-Length"); n != "" && n != strconv.Itoa(w.Body.Len()) {
			t.Fatalf("%s %s: Content-Length %s, body %d", method, u, n, w.Body.Len())
		}
	})
}
