# pika announces authentication_failure_close: a bad password is told.
import sys
import pika

host, port, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def note(s):
    print("note " + s, flush=True)

for user, password, vhost in (("guest", "wrong", "/"), ("nobody", "guest", "/"), ("guest", "guest", "nope")):
    params = pika.ConnectionParameters(host=host, port=port, virtual_host=vhost,
                                       credentials=pika.PlainCredentials(user, password),
                                       socket_timeout=5, stack_timeout=10, connection_attempts=1)
    try:
        pika.BlockingConnection(params).close()
        note("%s on %s: connected" % (user, vhost))
    except pika.exceptions.ProbableAuthenticationError as e:
        note("%s on %s: probable authentication error" % (user, vhost))
    except pika.exceptions.AuthenticationError as e:
        note("%s on %s: authentication error" % (user, vhost))
    except pika.exceptions.ConnectionClosedByBroker as e:
        note("%s on %s: closed by broker %d" % (user, vhost, e.reply_code))
    except pika.exceptions.AMQPConnectionError as e:
        note("%s on %s: connection error %s" % (user, vhost, type(e).__name__))
