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
(cd "$ROOT" && go build -o "$GEN_BIN/amqp091go" ./internal/capgen/amqp091go)
capture_start lo "$TESTDATA/amqp091-go.pcapng" lo "$AMQP_FILTER"
capture_start any "$TESTDATA/amqp091-go-any.pcapng" any "$AMQP_FILTER" -y LINUX_SLL
timeout 120 "$GEN_BIN/amqp091go" -url "amqp://guest:guest@127.0.0.2:5672/" -alarm-node "$WIRETAP_RABBITMQ_NODE"
capture_stop any
capture_stop lo
editcap -F pcap "$TESTDATA/amqp091-go.pcapng" "$TESTDATA/amqp091-go.pcap"

log "amqp091-ipv6 (both clients over ::1)"
capture_start lo "$TESTDATA/amqp091-ipv6.pcapng" lo "$AMQP_FILTER"
$PY "$GEN_DIR/pika_client.py" ::1 --short
timeout 60 "$GEN_BIN/amqp091go" -url "amqp://guest:guest@[::1]:5672/" -short
capture_stop lo

log "damaged variants of amqp091-pika (real packets, some taken away)"
# The packet holding the second body frame of the 20 KB message.
body2=$(tshark -r "$TESTDATA/amqp091-pika.pcapng" -Y 'amqp.type == 3 && frame.len > 4000' -T fields -e frame.number 2>/dev/null | sed -n 2p)
total=$(capinfos -M -c "$TESTDATA/amqp091-pika.pcapng" | awk -F': *' '/Number of packets/ {print $2}')
# Capture started mid-connection, inside that message: no SYN, no
# protocol header, the first bytes are an orphan body frame.
editcap -r "$TESTDATA/amqp091-pika.pcapng" "$TESTDATA/damaged-midstream.pcapng" "$body2-$total"
# One data packet lost: a gap in the client's stream in mid-message.
editcap "$TESTDATA/amqp091-pika.pcapng" "$TESTDATA/damaged-lost-segment.pcapng" "$body2"
# Snaplen 200: every large segment cut short, the rest of it a gap.
editcap -s 200 "$TESTDATA/amqp091-pika.pcapng" "$TESTDATA/damaged-snap200.pcapng"

log "link-layer variants of amqp091-go (same packets, other framings)"
editcap -C 14 -T rawip "$TESTDATA/amqp091-go.pcap" "$TESTDATA/amqp091-go-rawip.pcap"
$PY "$GEN_DIR/relink.py" null "$TESTDATA/amqp091-go.pcap" "$TESTDATA/amqp091-go-null.pcap"
$PY "$GEN_DIR/relink.py" vlan "$TESTDATA/amqp091-go.pcap" "$TESTDATA/amqp091-go-vlan.pcap"
# One pcapng with three interfaces of three link types, three different
# conversations interleaved by time: pika on Ethernet, amqp091-go on Linux
# cooked v1, and the IPv6 conversation as NULL (as a macOS lo0 capture).
editcap -F pcap "$TESTDATA/amqp091-ipv6.pcapng" "$GEN_BIN/ipv6.pcap"
$PY "$GEN_DIR/relink.py" null "$GEN_BIN/ipv6.pcap" "$GEN_BIN/ipv6-null.pcap"
mergecap -F pcapng -w "$TESTDATA/amqp091-multi-iface.pcapng" \
	"$TESTDATA/amqp091-pika.pcapng" "$TESTDATA/amqp091-go-any.pcapng" "$GEN_BIN/ipv6-null.pcap"
chmod 644 "$TESTDATA"/amqp091-* "$TESTDATA"/damaged-*
