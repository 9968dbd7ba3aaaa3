#!/usr/bin/env bash
# bad.sh: regenerate the bad-input files: garbage on the AMQP port beside a
# real conversation, a capture cut short mid-record, and a file that is not
# a capture at all. Run after amqp091.sh (cut-short is cut from its output).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
services_up rabbitmq

log "garbage-amqp"
capture_start lo "$TESTDATA/garbage-amqp.pcapng" lo "$AMQP_FILTER"
$PY "$GEN_DIR/pika_client.py" 127.0.0.2 --short
$PY "$GEN_DIR/garbage.py" 127.0.0.2
$PY "$GEN_DIR/pika_client.py" 127.0.0.2 --short
capture_stop lo

log "cut-short"
# 40000 bytes of a 65 KB pcapng: the cut falls inside an Enhanced Packet Block.
head -c 40000 "$TESTDATA/amqp091-pika.pcapng" >"$TESTDATA/cut-short.pcapng"
head -c 40000 "$TESTDATA/amqp091-pika.pcap" >"$TESTDATA/cut-short.pcap"

log "not-a-capture"
cat >"$TESTDATA/not-a-capture.txt" <<-'TXT'
	This is not a capture file. wiretap read must refuse it with one line on
	stderr and exit status 1.
TXT
