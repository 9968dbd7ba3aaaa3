# py-amqp logs in with AMQPLAIN.
import sys
import amqp

host, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = amqp.Connection("%s:%s" % (host, port), login_method="AMQPLAIN", connect_timeout=5, read_timeout=5, write_timeout=5)
conn.connect()
note("server mechanisms include AMQPLAIN: %s" % (b"AMQPLAIN" in conn.mechanisms))
ch = conn.channel()
q = prefix + "q"
print("queue " + q)
name, count, consumers = ch.queue_declare(q, auto_delete=False)
ch.basic_publish(amqp.Message("via amqplain", content_type="text/plain", application_headers={"k": "v"}), "", q)
# Published on this channel, so already in the queue.
m = ch.basic_get(q, no_ack=True)
note("got %r" % (m.body if m else None))
ch.queue_delete(q)
ch.close()
conn.close()

bad = amqp.Connection("%s:%s" % (host, port), login_method="AMQPLAIN", password="wrong", connect_timeout=5, read_timeout=5)
try:
    bad.connect()
    note("wrong password: connected")
except amqp.exceptions.AccessRefused as e:
    note("wrong password: access refused %d" % e.reply_code)
except Exception as e:
    note("wrong password: %s" % type(e).__name__)
