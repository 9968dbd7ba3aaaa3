#!/usr/bin/python3
"""pika_client.py: drive RabbitMQ through most of AMQP 0-9-1 with pika.

Usage: pika_client.py HOST [PORT] [--short]

Run by amqp091.sh while dumpcap records; every step is something a capture
reader must decode. --short does only connect, one publish, one get and close
(used for the IPv6 capture).
"""

import datetime
import decimal
import sys
import time

import pika
from pika.exceptions import ChannelClosedByBroker

host = sys.argv[1]
port = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 5672
short = "--short" in sys.argv

params = pika.ConnectionParameters(
    host=host,
    port=port,
    credentials=pika.PlainCredentials("guest", "guest"),
    # RabbitMQ's smallest frame-max: a 20 KB body splits into 5+ body frames.
    frame_max=4096,
    # Short heartbeat so a pause below puts heartbeat frames on the wire.
    heartbeat=2,
    client_properties={"product": "wiretap-testdata", "capabilities": {"publisher_confirms": True}},
)
conn = pika.BlockingConnection(params)
ch = conn.channel()

if short:
    ch.queue_declare("wt.v6", auto_delete=True)
    ch.basic_publish("", "wt.v6", b"hello over ::1", pika.BasicProperties(content_type="text/plain"))
    ch.basic_get("wt.v6", auto_ack=True)
    ch.queue_delete("wt.v6")
    ch.close()
    conn.close()
    sys.exit(0)

# Topology: exchange, queue, bind, exchange-to-exchange bind.
ch.exchange_declare("wt.direct", "direct", durable=False, auto_delete=False)
ch.exchange_declare("wt.topic", "topic", arguments={"alternate-exchange": "amq.fanout"})
ch.exchange_bind(destination="wt.topic", source="wt.direct", routing_key="k.#")
ch.queue_declare("wt.q1", arguments={"x-max-length": 1000, "x-message-ttl": 60000})
ch.queue_declare("wt.q2", exclusive=True)
ch.queue_bind("wt.q1", "wt.direct", routing_key="k1")
ch.queue_bind("wt.q2", "wt.topic", routing_key="k.#")

# Publisher confirms: confirm.select, then each publish is acked.
ch.confirm_delivery()
ch.basic_publish("wt.direct", "k1", b"plain message")
ch.basic_publish("wt.direct", "k1", b"", pika.BasicProperties())  # empty body: no body frame

all_props = pika.BasicProperties(
    content_type="application/json",
    content_encoding="identity",
    headers={
        "str": "text",
        "bytes": b"\x00\x01\x02\xff",
        "true": True,
        "false": False,
        "int32": -123456,
        "int64": 1 << 40,
        "decimal": decimal.Decimal("3.14159"),
        "decimal-int": decimal.Decimal("42"),
        "timestamp": datetime.datetime(2024, 2, 29, 12, 34, 56),
        "void": None,
        "array": [1, "two", True, [3, 4], {"in": "array"}],
        "nested": {"level": 1, "deeper": {"level": 2, "list": []}},
        "empty-table": {},
    },
    delivery_mode=2,
    priority=7,
    correlation_id="corr-1",
    reply_to="wt.replies",
    expiration="60000",
    message_id="msg-all-props",
    timestamp=1700000000,
    type="test.type",
    user_id="guest",
    app_id="wiretap-gen",
    cluster_id="cluster-x",
)
ch.basic_publish("wt.direct", "k1", b'{"all":"properties"}', all_props)

big = bytes((i * 7) & 0xFF for i in range(20 * 1024))
ch.basic_publish("wt.direct", "k1", big, pika.BasicProperties(content_type="application/octet-stream"))
ch.basic_publish("wt.direct", "k.x", b"routed through exchange binding")
ch.basic_publish("wt.direct", "k1", b"mandatory", mandatory=True)
try:
    # Unroutable and mandatory: the broker answers basic.return, then basic.ack.
    ch.basic_publish("wt.direct", "nowhere", b"returned", mandatory=True)
except pika.exceptions.UnroutableError:
    pass
for i in range(3):
    ch.basic_publish("", "wt.q1", ("msg %d" % i).encode())

# basic.get: one with a message, then an empty one after purging.
ch.basic_get("wt.q2", auto_ack=True)
method, props, body = ch.basic_get("wt.q1", auto_ack=False)
ch.basic_ack(method.delivery_tag)

# Consume with a prefetch window; ack one, nack one, reject one.
ch.basic_qos(prefetch_count=5)
seen = []


def on_message(chan, method, props, body):
    seen.append(method.delivery_tag)
    n = len(seen)
    if n == 1:
        chan.basic_ack(method.delivery_tag)
    elif n == 2:
        chan.basic_nack(method.delivery_tag, requeue=False)
    elif n == 3:
        chan.basic_reject(method.delivery_tag, requeue=False)
    else:
        chan.basic_ack(method.delivery_tag, multiple=True)


tag = ch.basic_consume("wt.q1", on_message, consumer_tag="wt-consumer")
deadline = time.time() + 5
while len(seen) < 8 and time.time() < deadline:
    conn.process_data_events(time_limit=0.2)
ch.basic_cancel(tag)
ch.basic_recover(requeue=True)

# Transactions on a second channel.
tx = conn.channel()
tx.tx_select()
tx.basic_publish("", "wt.q1", b"in a transaction")
tx.tx_commit()
tx.basic_publish("", "wt.q1", b"rolled back")
tx.tx_rollback()
tx.close()

# Idle past the heartbeat interval: both peers send heartbeat frames.
conn.sleep(5)

# Teardown.
ch.queue_purge("wt.q1")
ch.basic_get("wt.q1")  # get-empty
ch.queue_unbind("wt.q1", "wt.direct", routing_key="k1")
ch.exchange_unbind(destination="wt.topic", source="wt.direct", routing_key="k.#")
ch.queue_delete("wt.q1")
ch.exchange_delete("wt.topic")
ch.exchange_delete("wt.direct")

# A channel error: passive declare of a queue that does not exist -> 404.
bad = conn.channel()
try:
    bad.queue_declare("wt.no-such-queue", passive=True)
except ChannelClosedByBroker as e:
    print("expected channel error:", e, file=sys.stderr)

ch.close()
conn.close()
