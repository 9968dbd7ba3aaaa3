# pika: reject to a dead-letter exchange and read x-death.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = pika.BlockingConnection(pika.ConnectionParameters(host=host, port=port, socket_timeout=5, stack_timeout=10))
ch = conn.channel()
ch.confirm_delivery()
dlx, dlq, q = prefix + "dlx", prefix + "dlq", prefix + "q"
print("exchange " + dlx)
print("queue " + dlq)
print("queue " + q)
ch.exchange_declare(dlx, exchange_type="fanout")
ch.queue_declare(dlq)
ch.queue_bind(dlq, dlx)
ch.queue_declare(q, arguments={"x-dead-letter-exchange": dlx})
ch.basic_publish("", q, b"reject me", pika.BasicProperties(headers={"origin": "pika"}))
m, p, b = ch.basic_get(q)
ch.basic_reject(m.delivery_tag, requeue=False)
# Dead-lettering is asynchronous: wait for it as a consumer, not by polling
# (the polls' answers would vary in number).
got = []
def on_message(c, m, p, b):
    got.append((m, p, b))
    c.stop_consuming()
ch.basic_consume(dlq, on_message, auto_ack=True, consumer_tag="dl-c")
conn.call_later(5, ch.stop_consuming)
ch.start_consuming()
ch.basic_cancel("dl-c")
m, p, b = got[0]
death = p.headers["x-death"][0]
note("dead-lettered %r reason=%s count=%s queue=%s routing-keys=%s first=%s" % (
    b, death["reason"], death["count"], death["queue"] == q, death["routing-keys"] == [q],
    p.headers["x-first-death-reason"]))
for name in (q, dlq):
    ch.queue_delete(name)
ch.exchange_delete(dlx)
conn.close()
