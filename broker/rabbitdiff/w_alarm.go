package rabbitdiff

import (
	"errors"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// AlarmWorkloads raise the broker's memory alarm, which is node-wide: they
// run one at a time, apart from Workloads, which run in parallel.
//
// What RabbitMQ 3.10 does, observed: the alarm blocks a connection only
// when it publishes. It then sends connection.blocked "low on memory" to a
// client that announced the capability, stops reading from the socket and
// holds the publish; consumers keep receiving; when the alarm clears, it
// sends connection.unblocked and routes what it held.
func AlarmWorkloads() []Workload {
	return []Workload{
		{Name: "go-alarm-blocks-publisher", Strict: true, Run: goScene(func(s *scene) error {
			return alarmScene(s, true)
		})},
		{Name: "go-alarm-no-capability", Strict: true, Run: goScene(func(s *scene) error {
			return alarmScene(s, false)
		})},
	}
}

// alarmScene publishes one message before the alarm and one during it,
// from a second connection: amqp091-go's, which announces
// connection.blocked, when notify is set, else a raw client's, which does
// not. It reads both from the scene's own channel.
func alarmScene(s *scene, notify bool) error {
	q, err := s.queue("q", nil)
	if err != nil {
		return err
	}
	var publish func(body string) error
	var blocked <-chan amqp.Blocking
	if notify {
		pub, err := amqp.DialConfig(s.e.URL(), amqp.Config{Dial: amqp.DefaultDial(DefaultStepTimeout)})
		if err != nil {
			return err
		}
		defer pub.Close()
		blocked = pub.NotifyBlocked(make(chan amqp.Blocking, 4))
		pch, err := pub.Channel()
		if err != nil {
			return err
		}
		publish = func(body string) error {
			return pch.PublishWithContext(s.ctx, "", q, false, false, text(body))
		}
	} else {
		pub, err := DialRaw(s.e.Addr)
		if err != nil {
			return err
		}
		defer pub.Close()
		if err := pub.Handshake(Handshake{}); err != nil {
			return err
		}
		if err := pub.OpenChannel(1); err != nil {
			return err
		}
		defer pub.CloseConnection()
		publish = func(body string) error {
			return pub.SendMessage(1, &amqp091.BasicPublish{RoutingKey: []byte(q)}, nil, []byte(body))
		}
	}
	if err := publish("before"); err != nil {
		return err
	}
	if err := s.e.WaitCount(s.ctx, q, 1); err != nil {
		return err
	}
	if err := s.e.MemoryAlarm(true); err != nil {
		return err
	}
	alarmOn := true
	defer func() {
		if alarmOn {
			s.e.MemoryAlarm(false)
		}
	}()
	if err := publish("during"); err != nil {
		return err
	}
	if notify {
		if err := noteBlocking(s.e, blocked); err != nil {
			return err
		}
	} else {
		// Nothing to wait for on the wire: give the broker the time a
		// notification would take (the transcript shows one if it came).
		sleep(s.ctx, 500*time.Millisecond)
	}
	// Consumers are not blocked: the message from before comes, the one
	// held does not.
	if err := s.drain(q); err != nil {
		return err
	}
	if err := s.e.MemoryAlarm(false); err != nil {
		return err
	}
	alarmOn = false
	if notify {
		if err := noteBlocking(s.e, blocked); err != nil {
			return err
		}
	}
	if err := s.e.WaitCount(s.ctx, q, 1); err != nil {
		return err
	}
	return s.drain(q)
}

func noteBlocking(e *Env, c <-chan amqp.Blocking) error {
	select {
	case b := <-c:
		e.Note("notified: blocked=" + strconv.FormatBool(b.Active) + " reason=" + b.Reason)
		return nil
	case <-time.After(DefaultStepTimeout):
		return errors.New("no connection.blocked or unblocked within " + DefaultStepTimeout.String())
	}
}
