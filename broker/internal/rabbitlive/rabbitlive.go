// Package rabbitlive finds the RabbitMQ that .ci/services.sh starts, for
// the broker packages' live tests that compare their answers with
// RabbitMQ's: it skips a test when RabbitMQ is not there, and fails it then
// under CI=true.
package rabbitlive

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Node is a running RabbitMQ node.
type Node struct {
	T    testing.TB
	Name string // Erlang node name for rabbitmqctl -n ($WIRETAP_RABBITMQ_NODE)
	Host string // host:port of its AMQP listener ($WIRETAP_AMQP_URL)
}

// Need returns the node, or skips (fails under CI=true) t without it.
func Need(t testing.TB) *Node {
	t.Helper()
	skip := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %s", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		skip("rabbitmqctl is not installed")
	}
	n := &Node{T: t, Name: os.Getenv("WIRETAP_RABBITMQ_NODE"), Host: "127.0.0.1:5672"}
	if n.Name == "" {
		n.Name = "wiretap@localhost"
	}
	if u, err := url.Parse(os.Getenv("WIRETAP_AMQP_URL")); err == nil && u.Host != "" {
		n.Host = u.Host
	}
	c, err := net.DialTimeout("tcp", n.Host, 2*time.Second)
	if err != nil {
		skip("no RabbitMQ at " + n.Host + " (.ci/services.sh start rabbitmq): " + err.Error())
	}
	c.Close()
	return n
}

// Ctl runs rabbitmqctl against the node and returns its output; a failure
// fails the test.
func (n *Node) Ctl(args ...string) string {
	n.T.Helper()
	out, err := exec.Command("rabbitmqctl", append([]string{"-q", "-n", n.Name}, args...)...).CombinedOutput()
	if err != nil {
		n.T.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
