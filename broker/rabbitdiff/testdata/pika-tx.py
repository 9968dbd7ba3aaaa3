# pika: transactions.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = pika.BlockingConnection(pika.ConnectionParameters(host=host, port=port, socket_timeout=5, stack_timeout=10))
ch = conn.channel()
q = prefix + "q"
print("queue " + q)
ch.queue_declare(q)
ch.tx_select()
ch.basic_publish("", q, b"rolled back")
ch.tx_rollback()
note("after rollback: %d" % ch.queue_declare(q, passive=True).method.message_count)
ch.basic_publish("", q, b"committed")
ch.tx_commit()
note("after commit: %d" % ch.queue_declare(q, passive=True).method.message_count)
try:
    ch.confirm_delivery()
except pika.exceptions.ChannelClosedByBroker as e:
    note("confirm in tx mode: %d" % e.reply_code)
ch = conn.channel()
ch.queue_delete(q)
conn.close()
