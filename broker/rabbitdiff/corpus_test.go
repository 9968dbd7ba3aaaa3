package rabbitdiff

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

var writeCorpus = flag.Bool("corpus", false, "rewrite the fuzz seed corpus from sessions recorded against RabbitMQ")

// TestWriteCorpus records a few workloads against RabbitMQ and keeps their
// bytes as the fuzz targets' seed corpus (go test -run TestWriteCorpus
// -corpus).
func TestWriteCorpus(t *testing.T) {
	if !*writeCorpus {
		t.Skip("run with -corpus to rewrite testdata/fuzz")
	}
	target := rabbitMQ(t)
	keep := map[string]bool{"go-connect": true, "go-exchange-headers": true, "go-dlx-cycle": true, "go-publish-mandatory-confirm": true,
		"go-publish-properties": true, "go-consume-server-cancel": true, "go-qos-global": true,
		"raw-bad-protocol-header": true, "raw-consume-server-tag": true, "go-direct-reply-to": true, "go-tx": true}
	for _, w := range Workloads() {
		if !keep[w.Name] {
			continue
		}
		relay, err := Listen(target)
		if err != nil {
			t.Fatal(err)
		}
		e := &Env{Addr: relay.Addr(), Prefix: newPrefix(), target: target}
		ctx, cancel := context.WithTimeout(context.Background(), DefaultWorkloadTimeout)
		if err := w.Run(ctx, e); err != nil {
			t.Errorf("%s: %v", w.Name, err)
		}
		cancel()
		e.closeDirect()
		recs := relay.Close(2 * time.Second)
		cleanup(target, e)
		for i, r := range recs {
			name := w.Name + "-c" + strconv.Itoa(i+1)
			writeSeed(t, "FuzzBuild", name, "[]byte("+strconv.Quote(string(r.ServerBytes))+")")
			writeSeed(t, "FuzzWatch", name, "[]byte("+strconv.Quote(string(r.ClientBytes))+")\n[]byte("+
				strconv.Quote(string(r.ServerBytes))+")\nuint8("+strconv.Itoa(len(name))+")")
		}
	}
}

func writeSeed(t *testing.T, target, name, values string) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+values+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
