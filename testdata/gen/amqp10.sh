#!/usr/bin/env bash
# amqp10.sh: regenerate the AMQP 1.0 captures: qpid-proton (python3) and
# github.com/Azure/go-amqp against RabbitMQ's rabbitmq_amqp1_0 plugin.
# amqp10-proton.trace is proton's own frame log (PN_TRACE_FRM=1), an oracle
# for the frames in amqp10-proton.pcapng.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
services_up rabbitmq
# Start from empty queues so reruns capture the same conversation.
for q in wt.amqp10 wt.goamqp; do
	rabbitmqctl -q -n "$WIRETAP_RABBITMQ_NODE" delete_queue "$q" >/dev/null 2>&1 || true
done

log "amqp10-proton"
capture_start lo "$TESTDATA/amqp10-proton.pcapng" lo "$AMQP_FILTER"
PN_TRACE_FRM=1 timeout 60 $PY "$GEN_DIR/proton_client.py" 127.0.0.2:5672 2>"$TESTDATA/amqp10-proton.trace"
capture_stop lo

# Capture started mid-connection after the SASL and AMQP headers and the
# client's open (the first packet is the broker's open): on RabbitMQ's
# 0-9-1 port, only the frames can tell it is AMQP 1.0.
first=$(tshark -r "$TESTDATA/amqp10-proton.pcapng" -Y 'amqp.performative == 16 && tcp.srcport == 5672' -T fields -e frame.number 2>/dev/null | head -n 1)
total=$(capinfos -M -c "$TESTDATA/amqp10-proton.pcapng" | awk -F': *' '/Number of packets/ {print $2}')
editcap -r "$TESTDATA/amqp10-proton.pcapng" "$TESTDATA/damaged-midstream-amqp10.pcapng" "$first-$total"
chmod 644 "$TESTDATA/damaged-midstream-amqp10.pcapng"

log "amqp10-goamqp"
(cd "$ROOT" && go build -o "$GEN_BIN/goamqp" ./internal/capgen/goamqp)
capture_start lo "$TESTDATA/amqp10-goamqp.pcapng" lo "$AMQP_FILTER"
timeout 120 "$GEN_BIN/goamqp" -addr amqp://127.0.0.2:5672/
capture_stop lo
