// Command loadgen runs internal/loadgen with the flags of "wiretap bench",
// for scripts that must work before (or without) the wiretap binary:
//
//	go run ./internal/capgen/loadgen --uri amqp://guest:guest@127.0.0.1:5672/ -x 2 -y 2 -s 100 -z 10s -c 100
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/wiretap-dev/wiretap/internal/loadgen"
)

func main() {
	var cfg loadgen.Config
	flag.StringVar(&cfg.URI, "uri", "amqp://guest:guest@127.0.0.1:5672/", "broker URI")
	flag.IntVar(&cfg.Producers, "x", 1, "producers")
	flag.IntVar(&cfg.Consumers, "y", 1, "consumers")
	flag.IntVar(&cfg.Size, "s", 12, "message size in bytes")
	flag.DurationVar(&cfg.Duration, "z", 10*time.Second, "duration")
	flag.StringVar(&cfg.ExchangeType, "t", "direct", "exchange type")
	flag.BoolVar(&cfg.AutoAck, "a", false, "consumers auto-ack")
	flag.IntVar(&cfg.Prefetch, "q", 0, "consumer prefetch (0: none)")
	flag.IntVar(&cfg.ConfirmBatch, "c", 0, "publisher confirms: max unconfirmed per producer (0: off)")
	flag.BoolVar(&cfg.Persistent, "persistent", false, "persistent messages")
	flag.BoolVar(&cfg.JSON, "json", false, "JSON lines output")
	flag.Parse()
	log.SetFlags(0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := loadgen.Run(ctx, cfg, os.Stdout); err != nil {
		log.Fatal(err)
	}
}
