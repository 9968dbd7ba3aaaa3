package broker

import "time"

// TEMPORARY until broker/queue's DeadLetterHeader lands.
func deadLetterHeader(hdr []byte, reason, queue, exchange, rk string, now time.Time) ([]byte, error) {
	return hdr, nil
}
