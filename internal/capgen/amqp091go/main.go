// Command amqp091go drives RabbitMQ through AMQP 0-9-1 with
// github.com/rabbitmq/amqp091-go while dumpcap records it; amqp091.sh runs
// it to regenerate testdata/amqp091-go.pcapng.
//
// Usage:
//
//	go run ./internal/capgen/amqp091go -url amqp://guest:guest@127.0.0.2:5672/ [-short] [-alarm-node NODE]
//
// It authenticates with AMQPLAIN (pika used PLAIN), sends header values of
// every type the client can encode, and with -alarm-node it raises a memory
// alarm on that node with rabbitmqctl so the broker sends connection.blocked
// and connection.unblocked.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

func main() {
	url := flag.String("url", "amqp://guest:guest@127.0.0.2:5672/", "broker URL")
	short := flag.Bool("short", false, "only connect, publish, get and close")
	alarmNode := flag.String("alarm-node", "", "RabbitMQ node to raise a memory alarm on (empty: skip connection.blocked)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("amqp091go: ")
	if err := run(*url, *short, *alarmNode); err != nil {
		log.Fatal(err)
	}
}

func run(url string, short bool, alarmNode string) error {
	conn, err := amqp.DialConfig(url, amqp.Config{
		SASL:      []amqp.Authentication{&amqp.AMQPlainAuth{Username: "guest", Password: "guest"}},
		FrameSize: 4096,
		Heartbeat: 2 * time.Second,
		Properties: amqp.Table{
			"product":      "wiretap-testdata",
			"capabilities": amqp.Table{"connection.blocked": true, "consumer_cancel_notify": true},
		},
	})
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	ctx := context.Background()

	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	if short {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return err
		}
		if err := ch.PublishWithContext(ctx, "", q.Name, false, false, amqp.Publishing{Body: []byte("hello")}); err != nil {
			return err
		}
		if _, _, err := ch.Get(q.Name, true); err != nil {
			return err
		}
		return ch.Close()
	}

	if err := ch.ExchangeDeclare("wt.go.fanout", "fanout", false, true, false, false, nil); err != nil {
		return err
	}
	if err := ch.ExchangeDeclare("wt.go.headers", "headers", false, true, false, false, nil); err != nil {
		return err
	}
	if err := ch.ExchangeBind("wt.go.headers", "", "wt.go.fanout", false, nil); err != nil {
		return err
	}
	q, err := ch.QueueDeclare("wt.go.q", false, false, false, false, amqp.Table{"x-queue-mode": "default", "x-max-priority": int16(9)})
	if err != nil {
		return err
	}
	if err := ch.QueueBind(q.Name, "", "wt.go.headers", false, amqp.Table{"x-match": "any", "kind": "test"}); err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		return err
	}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 16))

	headers := amqp.Table{
		"kind":    "test",
		"bool":    true,
		"uint8":   byte(200),
		"int8":    int8(-8),
		"int16":   int16(-16000),
		"uint16":  uint16(65000),
		"int32":   int32(-2000000000),
		"uint32":  uint32(4000000000),
		"int64":   int64(-9000000000000000000),
		"float32": float32(1.5),
		"float64": 2.718281828459045,
		"decimal": amqp.Decimal{Scale: 2, Value: 12345},
		"string":  "long string",
		"bytes":   []byte{0xde, 0xad, 0xbe, 0xef},
		"time":    time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
		"void":    nil,
		"array":   []any{int32(1), "a", []any{false}, amqp.Table{"k": "v"}},
		"table":   amqp.Table{"nested": amqp.Table{"deep": int64(3)}},
	}
	pubs := []amqp.Publishing{
		{Headers: amqp.Table{"kind": "test"}, Body: []byte("first")},
		{
			Headers:         headers,
			ContentType:     "text/plain",
			ContentEncoding: "utf-8",
			DeliveryMode:    amqp.Persistent,
			Priority:        5,
			CorrelationId:   "c-42",
			ReplyTo:         "wt.go.replies",
			Expiration:      "30000",
			MessageId:       "m-42",
			Timestamp:       time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
			Type:            "go.test",
			UserId:          "guest",
			AppId:           "amqp091go",
			Body:            []byte("all properties"),
		},
		{Headers: amqp.Table{"kind": "test"}, ContentType: "application/octet-stream", Body: make([]byte, 3*4096+100)},
	}
	for _, p := range pubs {
		if err := ch.PublishWithContext(ctx, "wt.go.fanout", "", false, false, p); err != nil {
			return err
		}
		if c := <-confirms; !c.Ack {
			return fmt.Errorf("publish %d nacked", c.DeliveryTag)
		}
	}

	if err := ch.Qos(2, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(q.Name, "wt-go-consumer", false, false, false, false, nil)
	if err != nil {
		return err
	}
	for i := 0; i < len(pubs); i++ {
		var d amqp.Delivery
		select {
		case d = <-deliveries:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("delivery %d did not arrive within 10s", i+1)
		}
		switch i {
		case 0:
			err = d.Ack(false)
		case 1:
			err = d.Nack(false, false)
		default:
			err = d.Reject(false)
		}
		if err != nil {
			return err
		}
	}
	if err := ch.Cancel("wt-go-consumer", false); err != nil {
		return err
	}
	if err := conn.UpdateSecret("guest", "refresh"); err != nil {
		log.Printf("update-secret: %v (continuing)", err)
	}

	if alarmNode != "" {
		if err := blocked(ctx, conn, ch, alarmNode); err != nil {
			return err
		}
	}

	// A deliberate channel error: publishing to a missing exchange -> 404.
	ch2, err := conn.Channel()
	if err != nil {
		return err
	}
	closed := ch2.NotifyClose(make(chan *amqp.Error, 1))
	_ = ch2.PublishWithContext(ctx, "wt.go.no-such-exchange", "", false, false, amqp.Publishing{Body: []byte("x")})
	if e := <-closed; e == nil {
		return errors.New("expected a channel error")
	}

	if _, err := ch.QueueDelete(q.Name, false, false, false); err != nil {
		return err
	}
	if err := ch.ExchangeUnbind("wt.go.headers", "", "wt.go.fanout", false, nil); err != nil {
		return err
	}
	if err := ch.ExchangeDelete("wt.go.headers", false, false); err != nil {
		return err
	}
	if err := ch.ExchangeDelete("wt.go.fanout", false, false); err != nil {
		return err
	}
	return ch.Close()
}

// blocked raises a memory alarm so RabbitMQ sends connection.blocked to this
// publishing connection, then clears it so it sends connection.unblocked.
func blocked(ctx context.Context, conn *amqp.Connection, ch *amqp.Channel, node string) error {
	notes := conn.NotifyBlocked(make(chan amqp.Blocking, 2))
	if err := rabbitmqctl(node, "set_vm_memory_high_watermark", "0"); err != nil {
		return err
	}
	if err := ch.PublishWithContext(ctx, "", "wt.go.q", false, false, amqp.Publishing{Body: []byte("while blocked")}); err != nil {
		return err
	}
	var err error
	select {
	case b := <-notes:
		log.Printf("blocked: %v", b)
	case <-time.After(10 * time.Second):
		err = errors.New("no connection.blocked within 10s")
	}
	if e := rabbitmqctl(node, "set_vm_memory_high_watermark", "0.4"); e != nil {
		return e
	}
	if err != nil {
		return err
	}
	select {
	case b := <-notes:
		log.Printf("unblocked: %v", b)
	case <-time.After(10 * time.Second):
		return errors.New("no connection.unblocked within 10s")
	}
	return nil
}

func rabbitmqctl(node string, args ...string) error {
	cmd := exec.Command("rabbitmqctl", append([]string{"-q", "-n", node}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}
