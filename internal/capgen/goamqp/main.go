// Command goamqp sends and receives AMQP 1.0 messages with
// github.com/Azure/go-amqp while dumpcap records it; amqp10.sh runs it to
// regenerate testdata/amqp10-goamqp.pcapng.
//
// Usage:
//
//	go run ./internal/capgen/goamqp -addr amqp://guest:guest@127.0.0.2:5672/
//
// Messages carry footers with x-opt-crc-32 and x-opt-adler-32 annotations
// computed over the encoded bare message (properties, application-properties
// and body: everything MarshalBinary writes when there is no header,
// annotation or footer section), and one whose checksum is deliberately
// wrong.
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"log"
	"time"

	"github.com/Azure/go-amqp"
)

const address = "/queue/wt.goamqp"

func main() {
	addr := flag.String("addr", "amqp://127.0.0.2:5672/", "broker address")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("goamqp: ")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string) error {
	conn, err := amqp.Dial(ctx, addr, &amqp.ConnOptions{
		SASLType:     amqp.SASLTypePlain("guest", "guest"),
		MaxFrameSize: 1024,
		IdleTimeout:  10 * time.Second,
		ContainerID:  "wiretap-goamqp",
	})
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.Close()
	session, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	sender, err := session.NewSender(ctx, address, nil)
	if err != nil {
		return err
	}

	big := make([]byte, 5000)
	for i := range big {
		big[i] = byte(i * 13)
	}
	type spec struct {
		id, algorithm string
		wrong         bool
		data          [][]byte
		value         any
	}
	specs := []spec{
		{id: "go-plain", value: "amqp-value body"},
		{id: "go-crc", algorithm: "crc-32", data: [][]byte{[]byte("one "), []byte("two")}},
		{id: "go-adler", algorithm: "adler-32", data: [][]byte{[]byte("adler body")}},
		{id: "go-crc-wrong", algorithm: "crc-32", wrong: true, data: [][]byte{[]byte("tampered")}},
		{id: "go-big", algorithm: "crc-32", data: [][]byte{big}},
	}
	for _, s := range specs {
		msg := &amqp.Message{
			Properties:            &amqp.MessageProperties{MessageID: s.id, Subject: &[]string{"wiretap"}[0]},
			ApplicationProperties: map[string]any{"client": "go-amqp", "n": int64(len(s.id))},
			Data:                  s.data,
			Value:                 s.value,
		}
		if s.algorithm != "" {
			bare, err := msg.MarshalBinary()
			if err != nil {
				return err
			}
			var sum uint32
			if s.algorithm == "crc-32" {
				sum = crc32.ChecksumIEEE(bare)
			} else {
				sum = adler32.Checksum(bare)
			}
			if s.wrong {
				sum ^= 0xdeadbeef
			}
			msg.Footer = amqp.Annotations{"x-opt-" + s.algorithm: sum}
		}
		if err := sender.Send(ctx, msg, nil); err != nil {
			return fmt.Errorf("send %s: %w", s.id, err)
		}
	}
	// RabbitMQ 3.10 answers the closing detach without closed=true, which
	// go-amqp keeps waiting for: bound the wait and carry on.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	if err := sender.Close(cctx); err != nil {
		log.Printf("sender close: %v (continuing)", err)
	}
	ccancel()

	// A second session receives (go-amqp links on one session are fine too;
	// two sessions put channel 1 on the wire).
	rsession, err := conn.NewSession(ctx, nil)
	if err != nil {
		return err
	}
	receiver, err := rsession.NewReceiver(ctx, address, &amqp.ReceiverOptions{Credit: 10})
	if err != nil {
		return fmt.Errorf("attach receiver: %w", err)
	}
	for i := range specs {
		msg, err := receiver.Receive(ctx, nil)
		if err != nil {
			return fmt.Errorf("receive %d: %w", i+1, err)
		}
		switch i {
		case 1:
			err = receiver.RejectMessage(ctx, msg, &amqp.Error{Condition: "wiretap:test", Description: "rejected on purpose"})
		default:
			err = receiver.AcceptMessage(ctx, msg)
		}
		if err != nil {
			return err
		}
	}
	cctx, ccancel = context.WithTimeout(ctx, 2*time.Second)
	if err := receiver.Close(cctx); err != nil {
		log.Printf("receiver close: %v (continuing)", err)
	}
	ccancel()
	if err := rsession.Close(ctx); err != nil {
		return err
	}
	if err := session.Close(ctx); err != nil {
		return err
	}
	return conn.Close()
}
