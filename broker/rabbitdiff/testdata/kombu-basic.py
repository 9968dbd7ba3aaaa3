# kombu (Celery's messaging library) over its py-amqp transport: entity
# declaration, serialised publishes with headers, a prefetching consumer,
# SimpleQueue, and the qos check kombu makes on the server's product and
# version.
import sys
import kombu

host, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def note(s):
    print("note " + s, flush=True)

url = "amqp://guest:guest@%s:%s//" % (host, port)
x = kombu.Exchange(prefix + "x", type="direct", durable=False, auto_delete=False)
q = kombu.Queue(prefix + "q", exchange=x, routing_key="work", durable=False)
print("exchange " + x.name)
print("queue " + q.name)
with kombu.Connection(url, connect_timeout=5, transport_options={"confirm_publish": True}) as conn:
    conn.connect()
    # Celery decides how to apply prefetch from this: RabbitMQ 3.3 and
    # later redefine basic.qos global, and kombu recognises them by
    # product and version.
    note("qos semantics match spec: %r" % conn.transport.qos_semantics_matches_spec(conn.connection))
    producer = conn.Producer(serializer="json")
    for i in range(5):
        producer.publish({"n": i, "text": "task %d" % i}, exchange=x, routing_key="work",
                         declare=[q], headers={"attempt": i}, retry=False)
    got = []
    def on_message(body, message):
        got.append((body["n"], message.headers.get("attempt"), message.content_type,
                    message.delivery_info["redelivered"]))
        if body["n"] == 1 and not message.delivery_info["redelivered"]:
            message.requeue()
        else:
            message.ack()
    # Prefetch 1 makes the order certain: the requeued message comes back
    # next, at its old place at the head.
    with conn.Consumer(q, callbacks=[on_message], prefetch_count=1, tag_prefix=prefix):
        while len(got) < 6:
            conn.drain_events(timeout=5)
    note("consumed %r" % got)
    sq = conn.SimpleQueue(prefix + "simple", serializer="json")
    print("queue " + prefix + "simple")
    print("exchange " + prefix + "simple")
    sq.put({"hello": "simple"})
    m = sq.get(block=True, timeout=5)
    note("simple got %r %s" % (m.payload, m.content_type))
    m.ack()
    note("simple left %d" % sq.qsize())
    sq.close()
    bound = q(conn.default_channel)
    bound.delete()
    x(conn.default_channel).delete()
