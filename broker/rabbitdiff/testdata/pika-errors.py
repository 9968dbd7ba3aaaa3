# pika: soft errors close the channel, hard errors the connection.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

def params():
    return pika.ConnectionParameters(host=host, port=port, socket_timeout=5, stack_timeout=10)

owner = pika.BlockingConnection(params())
och = owner.channel()
q = prefix + "excl"
print("queue " + q)
och.queue_declare(q, exclusive=True)

other = pika.BlockingConnection(params())

def attempt(what, f):
    ch = other.channel()
    try:
        f(ch)
        note(what + ": ok")
        ch.close()
    except pika.exceptions.ChannelClosedByBroker as e:
        note("%s: channel closed %d" % (what, e.reply_code))

attempt("declare another's exclusive queue", lambda ch: ch.queue_declare(q, exclusive=True))
attempt("passive declare of a missing queue", lambda ch: ch.queue_declare(prefix + "missing", passive=True))
d = prefix + "plain"
print("queue " + d)
attempt("declare", lambda ch: ch.queue_declare(d))
attempt("inequivalent redeclare", lambda ch: ch.queue_declare(d, durable=True))
attempt("bind to the default exchange", lambda ch: ch.queue_bind(d, ""))
attempt("declare amq.pika", lambda ch: ch.exchange_declare("amq.pika"))
def bad_ack(ch):
    ch.basic_ack(99)
    ch.queue_declare(d, passive=True)
attempt("ack an unknown tag", bad_ack)
attempt("delete", lambda ch: ch.queue_delete(d))

ch = other.channel()
try:
    ch.exchange_declare(prefix + "x", exchange_type="x-wiretap-nonsense")
    note("invalid exchange type: ok")
except pika.exceptions.ConnectionClosedByBroker as e:
    note("invalid exchange type: connection closed %d" % e.reply_code)
except pika.exceptions.ChannelClosedByBroker as e:
    note("invalid exchange type: channel closed %d" % e.reply_code)
owner.close()
