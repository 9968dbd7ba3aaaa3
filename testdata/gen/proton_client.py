#!/usr/bin/python3
"""proton_client.py: send and receive AMQP 1.0 messages with qpid-proton.

Usage: PN_TRACE_FRM=1 proton_client.py HOST:PORT 2>trace

Run by amqp10.sh against RabbitMQ's rabbitmq_amqp1_0 plugin while dumpcap
records. The client asks for max-frame-size 512, so the broker must split
the large message it delivers back over many transfer frames. Messages are
encoded section by section, so some carry several data sections and a
footer whose x-opt-crc-32 / x-opt-adler-32 annotation is right, and some
one that is deliberately wrong. The checksum covers the bytes from the first
bare-message section (properties) up to the footer.
"""

import sys
import zlib

from proton import Data, Described, symbol, ubyte, uint, ulong
from proton.handlers import MessagingHandler
from proton.reactor import Container

ADDRESS = "/queue/wt.amqp10"

HEADER = 0x70
PROPERTIES = 0x73
APPLICATION_PROPERTIES = 0x74
DATA = 0x75
AMQP_SEQUENCE = 0x76
AMQP_VALUE = 0x77
FOOTER = 0x78


def section(code, value):
    d = Data()
    d.put_object(Described(ulong(code), value))
    return d.encode()


def properties(message_id, content_type=None):
    # message-id, user-id, to, subject, reply-to, correlation-id, content-type
    return section(PROPERTIES, [message_id, None, ADDRESS, "wiretap", None, None,
                                symbol(content_type) if content_type else None])


def footer(algorithm, value):
    return section(FOOTER, {symbol("x-opt-" + algorithm): uint(value)})


def checksum(algorithm, bare):
    if algorithm == "crc-32":
        return zlib.crc32(bare) & 0xFFFFFFFF
    return zlib.adler32(bare) & 0xFFFFFFFF


def message(message_id, body_sections, algorithm=None, wrong=False, header=False):
    """Return (raw bytes, description) of one encoded message."""
    head = section(HEADER, [True, ubyte(7)]) if header else b""
    bare = (properties(message_id, "application/octet-stream")
            + section(APPLICATION_PROPERTIES, {"source": "proton", "n": 7, "ok": True})
            + b"".join(body_sections))
    foot = b""
    if algorithm:
        value = checksum(algorithm, bare)
        if wrong:
            value ^= 0xDEADBEEF
        foot = footer(algorithm, value)
    return head + bare + foot


def messages():
    data3 = [section(DATA, b"first data section "), section(DATA, b"second "), section(DATA, b"third")]
    big = section(DATA, bytes((i * 31) & 0xFF for i in range(6000)))
    return [
        ("no-footer", properties("no-footer") + section(AMQP_VALUE, "an amqp-value string")),
        ("crc-ok", message("crc-ok", data3, "crc-32", header=True)),
        ("adler-ok", message("adler-ok", data3, "adler-32")),
        ("crc-wrong", message("crc-wrong", data3, "crc-32", wrong=True)),
        ("adler-wrong", message("adler-wrong", data3, "adler-32", wrong=True)),
        ("sequence", message("sequence", [section(AMQP_SEQUENCE, [1, "two", 3.0])], "crc-32")),
        ("big-crc", message("big-crc", [big], "crc-32")),
        ("value-map", properties("value-map") + section(AMQP_VALUE, {"k": "v", "list": [1, 2, 3]})),
    ]


class Client(MessagingHandler):
    def __init__(self, url):
        super().__init__(auto_accept=False, prefetch=0)
        self.url = url
        self.todo = messages()
        self.sent = 0
        self.received = 0

    def on_start(self, event):
        # heartbeat=2: idle-time-out 2000 ms, so the broker sends empty frames
        # during the pause below.
        self.conn = event.container.connect(self.url, allowed_mechs="PLAIN", max_frame_size=512,
                                            heartbeat=2, user="guest", password="guest")
        self.sender = event.container.create_sender(self.conn, ADDRESS)

    def on_sendable(self, event):
        while self.sent < len(self.todo) and event.sender.credit:
            name, raw = self.todo[self.sent]
            dlv = event.sender.delivery(name)
            event.sender.stream(raw)
            event.sender.advance()
            self.sent += 1

    def on_settled(self, event):
        if self.sent == len(self.todo) and event.delivery.tag == self.todo[-1][0]:
            event.sender.close()
            # Stay idle for a while: both peers send empty (heartbeat) frames.
            event.container.schedule(3.0, self)

    def on_timer_task(self, event):
        self.receiver = event.container.create_receiver(self.conn, ADDRESS)
        self.receiver.flow(len(self.todo))

    def on_message(self, event):
        self.received += 1
        # Exercise several outcomes in the disposition frames. RabbitMQ 3.10
        # does not take "modified" (release with delivered=True): it ends the
        # session with amqp:invalid-field, which the capture keeps on purpose.
        if self.received == 2:
            self.reject(event.delivery)
        elif self.received == 3:
            self.release(event.delivery, delivered=True)
        else:
            self.accept(event.delivery)
        if self.received == len(self.todo) - 1:
            event.receiver.close()
            event.connection.close()


Container(Client(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.2:5672")).run()
