# py-amqp: consume, reject with requeue, redelivery, recover, cancel.
import sys
import amqp

host, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = amqp.Connection("%s:%s" % (host, port), connect_timeout=5, read_timeout=5, write_timeout=5)
conn.connect()
ch = conn.channel()
q = prefix + "q"
print("queue " + q)
ch.queue_declare(q, auto_delete=False)
pub = conn.channel()
pub.confirm_select()
for i in range(3):
    pub.basic_publish_confirm(amqp.Message("m%d" % i), "", q)
seen = []
def on_message(m):
    seen.append((m.body, m.delivery_info["redelivered"]))
ch.basic_qos(0, 3, False)
ch.basic_consume(q, consumer_tag="pyamqp-c", callback=on_message)
while len(seen) < 3:
    conn.drain_events(timeout=5)
ch.basic_reject(1, requeue=True)
while len(seen) < 4:
    conn.drain_events(timeout=5)
ch.basic_recover(requeue=True)
while len(seen) < 7:
    conn.drain_events(timeout=5)
ch.basic_ack(7, multiple=True)
ch.basic_cancel("pyamqp-c")
note("seen %r" % seen)
ch.queue_delete(q)
conn.close()
