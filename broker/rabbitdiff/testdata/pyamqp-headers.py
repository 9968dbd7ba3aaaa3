# py-amqp: a headers exchange with x-match all and any.
import sys
import amqp

host, port, prefix = sys.argv[1], sys.argv[2], sys.argv[3]

def note(s):
    print("note " + s, flush=True)

conn = amqp.Connection("%s:%s" % (host, port), connect_timeout=5, read_timeout=5, write_timeout=5)
conn.connect()
ch = conn.channel()
ch.confirm_select()
x = prefix + "h"
print("exchange " + x)
ch.exchange_declare(x, "headers", auto_delete=False)
qs = {}
for name, args in (("all", {"x-match": "all", "a": 1, "b": "x"}), ("any", {"x-match": "any", "a": 1, "b": "x"})):
    q = prefix + name
    print("queue " + q)
    ch.queue_declare(q, auto_delete=False)
    ch.queue_bind(q, x, arguments=args)
    qs[name] = q
for i, h in enumerate(({"a": 1, "b": "x"}, {"a": 1}, {"b": "y"}, {})):
    ch.basic_publish_confirm(amqp.Message("m%d" % i, application_headers=h), x, "")
for name, q in sorted(qs.items()):
    got = []
    while True:
        m = ch.basic_get(q, no_ack=True)
        if m is None:
            break
        got.append(m.body)
    note("%s: %s" % (name, " ".join(got)))
    ch.queue_delete(q)
ch.exchange_delete(x)
conn.close()
