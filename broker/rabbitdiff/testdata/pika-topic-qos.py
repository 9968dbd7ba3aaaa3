# pika: topic routing and basic.qos with a consumer that acks late.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = pika.BlockingConnection(pika.ConnectionParameters(host=host, port=port, socket_timeout=5, stack_timeout=10))
ch = conn.channel()
ch.confirm_delivery()
x, q = prefix + "logs", prefix + "q"
print("exchange " + x)
print("queue " + q)
ch.exchange_declare(x, exchange_type="topic")
ch.queue_declare(q)
ch.queue_bind(q, x, routing_key="app.*.error")
ch.queue_bind(q, x, routing_key="audit.#")
for rk in ("app.web.error", "app.web.info", "audit", "audit.login.ok", "app..error", "app.error"):
    ch.basic_publish(x, rk, rk.encode())
c2 = conn.channel()
c2.basic_qos(prefetch_count=1)
seen = []
def on_message(c, m, p, b):
    seen.append(b.decode())
    c.basic_ack(m.delivery_tag)
    if len(seen) == 4:
        c.stop_consuming()
c2.basic_consume(q, on_message, consumer_tag="topic-c")
conn.call_later(5, c2.stop_consuming)
c2.start_consuming()
note("routed " + " ".join(seen))
ch.queue_delete(q)
ch.exchange_delete(x)
conn.close()
