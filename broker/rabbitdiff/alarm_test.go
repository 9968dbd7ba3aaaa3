package rabbitdiff

import (
	"testing"

	"github.com/wiretap-dev/wiretap/broker"
	"github.com/wiretap-dev/wiretap/broker/internal/rabbitlive"
)

// TestDifferentialAlarm compares what a memory alarm does to publishers
// and consumers. Not parallel: the alarm stops every publisher on the
// node, so these workloads run one at a time, each for about two seconds.
func TestDifferentialAlarm(t *testing.T) {
	node := rabbitlive.Need(t)
	rabbit := rabbitMQ(t)
	RegisterAlarm(rabbit, func(on bool) error {
		// RabbitMQ's documented way to block every publisher: a
		// watermark of 0. Back to its default after.
		if on {
			node.Ctl("set_vm_memory_high_watermark", "0")
		} else {
			node.Ctl("set_vm_memory_high_watermark", "0.4")
		}
		return nil
	})
	for _, w := range AlarmWorkloads() {
		t.Run(w.Name, func(t *testing.T) {
			want, err := record(t, rabbit, w)
			if err != nil {
				t.Errorf("against RabbitMQ: %v", err)
			}
			b, addr := wiretapBroker(t)
			RegisterAlarm(addr, func(on bool) error {
				if on {
					b.SetMemoryHighWatermark(0)
				} else {
					b.SetMemoryHighWatermark(broker.PhysicalMemory() * 4 / 10)
				}
				return nil
			})
			got, err := record(t, addr, w)
			if d := UnifiedDiff("rabbitmq", want.String(), "wiretap", got.String()); d != "" {
				t.Errorf("the embedded broker differs from RabbitMQ 3.10 (workload error: %v):\n%s", err, d)
			}
		})
	}
}
