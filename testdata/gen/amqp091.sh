#!/usr/bin/env bash
# amqp091.sh: regenerate the AMQP 0-9-1 captures from pika and amqp091-go
# talking to RabbitMQ. Each client run is recorded twice at once: on lo
# (pcapng; Linux lo records Ethernet headers) and on "any"
# (Linux cooked capture), so both files hold the same conversation.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
services_up rabbitmq

log "amqp091-pika"
capture_start lo "$TESTDATA/amqp091-pika.pcapng" lo "$AMQP_FILTER"
capture_start any "$TESTDATA/amqp091-pika-any.pcapng" any "$AMQP_FILTER" -y LINUX_SLL2
$PY "$GEN_DIR/pika_client.py" 127.0.0.2
capture_stop any
capture_stop lo
editcap -F pcap "$TESTDATA/amqp091-pika.pcapng" "$TESTDATA/amqp091-pika.pcap"

log "amqp091-go"
(cd "$ROOT" && go build -o "$GEN_DIR/.amqp091go" ./testdata/gen/amqp091go)
capture_start lo "$TESTDATA/amqp091-go.pcapng" lo "$AMQP_FILTER"
capture_start any "$TESTDATA/amqp091-go-any.pcapng" any "$AMQP_FILTER" -y LINUX_SLL
timeout 120 "$GEN_DIR/.amqp091go" -url "amqp://guest:guest@127.0.0.2:5672/" -alarm-node "$WIRETAP_RABBITMQ_NODE"
capture_stop any
capture_stop lo
editcap -F pcap "$TESTDATA/amqp091-go.pcapng" "$TESTDATA/amqp091-go.pcap"
rm -f "$GEN_DIR/.amqp091go"

log "amqp091-ipv6 (both clients over ::1)"
(cd "$ROOT" && go build -o "$GEN_DIR/.amqp091go" ./testdata/gen/amqp091go)
capture_start lo "$TESTDATA/amqp091-ipv6.pcapng" lo "$AMQP_FILTER"
$PY "$GEN_DIR/pika_client.py" ::1 --short
timeout 60 "$GEN_DIR/.amqp091go" -url "amqp://guest:guest@[::1]:5672/" -short
capture_stop lo
rm -f "$GEN_DIR/.amqp091go"
