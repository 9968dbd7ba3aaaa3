package queue

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/wiretap-dev/wiretap/decode/amqp091"
)

// loadRecorded reads what RabbitMQ 3.10.8 answered when the live tests
// last ran with -update.
func loadRecorded(t *testing.T) *recorded {
	b, err := os.ReadFile(recordFile)
	if err != nil {
		t.Fatal(err)
	}
	var r recorded
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Args) == 0 || len(r.Publish) == 0 || len(r.DeadLetter) == 0 {
		t.Fatalf("%s holds %d, %d, %d cases", recordFile, len(r.Args), len(r.Publish), len(r.DeadLetter))
	}
	return &r
}

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRecordedArgs(t *testing.T) {
	for _, c := range loadRecorded(t).Args {
		args := amqp091.Table(unhex(t, c.Table))
		_, _, err := ParseArgs(args)
		got := ""
		if err != nil {
			got = err.(*ArgError).ReplyText(c.Queue, "/")
		}
		if got != c.Text {
			m, _ := args.Map()
			t.Errorf("%v on %.40s...:\n got %q\nwant %q", m, c.Queue, got, c.Text)
		}
	}
}

func TestRecordedPublish(t *testing.T) {
	for _, c := range loadRecorded(t).Publish {
		m := &Message{Header: unhex(t, c.Header)}
		err := m.ParseProperties()
		got := ""
		if err != nil {
			got = err.(*PublishError).ReplyText()
		}
		if got != c.Text {
			t.Errorf("header %s:\n got %q\nwant %q", c.Header, got, c.Text)
		}
	}
}

func TestRecordedDeadLetterHeader(t *testing.T) {
	for _, c := range loadRecorded(t).DeadLetter {
		m := &Message{Exchange: c.Exchange, RoutingKey: c.RoutingKey, Header: unhex(t, c.Stored)}
		got, err := DeadLetterHeader(nil, m, Reason(c.Reason), c.Queue, time.Unix(c.Time, 0), c.DropCC)
		if err != nil {
			t.Fatal(err)
		}
		if want := unhex(t, c.Got); !bytes.Equal(got, want) {
			t.Errorf("%s: differs from RabbitMQ's\n got:\n%s\nwant:\n%s", c.Name, dumpHeader(got), dumpHeader(want))
		}
	}
}
