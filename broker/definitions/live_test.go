package definitions

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker/internal/rabbitlive"
	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// The live tests run against the RabbitMQ of .ci/services.sh, in a vhost
// of their own that they delete. They skip when it is not there, and fail
// then under CI=true.

// rabbit is the live node and the vhost of its own the test uses.
type rabbit struct {
	*rabbitlive.Node
	vhost string
}

func liveRabbit(t *testing.T) *rabbit {
	t.Helper()
	r := &rabbit{Node: rabbitlive.Need(t)}
	var b [6]byte
	rand.Read(b[:])
	r.vhost = "wt-defs-test-" + hex.EncodeToString(b[:])
	r.ctl("add_vhost", r.vhost)
	t.Cleanup(func() { exec.Command("rabbitmqctl", "-q", "-n", r.Name, "delete_vhost", r.vhost).Run() })
	r.ctl("set_permissions", "-p", r.vhost, "guest", ".*", ".*", ".*")
	return r
}

func (r *rabbit) ctl(args ...string) string { r.T.Helper(); return r.Ctl(args...) }

// importJSON imports doc with rabbitmqctl, from a file it can read when
// it runs as another user.
func (r *rabbit) importJSON(doc []byte) {
	r.T.Helper()
	dir, err := os.MkdirTemp("", "wt-defs-test-")
	if err != nil {
		r.T.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "import.json")
	if err := os.Chmod(dir, 0o755); err != nil {
		r.T.Fatal(err)
	}
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		r.T.Fatal(err)
	}
	r.ctl("import_definitions", file)
}

func (r *rabbit) export() (*Definitions, []byte) {
	r.T.Helper()
	raw := []byte(r.ctl("export_definitions", "-"))
	d, err := Parse(bytes.NewReader(raw))
	if err != nil {
		r.T.Fatalf("parsing RabbitMQ's export: %v", err)
	}
	return d, raw
}

// TestLiveRoundTrip declares a topology with amqp091-go, exports the
// node's definitions (everything on it, other tests' objects included)
// and checks the round trip.
func TestLiveRoundTrip(t *testing.T) {
	r := liveRabbit(t)
	u := url.URL{Scheme: "amqp", User: url.UserPassword("guest", "guest"), Host: r.Host, Path: "/" + r.vhost}
	conn, err := amqp.Dial(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = ch.QueueDeclare("jobs", true, false, false, false, amqp.Table{
		"x-max-length": int64(10), "x-message-ttl": int32(60000), "x-dead-letter-exchange": "dlx",
		"x-max-priority": int16(5), "x-single-active-consumer": true})
	must(err)
	must(ch.ExchangeDeclare("dlx", "fanout", true, false, false, false, nil))
	must(ch.ExchangeDeclare("hdr", "headers", true, false, false, false, amqp.Table{"alternate-exchange": "dlx"}))
	must(ch.ExchangeBind("hdr", "", "dlx", false, nil))
	must(ch.QueueBind("jobs", "", "hdr", false, amqp.Table{"x-match": "all", "kind": "a"}))
	must(ch.QueueBind("jobs", "", "hdr", false, amqp.Table{"x-match": "any", "kind": "a", "n": int64(2)}))
	r.ctl("set_policy", "-p", r.vhost, "--priority", "3", "wt-ttl", "^jobs$", `{"expires": 600000}`)

	d, raw := r.export()
	roundTrip(t, d, raw)
	var mine []Binding
	for _, b := range d.Bindings {
		if b.VHost == r.vhost && b.Source == "hdr" {
			mine = append(mine, b)
		}
	}
	if len(mine) != 2 || reflect.DeepEqual(mine[0].Arguments, mine[1].Arguments) {
		t.Errorf("the two bindings differing in arguments: %+v", mine)
	}
	for _, q := range d.Queues {
		if q.VHost == r.vhost && q.Name == "jobs" && q.Arguments["x-max-priority"] != json.Number("5") {
			t.Errorf("jobs arguments %v", q.Arguments)
		}
	}
}

// TestLiveToTable imports arguments into RabbitMQ and compares the table
// it then holds with ToTable's.
func TestLiveToTable(t *testing.T) {
	r := liveRabbit(t)
	var args map[string]any
	if err := decodeNumbers([]byte(rabbitArgsJSON), &args); err != nil {
		t.Fatal(err)
	}
	args["x-deep"] = []any{map[string]any{"a": []any{json.Number("-1.25e-3"), "é"}}, []any{}}
	doc, _ := json.Marshal(map[string]any{"queues": []any{map[string]any{
		"name": "typed", "vhost": r.vhost, "durable": true, "auto_delete": false, "arguments": args}}})
	r.importJSON(doc)
	out := r.ctl("eval", `{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"`+r.vhost+`">>, queue, <<"typed">>)), `+
		`base64:encode(iolist_to_binary(rabbit_binary_generator:generate_table(amqqueue:get_arguments(Q)))).`)
	b64 := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(out), `<<"`), `">>`)
	want, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("eval said %q", out)
	}
	got, err := ToTable(args)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("ToTable:\n     %x\nRabbitMQ holds\n     %x", []byte(got), want)
	}
}

// TestLiveFromTable declares a queue whose arguments hold every type
// RabbitMQ parses, exports, and compares its JSON with FromTable's.
func TestLiveFromTable(t *testing.T) {
	r := liveRabbit(t)
	sub := amqp091.Table(nil).Append("k", amqp091.StringValue("v")).Append("n", amqp091.Int8Value(-1))
	args := amqp091.Table(nil).
		Append("t", amqp091.BoolValue(false)).
		Append("b", amqp091.Int8Value(-2)).
		Append("B", amqp091.Uint8Value(200)).
		Append("s", amqp091.Int16Value(-300)).
		Append("u", amqp091.Uint16Value(60000)).
		Append("I", amqp091.Int32Value(-70000)).
		Append("i", amqp091.Uint32Value(4000000000)).
		Append("l", amqp091.Int64Value(-5000000000)).
		Append("f", amqp091.FloatValue(0.5)).
		Append("d", amqp091.DoubleValue(1000)).
		Append("S", amqp091.StringValue("héllo")).
		Append("notutf8", amqp091.StringValue("\xff\xfe\x00")).
		Append("x", amqp091.BytesValue([]byte("raw"))).
		Append("T", amqp091.TimestampValue(time.Unix(1700000000, 0))).
		Append("A", amqp091.ArrayValue(amqp091.Array(nil).Append(amqp091.Int32Value(1)).Append(amqp091.TableValue(sub)))).
		Append("F", amqp091.TableValue(sub)).
		Append("V", amqp091.VoidValue()).
		Append("D", amqp091.DecimalValue(amqp091.Decimal{Scale: 2, Value: 1234}))
	r.declareRaw(t, "alltypes", args)

	d, _ := r.export()
	var exported map[string]any
	for _, q := range d.Queues {
		if q.VHost == r.vhost && q.Name == "alltypes" {
			exported = q.Arguments
		}
	}
	if exported == nil {
		t.Fatal("queue not exported")
	}
	ours := FromTable(args)
	// RabbitMQ writes a decimal as "scale.value" (2.1234 for 12.34); we
	// write its value. See FromTable.
	if got := numeric(exported["D"]); got != 2.1234 {
		t.Errorf("RabbitMQ's decimal %v: FromTable's comment is out of date", exported["D"])
	}
	delete(exported, "D")
	delete(ours, "D")
	a := normalizeNumbers(exported).(map[string]any)
	b := normalizeNumbers(ours).(map[string]any)
	if len(a) != len(b) {
		t.Errorf("RabbitMQ exported %d arguments, FromTable %d", len(a), len(b))
	}
	for k := range b {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("%s: RabbitMQ %#v, FromTable %#v", k, a[k], b[k])
		}
	}
}

func numeric(v any) float64 {
	n, _ := v.(json.Number)
	f, _ := strconv.ParseFloat(string(n), 64)
	return f
}

// normalizeNumbers makes floats comparable whatever their spelling
// (Erlang writes 1.0e3 where Go writes 1000.0); integers stay exact.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return numeric(v)
		}
		return string(v)
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = normalizeNumbers(e)
		}
		return out
	case []any:
		out := []any{}
		for _, e := range v {
			out = append(out, normalizeNumbers(e))
		}
		return out
	}
	return v
}

// declareRaw declares a durable queue with args exactly as encoded,
// through our own codec (a client library would re-type the values).
func (r *rabbit) declareRaw(t *testing.T, queue string, args amqp091.Table) {
	t.Helper()
	c, err := net.Dial("tcp", r.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fr := amqp091.NewFrameReader(c)
	var md amqp091.MethodDecoder
	send := func(ch uint16, m amqp091.Method) {
		if _, err := c.Write(amqp091.AppendMethodFrame(nil, ch, m)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(name string) amqp091.Method {
		t.Helper()
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for %s: %v", name, err)
		}
		m, err := md.Decode(f.Payload)
		if err != nil || m.Name() != name {
			if cl, ok := m.(*amqp091.ChannelClose); ok {
				t.Fatalf("waiting for %s: channel.close %d %s", name, cl.ReplyCode, cl.ReplyText)
			}
			t.Fatalf("waiting for %s: %v %v", name, m, err)
		}
		return m
	}
	c.Write([]byte("AMQP\x00\x00\x09\x01"))
	expect("connection.start")
	send(0, &amqp091.ConnectionStartOk{ClientProperties: amqp091.Table{}, Mechanism: []byte("PLAIN"),
		Response: []byte("\x00guest\x00guest"), Locale: []byte("en_US")})
	tune := expect("connection.tune").(*amqp091.ConnectionTune)
	send(0, &amqp091.ConnectionTuneOk{ChannelMax: tune.ChannelMax, FrameMax: tune.FrameMax})
	send(0, &amqp091.ConnectionOpen{VirtualHost: []byte(r.vhost)})
	expect("connection.open-ok")
	send(1, &amqp091.ChannelOpen{})
	expect("channel.open-ok")
	send(1, &amqp091.QueueDeclare{Queue: []byte(queue), Durable: true, Arguments: args})
	expect("queue.declare-ok")
	send(0, &amqp091.ConnectionClose{ReplyCode: 200, ReplyText: []byte("bye")})
	expect("connection.close-ok")
}
