# pika: declare, publish with properties, get, consume, ack, cancel.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

params = pika.ConnectionParameters(host=host, port=port, socket_timeout=5,
                                   blocked_connection_timeout=5, stack_timeout=10)
conn = pika.BlockingConnection(params)
ch = conn.channel()
q = prefix + "q"
print("queue " + q)
ok = ch.queue_declare(q)
note("declared %s with %d messages" % (ok.method.queue, ok.method.message_count))
props = pika.BasicProperties(content_type="text/plain", delivery_mode=2,
                             headers={"n": 1, "s": "str", "l": [1, "two"],
                                      "b": True, "t": {"k": "v"}},
                             message_id="m1", correlation_id="c1", priority=4)
for i in range(3):
    ch.basic_publish("", q, ("hello %d" % i).encode(), props)
method, header, body = ch.basic_get(q, auto_ack=False)
note("got %r redelivered=%s" % (body, method.redelivered))
ch.basic_nack(method.delivery_tag, requeue=True)
got = []
def on_message(c, m, p, b):
    got.append(b)
    c.basic_ack(m.delivery_tag)
    if len(got) == 3:
        c.stop_consuming()
ch.basic_consume(q, on_message, consumer_tag="pika-c")
conn.call_later(5, ch.stop_consuming)
ch.start_consuming()
note("consumed %r" % got)
ch.queue_delete(q)
ch.close()
conn.close()
