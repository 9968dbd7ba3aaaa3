package amqp10

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode"
)

// The Proton oracle: testdata/peers/proton_peer.py drives RabbitMQ through
// a recording relay with PN_TRACE_FRM=1. The recordings, Proton's trace and
// the script's manifest are kept as fixtures, so TestProtonFixtures checks
// the decoder against Proton's own view of every frame on every run;
// TestProtonLive re-runs the exchange against a live broker and checks it
// the same way (WIRETAP_RECORD=1 rewrites the fixtures).

const protonFixture = "proton-rabbitmq310"

type manifestEntry struct {
	MessageID string `json:"message_id"`
	Checksum  string `json:"checksum"`
	Algorithm string `json:"algorithm"`
	Expected  uint32 `json:"expected"`
	BareLen   int    `json:"bare_len"`
}

func TestProtonLive(t *testing.T) {
	addr, ok := amqp10Broker()
	if !ok {
		needPeer(t, "no AMQP 1.0 broker at "+addr+" (set WIRETAP_AMQP10_ADDR; RabbitMQ needs rabbitmq_amqp1_0)")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import proton").Run(); err != nil {
		needPeer(t, "python3-qpid-proton is not installed")
	}
	r := startRelay(t, addr)
	dir := t.TempDir()
	manifest := dir + "/manifest.json"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := "/queue/wiretap-proton-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", fixture("proton_peer.py"), r.addr(), queue, manifest)
	cmd.Env = append(os.Environ(), "PN_TRACE_FRM=1")
	out, err := cmd.CombinedOutput()
	recs := r.close()
	if err != nil {
		t.Fatalf("proton_peer.py: %v\n%s", err, out)
	}
	man, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("WIRETAP_RECORD") == "1" {
		for i, rec := range recs {
			if err := os.WriteFile(fixture(protonFixture+".conn"+strconv.Itoa(i+1)+".rec"), rec.marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(fixture(protonFixture+".trace"), out, 0o644)
		os.WriteFile(fixture(protonFixture+".manifest.json"), man, 0o644)
	}
	checkProton(t, recs, out, man)
}

func TestProtonFixtures(t *testing.T) {
	trace, err := os.ReadFile(fixture(protonFixture + ".trace"))
	if err != nil {
		t.Fatalf("fixture missing (regenerate with WIRETAP_RECORD=1 go test -run TestProtonLive): %v", err)
	}
	man, err := os.ReadFile(fixture(protonFixture + ".manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkProton(t, loadProtonRecordings(t), trace, man)
}

// protonFrame is one line of Proton's frame trace.
type protonFrame struct {
	dir     decode.Dir
	typ     string // unit type: "open", "sasl.init", "protocol-header"
	channel int    // -1 for protocol headers
	args    string // the printed argument list
	payload int    // transfer payload bytes, -1 if none printed
}

var protonLine = regexp.MustCompile(`^\[(0x[0-9a-f]+)\]: *(AMQP|SASL):FRAME: *(\d*) (->|<-) (.*)$`)
var protonPerf = regexp.MustCompile(`^@([a-z-]+)\((\d+)\) \[(.*?)\](?: \((\d+)\))?`)

// parseProtonTrace groups Proton's frame lines by connection, in order of
// the connections' first lines.
func parseProtonTrace(t *testing.T, trace []byte) [][]protonFrame {
	t.Helper()
	var order []string
	by := map[string][]protonFrame{}
	for _, line := range readLines(trace) {
		m := protonLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		id, ch, arrow, rest := m[1], m[3], m[4], m[5]
		if _, ok := by[id]; !ok {
			order = append(order, id)
			by[id] = nil
		}
		f := protonFrame{dir: decode.DirF, channel: -1, payload: -1}
		if arrow == "<-" {
			f.dir = decode.DirB
		}
		switch {
		case rest == "AMQP" || rest == "SASL":
			f.typ = "protocol-header"
			f.args = rest
		case rest == "(EMPTY FRAME)":
			f.typ = "empty"
		default:
			p := protonPerf.FindStringSubmatch(rest)
			if p == nil {
				t.Fatalf("unparsed proton trace line: %s", line)
			}
			f.typ = p[1]
			if strings.HasPrefix(f.typ, "sasl-") {
				f.typ = "sasl." + f.typ[5:]
			} else {
				f.channel, _ = strconv.Atoi(ch)
			}
			f.args = p[3]
			if p[4] != "" {
				f.payload, _ = strconv.Atoi(p[4])
			}
		}
		by[id] = append(by[id], f)
	}
	var out [][]protonFrame
	for _, id := range order {
		out = append(out, by[id])
	}
	return out
}

var protonArg = regexp.MustCompile(`(?:^|, )(delivery-id|handle|more)=([^,\]]*)`)

func checkProton(t *testing.T, recs []*recording, trace, manifest []byte) {
	t.Helper()
	conns := parseProtonTrace(t, trace)
	if len(conns) != len(recs) || len(recs) != 2 {
		t.Fatalf("proton traced %d connections, relay recorded %d; want 2", len(conns), len(recs))
	}
	var man struct {
		Sent, Received []manifestEntry
	}
	if err := json.Unmarshal(manifest, &man); err != nil {
		t.Fatal(err)
	}
	// What Proton computed over the bytes it sent (F) and received (B).
	want := [2]map[string]manifestEntry{{}, {}}
	for _, e := range man.Sent {
		want[decode.DirF][e.MessageID] = e
	}
	for _, e := range man.Received {
		want[decode.DirB][e.MessageID] = e
	}
	verdicts := map[string]ImmutabilityVerdict{}
	imm := NewImmutability()
	multiFrameSegments := 0
	for ci, rec := range recs {
		conn := &decode.Conn{ID: ci + 1, Proto: decode.ProtoAMQP10}
		var units []*decode.Unit
		d := New(conn, nil, func(u *decode.Unit) { units = append(units, u) })
		for _, c := range rec.chunks {
			if n := countFrames(c.data); n > 1 {
				multiFrameSegments++
			}
			d.Feed(c.dir, c.data, time.Unix(0, 0))
		}
		d.End(decode.DirF, time.Unix(0, 0))
		d.End(decode.DirB, time.Unix(0, 0))
		for _, u := range units {
			if v, paired := imm.Observe(u); paired {
				verdicts[u.MessageID()] = v
			}
		}
		// Frame-by-frame agreement, per direction, in order.
		for _, dir := range []decode.Dir{decode.DirF, decode.DirB} {
			var got []*decode.Unit
			for _, u := range units {
				if u.Dir == dir {
					got = append(got, u)
				}
			}
			var exp []protonFrame
			for _, f := range conns[ci] {
				if f.dir == dir {
					exp = append(exp, f)
				}
			}
			// Proton stops reading once it has processed the peer's close,
			// so frames the peer sent after its close reach the relay but
			// not Proton's trace.
			if len(got) > len(exp) && len(exp) > 0 && exp[len(exp)-1].typ == "close" {
				for _, u := range got[len(exp):] {
					t.Logf("conn %d %s: after close, not traced by proton: %s", ci+1, dir, u.Summary)
				}
				got = got[:len(exp)]
			}
			if len(got) != len(exp) {
				for _, u := range got {
					t.Logf("got %s %s", u.Dir, u.Summary)
				}
				t.Fatalf("conn %d %s: decoded %d units, proton traced %d frames", ci+1, dir, len(got), len(exp))
			}
			for i, u := range got {
				e := exp[i]
				if u.Err() != "" {
					t.Errorf("conn %d %s unit %d: error %s", ci+1, dir, i, u.Err())
				}
				if u.Type != e.typ {
					t.Errorf("conn %d %s unit %d: type %q, proton says %q", ci+1, dir, i, u.Type, e.typ)
					continue
				}
				if e.channel >= 0 && int(u.Channel) != e.channel {
					t.Errorf("conn %d %s unit %d: channel %d, proton says %d", ci+1, dir, i, u.Channel, e.channel)
				}
				if e.typ == "protocol-header" && !strings.Contains(u.Summary, e.args) {
					t.Errorf("conn %d %s unit %d: %q, proton says %s", ci+1, dir, i, u.Summary, e.args)
				}
				if e.typ == "transfer" {
					checkTransferAgainstProton(t, u, e)
				}
			}
		}
		// Checksum verdicts, on the way in (F of the sender's connection)
		// and on the way out (B of the receiver's).
		seen := 0
		for _, u := range units {
			cm := MessageOf(u)
			if cm == nil {
				continue
			}
			seen++
			e, ok := want[u.Dir][u.MessageID()]
			if !ok {
				t.Errorf("conn %d: completed message with unexpected id %q", ci+1, u.MessageID())
				continue
			}
			if u.Checksum() == nil || u.Checksum().Status.String() != e.Checksum {
				t.Errorf("conn %d %s %q: checksum %+v, want %s", ci+1, u.Dir, u.MessageID(), u.Checksum(), e.Checksum)
				continue
			}
			if e.Checksum != "absent" && (u.Checksum().Algorithm != e.Algorithm || u.Checksum().Expected != e.Expected) {
				t.Errorf("conn %d %q: checksum %+v, want %s expected %d", ci+1, u.MessageID(), u.Checksum(), e.Algorithm, e.Expected)
			}
			if got := len(cm.Bare()); got != e.BareLen {
				t.Errorf("conn %d %s %q: bare message %d bytes, proton encoded %d", ci+1, u.Dir, u.MessageID(), got, e.BareLen)
			}
			if u.Fields() == nil {
				t.Errorf("no fields")
			}
		}
		if seen != len(man.Sent) {
			t.Errorf("conn %d: %d completed messages, want %d", ci+1, seen, len(man.Sent))
		}
	}
	if multiFrameSegments == 0 {
		t.Errorf("no TCP read carried more than one frame: the recording does not exercise that case")
	}
	rep := imm.Report()
	if rep.Paired != len(man.Sent) {
		t.Errorf("immutability: %d messages paired, want %d\n%s", rep.Paired, len(man.Sent), strings.Join(imm.Summary(), "\n"))
	}
	// Where Proton's checksum was right on the way in and wrong on the way
	// out, the broker changed the bare message: the immutability check must
	// say so, and must not where both verdicts agree.
	for id, in := range want[decode.DirF] {
		out, ok := want[decode.DirB][id]
		v, paired := verdicts[id]
		if !ok || !paired || in.Checksum == "absent" {
			continue
		}
		changed := in.Checksum == "ok" && out.Checksum == "mismatch"
		if v.Identical == changed {
			t.Errorf("immutability of %q: identical=%v, but proton's checksums were %s in and %s out", id, v.Identical, in.Checksum, out.Checksum)
		}
	}
	t.Logf("immutability summary:\n%s", strings.Join(imm.Summary(), "\n"))
}

func checkTransferAgainstProton(t *testing.T, u *decode.Unit, e protonFrame) {
	t.Helper()
	var f Frame
	ParseFrame(u.Raw, &f)
	var c Composite
	if err := ScanComposite(f.Body, 0, &c); err != nil {
		t.Errorf("transfer: %v", err)
		return
	}
	var tr Transfer
	tr.Decode(f.Body, &c)
	payload := len(f.Body) - c.List.Len()
	if e.payload >= 0 && payload != e.payload {
		t.Errorf("transfer %s: payload %d bytes, proton says %d", u.Summary, payload, e.payload)
	}
	for _, m := range protonArg.FindAllStringSubmatch(e.args, -1) {
		switch m[1] {
		case "handle":
			if v, _ := strconv.ParseUint(m[2], 0, 32); uint32(v) != tr.Handle {
				t.Errorf("transfer %s: handle, proton says %s", u.Summary, m[2])
			}
		case "delivery-id":
			if v, _ := strconv.ParseUint(m[2], 0, 32); !tr.HasDeliveryID || uint32(v) != tr.DeliveryID {
				t.Errorf("transfer %s: delivery-id, proton says %s", u.Summary, m[2])
			}
		case "more":
			if (m[2] == "true") != tr.More {
				t.Errorf("transfer %s: more, proton says %s", u.Summary, m[2])
			}
		}
	}
}

// countFrames counts the whole frames and protocol headers at the start of
// b (a TCP read that starts on a frame boundary).
func countFrames(b []byte) int {
	n := 0
	for len(b) >= 8 {
		if _, ok := ParseProtocolHeader(b); ok {
			b = b[8:]
			n++
			continue
		}
		var f Frame
		k, err := ParseFrame(b, &f)
		if k == 0 || err != nil {
			break
		}
		b = b[k:]
		n++
	}
	return n
}
