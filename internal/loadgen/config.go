package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Config describes one run. The zero value of each field but URI and
// Duration means its PerfTest default.
type Config struct {
	// URI is the broker, amqp://user:pass@host:port/vhost.
	URI string
	// Client is the AMQP client the producers and consumers use:
	// ClientWiretap (the default: frames encoded and parsed by wiretap's
	// own decode/amqp091) or ClientAMQP091 (github.com/rabbitmq/amqp091-go,
	// so that a comparison does not rest on wiretap's codec alone). The
	// topology is declared and deleted with amqp091-go either way.
	Client string
	// Producers (-x) and Consumers (-y): connections, one channel each.
	// Defaults 1 and 1; a negative count means none.
	Producers, Consumers int
	// Size (-s) is the message body size in bytes; at least 12, the
	// timestamp and sequence number. Default 12.
	Size int
	// SizeDist, when set, draws each message's size from a distribution
	// instead of Size: "16:0.9,4096:0.1" is 16 bytes nine times in ten
	// and 4 KiB once in ten (weights are relative; each size at least 12).
	SizeDist string
	// Duration (-z) is how long the run is measured, warm-up excluded;
	// required. Rates are divided by the measured time (Result.Elapsed),
	// the clock between the first and last snapshot: Duration to within
	// the timer's lateness, unless the run ends early.
	Duration time.Duration
	// WarmUp runs the load for this long before the measured Duration;
	// nothing done during it is counted.
	WarmUp time.Duration
	// ExchangeType (-t): direct, fanout, topic or headers. Default direct.
	ExchangeType string
	// Exchange (-e) is the exchange producers publish to. Default
	// "wiretap.bench-<type>", so runs of different exchange types never
	// collide on one name. "" is not expressible here (use "amq.default"
	// for the default exchange); names starting "amq." are used as they
	// are, never declared or deleted.
	Exchange string
	// Queue (-u) names the one queue of the run. Default
	// "wiretap.bench.<random>".
	Queue string
	// Queues is the number of queues (default 1), named Queue "-1" to
	// "-N" unless QueuePattern is set. Consumer i consumes from queue
	// i mod N and producer i publishes to queue i mod N (for fanout and
	// headers every queue receives every message).
	Queues int
	// QueuePattern, QueuePatternFrom and QueuePatternTo name the queues as
	// PerfTest does: fmt's %d in the pattern is replaced by each number
	// from From to To (defaults 1 and Queues).
	QueuePattern                     string
	QueuePatternFrom, QueuePatternTo int
	// RoutingKey (-k) binds every queue and is the key of every publish.
	// Default: each queue's own name.
	RoutingKey string
	// Bindings adds that many bindings that match no publish (from the
	// first queue, keys "wiretap.other-<i>.*"), to measure routing with a
	// large table: direct and topic exchanges only.
	Bindings int
	// AutoAck (-a): consumers do not acknowledge.
	AutoAck bool
	// MultiAckEvery acknowledges every N deliveries with one basic.ack
	// (multiple); 0 or 1 acknowledges each.
	MultiAckEvery int
	// Prefetch (-q) is each consumer's basic.qos prefetch count; 0 is none.
	Prefetch int
	// ConfirmBatch (-c): with publisher confirms, at most this many
	// unconfirmed messages per producer; 0 disables confirms.
	ConfirmBatch int
	// Rate (-r) limits each producer to this many messages a second; 0 is
	// no limit.
	Rate float64
	// Persistent publishes with delivery-mode 2 and declares durable queues.
	Persistent bool
	// Keep leaves the queues and exchange in place at the end; by default
	// everything the run declared is deleted.
	Keep bool
	// JSON prints one JSON object per line instead of PerfTest's text.
	JSON bool
	// Interval between progress lines. Default 1s.
	Interval time.Duration
	// ID names the run in the output. Default "test-HHMMSS-mmm".
	ID string

	queues []string // resolved names, one per queue
	sizes  []int    // size per draw slot (sizeSlots of them) when SizeDist is set
	maxLen int      // the largest body
}

// The clients Config.Client names.
const (
	ClientWiretap = "wiretap"
	ClientAMQP091 = "amqp091-go"
)

// sizeSlots is the resolution of a size distribution: a message's size is
// sizes[rand%sizeSlots], so drawing one costs a mask and an index.
const sizeSlots = 1024

// Validate fills in the defaults and reports a configuration that cannot
// run. Its errors are the caller's mistakes (wrong usage), not the broker's.
func (c *Config) Validate() error {
	if c.URI == "" {
		return errors.New("loadgen: no broker URI")
	}
	if _, err := amqp.ParseURI(c.URI); err != nil {
		return fmt.Errorf("loadgen: broker URI: %w", err)
	}
	switch c.Client {
	case "":
		c.Client = ClientWiretap
	case ClientWiretap, ClientAMQP091:
	default:
		return fmt.Errorf("loadgen: unknown client %q (want %s or %s)", c.Client, ClientWiretap, ClientAMQP091)
	}
	if c.Duration <= 0 {
		return errors.New("loadgen: duration must be positive (the run must end by itself)")
	}
	if c.WarmUp < 0 {
		return errors.New("loadgen: warm-up cannot be negative")
	}
	if c.Producers == 0 {
		c.Producers = 1
	}
	if c.Consumers == 0 {
		c.Consumers = 1
	}
	c.Producers, c.Consumers = max(c.Producers, 0), max(c.Consumers, 0)
	if c.Producers == 0 && c.Consumers == 0 {
		return errors.New("loadgen: no producers and no consumers")
	}
	if c.Size == 0 {
		c.Size = bodyHeader
	}
	if c.Size < bodyHeader {
		return fmt.Errorf("loadgen: message size %d is under the %d bytes of timestamp and sequence", c.Size, bodyHeader)
	}
	c.maxLen = c.Size
	if c.SizeDist != "" {
		sizes, err := parseSizeDist(c.SizeDist)
		if err != nil {
			return err
		}
		c.sizes = sizes
		c.maxLen = 0
		for _, s := range sizes {
			c.maxLen = max(c.maxLen, s)
		}
	}
	switch c.ExchangeType {
	case "":
		c.ExchangeType = amqp.ExchangeDirect
	case amqp.ExchangeDirect, amqp.ExchangeFanout, amqp.ExchangeTopic, amqp.ExchangeHeaders:
	default:
		return fmt.Errorf("loadgen: unknown exchange type %q (want direct, fanout, topic or headers)", c.ExchangeType)
	}
	if c.Prefetch < 0 || c.ConfirmBatch < 0 || c.MultiAckEvery < 0 || c.Bindings < 0 || c.Queues < 0 {
		return errors.New("loadgen: prefetch, confirm window, multi-ack, bindings and queues cannot be negative")
	}
	if c.Prefetch > math.MaxUint16 {
		return fmt.Errorf("loadgen: prefetch %d over basic.qos's limit of 65535", c.Prefetch)
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return errors.New("loadgen: rate must be a finite number of messages a second, 0 for no limit")
	}
	if c.AutoAck && c.MultiAckEvery > 1 {
		return errors.New("loadgen: multi-ack needs manual acknowledgements (drop -a)")
	}
	if c.Bindings > 0 && c.ExchangeType != amqp.ExchangeDirect && c.ExchangeType != amqp.ExchangeTopic {
		return fmt.Errorf("loadgen: extra bindings match every message of a %s exchange (use direct or topic)", c.ExchangeType)
	}
	if c.Exchange == "" {
		c.Exchange = "wiretap.bench-" + c.ExchangeType
	}
	if c.Exchange == "amq.default" && (c.ExchangeType != amqp.ExchangeDirect || c.Bindings > 0 || c.RoutingKey != "") {
		return errors.New("loadgen: the default exchange is direct, routes by queue name and takes no bindings")
	}
	if err := c.resolveQueues(); err != nil {
		return err
	}
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.ID == "" {
		now := time.Now()
		c.ID = fmt.Sprintf("test-%s-%03d", now.Format("150405"), now.Nanosecond()/1e6)
	}
	return nil
}

func (c *Config) resolveQueues() error {
	if c.QueuePattern == "" {
		if c.QueuePatternFrom != 0 || c.QueuePatternTo != 0 {
			return errors.New("loadgen: --queue-pattern-from and --queue-pattern-to need --queue-pattern")
		}
		n := max(c.Queues, 1)
		if c.Queue != "" && n > 1 {
			return errors.New("loadgen: -u names one queue; use --queue-pattern for several")
		}
		base := c.Queue
		if base == "" {
			base = "wiretap.bench." + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
		}
		c.queues = c.queues[:0]
		if n == 1 {
			c.queues = append(c.queues, base)
		} else {
			for i := 1; i <= n; i++ {
				c.queues = append(c.queues, base+"-"+strconv.Itoa(i))
			}
		}
		c.Queues = n
		return nil
	}
	if c.Queue != "" {
		return errors.New("loadgen: -u and --queue-pattern both name the queues")
	}
	if strings.Count(c.QueuePattern, "%d") != 1 || strings.Count(c.QueuePattern, "%") != 1 {
		return fmt.Errorf("loadgen: queue pattern %q must hold one %%d and no other %%", c.QueuePattern)
	}
	from, to := c.QueuePatternFrom, c.QueuePatternTo
	if from == 0 {
		from = 1
	}
	if to == 0 {
		to = from + max(c.Queues, 1) - 1
	}
	if to < from {
		return fmt.Errorf("loadgen: queue pattern range %d..%d is empty", from, to)
	}
	if c.Queues > 0 && c.Queues != to-from+1 {
		return fmt.Errorf("loadgen: --queues %d disagrees with the pattern range %d..%d", c.Queues, from, to)
	}
	if to-from >= 100000 {
		return fmt.Errorf("loadgen: %d queues is too many", to-from+1)
	}
	c.queues = c.queues[:0]
	for i := from; i <= to; i++ {
		c.queues = append(c.queues, strings.Replace(c.QueuePattern, "%d", strconv.Itoa(i), 1))
	}
	c.QueuePatternFrom, c.QueuePatternTo, c.Queues = from, to, len(c.queues)
	return nil
}

// QueueNames returns the queues a validated Config declares.
func (c *Config) QueueNames() []string { return append([]string(nil), c.queues...) }

// parseSizeDist reads "SIZE:WEIGHT,..." into sizeSlots draw slots, each
// size getting a share of slots in proportion to its weight, and at least one.
func parseSizeDist(s string) ([]int, error) {
	type entry struct {
		size   int
		weight float64
	}
	var entries []entry
	var total float64
	for _, part := range strings.Split(s, ",") {
		sz, w, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			w = "1"
		}
		size, err := strconv.Atoi(sz)
		if err != nil {
			return nil, fmt.Errorf("loadgen: size distribution %q: bad size %q", s, sz)
		}
		if size < bodyHeader {
			return nil, fmt.Errorf("loadgen: size distribution %q: size %d is under the %d bytes of timestamp and sequence", s, size, bodyHeader)
		}
		weight, err := strconv.ParseFloat(w, 64)
		if err != nil || weight <= 0 || math.IsInf(weight, 0) {
			return nil, fmt.Errorf("loadgen: size distribution %q: weight %q must be a positive number", s, w)
		}
		entries = append(entries, entry{size, weight})
		total += weight
	}
	if len(entries) > sizeSlots {
		return nil, fmt.Errorf("loadgen: size distribution %q: more than %d sizes", s, sizeSlots)
	}
	slots := make([]int, 0, sizeSlots)
	var cum float64
	for i, e := range entries {
		cum += e.weight
		end := int(math.Round(cum / total * sizeSlots))
		if i == len(entries)-1 {
			end = sizeSlots
		}
		// Every size keeps at least one slot, and leaves one for each after it.
		end = max(end, len(slots)+1)
		end = min(end, sizeSlots-(len(entries)-1-i))
		for len(slots) < end {
			slots = append(slots, e.size)
		}
	}
	return slots, nil
}

// bodyHeader is the publish time (Unix ns) and sequence number every body starts with.
const bodyHeader = 12
