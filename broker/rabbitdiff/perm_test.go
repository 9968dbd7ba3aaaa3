package rabbitdiff

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os/exec"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/broker/auth"
	"github.com/wiretap-dev/wiretap/broker/internal/rabbitlive"
)

// TestDifferentialPermissions runs a workload as users with limited
// permissions, made alike on RabbitMQ (with rabbitmqctl) and on the
// embedded broker: every refusal must read the same.
func TestDifferentialPermissions(t *testing.T) {
	node := rabbitlive.Need(t)
	var b [4]byte
	rand.Read(b[:])
	limited := "wt-diff-limited-" + hex.EncodeToString(b[:])
	outsider := "wt-diff-outsider-" + hex.EncodeToString(b[:])
	const pass = "secret"
	// Configure and read only names holding "wt-ok"; write also amq.direct.
	perms := []string{"wt-ok", "wt-ok|^amq\\.direct$", "wt-ok"}
	node.Ctl("add_user", limited, pass)
	node.Ctl("add_user", outsider, pass)
	t.Cleanup(func() {
		for _, u := range []string{limited, outsider} {
			exec.Command("rabbitmqctl", "-q", "-n", node.Name, "delete_user", u).Run()
		}
	})
	node.Ctl(append([]string{"set_permissions", "-p", "/", limited}, perms...)...)

	users := auth.NewDefaultStore()
	users.PutUser(limited, pass, nil)
	users.PutUser(outsider, pass, nil)
	if err := users.SetPermissions(limited, "/", perms[0], perms[1], perms[2]); err != nil {
		t.Fatal(err)
	}
	br, err := broker.New(broker.Config{Users: users})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { br.Serve(ctx, ln); close(served) }()
	defer func() { cancel(); <-served; br.Close() }()

	w := Workload{Name: "go-permissions", Run: func(ctx context.Context, e *Env) error {
		if _, err := e.DialURL("amqp://" + outsider + ":" + pass + "@" + e.Addr + "/"); err != nil {
			e.Note("outsider: " + err.Error())
		}
		c, err := e.DialURL("amqp://" + limited + ":" + pass + "@" + e.Addr + "/")
		if err != nil {
			return err
		}
		defer c.Close()
		ok, denied := e.Queue("wt-ok-q"), e.Queue("denied")
		step := func(what string, f func(ch *amqp.Channel) error) {
			ch, err := c.Channel()
			if err != nil {
				e.Note(what + ": no channel: " + err.Error())
				return
			}
			if err := f(ch); err != nil {
				e.Note(what + ": " + err.Error())
				return
			}
			e.Note(what + ": ok")
			ch.Close()
		}
		step("declare allowed", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(ok, false, true, false, false, nil)
			return err
		})
		step("declare denied", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(denied, false, true, false, false, nil)
			return err
		})
		step("bind from amq.direct (no read on it)", func(ch *amqp.Channel) error {
			return ch.QueueBind(ok, "k", "amq.direct", false, nil)
		})
		step("publish to amq.fanout (no write on it)", func(ch *amqp.Channel) error {
			closed := ch.NotifyClose(make(chan *amqp.Error, 1))
			ch.Publish("amq.fanout", "k", false, false, amqp.Publishing{Body: []byte("x")})
			_, err := ch.QueueDeclarePassive(ok, false, true, false, false, nil)
			if err == amqp.ErrClosed {
				if e := <-closed; e != nil {
					return e
				}
			}
			return err
		})
		step("publish to amq.direct and get", func(ch *amqp.Channel) error {
			if err := ch.Publish("amq.direct", ok, false, false, amqp.Publishing{Body: []byte("y")}); err != nil {
				return err
			}
			_, _, err := ch.Get(ok, true)
			return err
		})
		step("delete allowed", func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(ok, false, false, false)
			return err
		})
		return nil
	}}
	rabbit := rabbitMQ(t)
	want, err := record(t, rabbit, w)
	if err != nil {
		t.Fatalf("against RabbitMQ: %v", err)
	}
	got, err := record(t, ln.Addr().String(), w)
	if err != nil {
		t.Errorf("against the embedded broker: %v", err)
	}
	if d := UnifiedDiff("rabbitmq", want.String(), "wiretap", got.String()); d != "" {
		t.Fatalf("the embedded broker refuses differently from RabbitMQ 3.10:\n%s", d)
	}
	t.Logf("transcript:\n%s", want.String())
}
