//go:build !linux

package live

import (
	"context"
	"errors"

	"github.com/wiretap-dev/wiretap/capture"
)

// runAFPacket is Linux's: elsewhere, capturing takes dumpcap.
func runAFPacket(context.Context, *Config, *capture.Options, capture.Handler) (*capture.Stats, error) {
	return nil, errors.New("capture: the afpacket engine needs Linux; install Wireshark's dumpcap to capture here")
}
