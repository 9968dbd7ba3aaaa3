# pika: publisher confirms, mandatory returns, nacks from reject-publish.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

params = pika.ConnectionParameters(host=host, port=port, socket_timeout=5, stack_timeout=10)
conn = pika.BlockingConnection(params)
ch = conn.channel()
ch.confirm_delivery()
q = prefix + "q"
print("queue " + q)
ch.queue_declare(q, arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
ch.basic_publish("", q, b"fits")
try:
    ch.basic_publish("", q, b"refused")
except pika.exceptions.NackError as e:
    note("nacked: %d message(s)" % len(e.messages))
try:
    ch.basic_publish("", prefix + "nowhere", b"unroutable", mandatory=True)
except pika.exceptions.UnroutableError as e:
    note("returned: %d message(s)" % len(e.messages))
ch.basic_publish("", prefix + "nowhere", b"dropped quietly")
ok = ch.queue_declare(q, passive=True)
note("queue holds %d" % ok.method.message_count)
ch.queue_delete(q)
conn.close()
