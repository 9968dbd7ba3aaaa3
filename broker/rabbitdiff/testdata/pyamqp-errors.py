# py-amqp: channel and connection errors by code.
import sys
import amqp

host, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def note(s):
    print("note " + s, flush=True)

def connect(vhost="/"):
    c = amqp.Connection("%s:%s" % (host, port), virtual_host=vhost, connect_timeout=5, read_timeout=5, write_timeout=5)
    c.connect()
    return c

conn = connect()
def attempt(what, f):
    ch = conn.channel()
    try:
        f(ch)
        note(what + ": ok")
        ch.close()
    except amqp.exceptions.AMQPError as e:
        note("%s: %s %d" % (what, type(e).__name__, e.reply_code))

q = prefix + "q"
print("queue " + q)
attempt("passive missing queue", lambda ch: ch.queue_declare(prefix + "missing", passive=True))
attempt("declare", lambda ch: ch.queue_declare(q, auto_delete=False))
attempt("bind default exchange", lambda ch: ch.queue_bind(q, ""))
attempt("delete amq.direct", lambda ch: ch.exchange_delete("amq.direct"))
attempt("inequivalent", lambda ch: ch.queue_declare(q, auto_delete=True))
attempt("consume missing", lambda ch: ch.basic_consume(prefix + "missing", consumer_tag="x"))
attempt("delete", lambda ch: ch.queue_delete(q))
conn.close()

try:
    connect("nope")
    note("vhost nope: connected")
except amqp.exceptions.AMQPError as e:
    note("vhost nope: %s %d" % (type(e).__name__, e.reply_code))
