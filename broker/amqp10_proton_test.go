package broker

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp10"
)

// protonPeer sends messages through the broker with Qpid Proton in both
// settlement modes (each body kind, one past the broker's max-frame-size),
// printing each message's encoding, then receives what the test put in
// py-in, unsettled and settled, printing the bodies.
const protonPeer = `
import sys
from proton import Message
from proton.utils import BlockingConnection
from proton.reactor import AtLeastOnce, AtMostOnce

c = BlockingConnection("amqp://guest:guest@" + sys.argv[1], allowed_mechs="PLAIN", virtual_host="vhost:/", timeout=20)
n = 0
for opts in (AtLeastOnce(), AtMostOnce()):
    s = c.create_sender("/queues/py", options=opts)
    for body, inferred in ((b"proton bytes", False), ("a string value", False), ([1, "two", 3.5], False),
                           ([1, 2, 3], True), (b"z" * 300000, False)):
        m = Message(body=body, id="py-%d" % n, inferred=inferred)
        n += 1
        s.send(m)
        print("SENT", m.encode().hex())
    s.close()
r = c.create_receiver("/queues/py-in", credit=10)
m = r.receive(timeout=10)
print("GOT", repr(m.body))
r.accept()
r.close()
r = c.create_receiver("/queues/py-in", credit=10, options=AtMostOnce())
m = r.receive(timeout=10)
print("GOT", repr(m.body))
c.close()
`

// TestAMQP10Proton: Qpid Proton sends and receives through the broker;
// every message it sent arrives byte for byte as Proton encoded it.
func TestAMQP10Proton(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import proton").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but python3-qpid-proton is not installed")
		}
		t.Skip("python3-qpid-proton is not installed")
	}
	_, url := startBroker(t, Config{})
	declare10(t, url, "py", "py-in")
	in := dialRaw10(t, url, 4096)
	in.attach(0, false, "/queues/py-in", true)
	in.expect(amqp10.DescriptorFlow)
	in.transfer(0, 0, true, amqp10.AppendDescribed(nil, amqp10.DescriptorData, amqp10.AppendBinary(nil, []byte("for proton"))), 1000)
	in.transfer(0, 1, true, amqp10.AppendDescribed(nil, amqp10.DescriptorAMQPValue, amqp10.AppendString(nil, "value for proton")), 1000)

	script := filepath.Join(t.TempDir(), "peer.py")
	if err := os.WriteFile(script, []byte(protonPeer), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", script, brokerAddr(url)).CombinedOutput()
	if err != nil {
		t.Fatalf("proton peer: %v\n%s", err, out)
	}
	var sent [][]byte
	var got []string
	for _, line := range strings.Split(string(out), "\n") {
		if h, ok := strings.CutPrefix(line, "SENT "); ok {
			b, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, b)
		}
		if g, ok := strings.CutPrefix(line, "GOT "); ok {
			got = append(got, g)
		}
	}
	if len(sent) != 10 || strings.Join(got, "|") != "b'for proton'|'value for proton'" {
		t.Fatalf("proton sent %d messages, got %q\n%s", len(sent), got, out)
	}
	r := dialRaw10(t, url, 4096)
	r.attach(0, true, "/queues/py", true)
	r.flow(0, 0, uint32(len(sent)), false)
	for i, want := range sent {
		msg, _, _, frames := r.receive()
		checkDelivered(t, "proton message "+strconv.Itoa(i), msg, want, "", "py")
		if len(want) > 4096 && frames < 2 {
			t.Errorf("message %d: %d bytes in one frame", i, len(want))
		}
	}
}
