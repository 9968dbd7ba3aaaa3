#!/usr/bin/python3
"""Drive RabbitMQ's AMQP 1.0 plugin with Qpid Proton for wiretap's tests.

Usage: proton_peer.py HOST:PORT QUEUE MANIFEST.json

Opens two connections through HOST:PORT (the test's recording relay): one
sends a set of messages to QUEUE, the other receives them back. Messages are
encoded by Proton's own codec (not wiretap's); checksum footers are computed
here with zlib over the bare message Proton encoded. Run with
PN_TRACE_FRM=1 so Proton prints every frame it sends (->) and receives (<-):
that trace is the oracle wiretap's decoder is compared against.

MANIFEST.json receives, per message sent and per message received, its
message-id and the checksum verdict computed here over the bytes Proton
encoded (sent) or received (received): what a correct decoder must report
for the same transfers.
"""
import json
import sys
import zlib

from proton import Data, Message, symbol, ulong, uint
from proton.handlers import MessagingHandler
from proton.reactor import Container
import proton._handlers as _handlers

# Keep the exact bytes of every received message: MessagingHandler decodes
# them through this module-level helper.
RAW = []


def _recv_msg(dlv):
    raw = dlv.link.recv(dlv.pending)
    dlv.link.advance()
    RAW.append(raw)
    m = Message()
    m.decode(raw)
    return m


_handlers.recv_msg = _recv_msg


def sections(buf):
    """Split an encoded message into its top-level (section) encodings."""
    out = []
    while buf:
        d = Data()
        n = d.decode(buf)
        out.append(buf[:n])
        buf = buf[n:]
    return out


def described(code, put):
    d = Data()
    d.put_described()
    d.enter()
    d.put_ulong(code)
    put(d)
    d.exit()
    return d.encode()


def footer(alg, value):
    def put(d):
        d.put_map()
        d.enter()
        d.put_symbol(symbol("x-opt-crc-32" if alg == "crc-32" else "x-opt-adler-32"))
        d.put_uint(uint(value))
        d.exit()
    return described(0x78, put)


def checksum(alg, bare):
    if alg == "crc-32":
        return zlib.crc32(bare) & 0xffffffff
    return zlib.adler32(bare) & 0xffffffff


def verdict(raw):
    """The checksum verdict for a received message, computed here."""
    secs = sections(raw)
    bare = b"".join(s for s in secs if s[2] in range(0x73, 0x78))
    mid = ""
    for s in secs:
        if s[2] == 0x73:
            d = Data()
            d.decode(s)
            d.rewind()
            d.next()
            d.enter()
            d.next()
            d.next()
            d.enter()
            d.next()
            mid = d.get_object()
    entry = {"message_id": mid, "checksum": "absent", "bare_len": len(bare)}
    for s in secs:
        if s[2] != 0x78:
            continue
        d = Data()
        d.decode(s)
        d.rewind()
        d.next()
        d.enter()
        d.next()
        d.next()
        fm = d.get_object()
        for key, alg in (("x-opt-crc-32", "crc-32"), ("x-opt-adler-32", "adler-32")):
            if symbol(key) in fm:
                exp = int(fm[symbol(key)])
                entry.update(algorithm=alg, expected=exp,
                             checksum="ok" if checksum(alg, bare) == exp else "mismatch")
    return entry


def build():
    msgs = []  # (raw bytes, manifest entry)

    def add(mid, encoded, alg=None, wrong=False, expect=None):
        secs = sections(encoded)
        bare = b"".join(s for s in secs if s[2] in range(0x73, 0x78))
        raw = encoded
        entry = {"message_id": mid, "checksum": "absent", "bare_len": len(bare)}
        if alg:
            v = checksum(alg, bare)
            if wrong:
                v ^= 0x00010000
            raw = encoded + footer(alg, v)
            entry["checksum"] = "mismatch" if wrong else "ok"
            entry["algorithm"] = alg
            entry["expected"] = v
        msgs.append((raw, entry))

    # properties + application-properties (proton encodes booleans as
    # 0x56 0x01) + amqp-value string body, CRC-32 footer.
    m = Message(id="crc-value", subject="s", body="hello from proton",
                properties={"flag": True, "n": 42, "who": "proton"})
    add("crc-value", m.encode(), "crc-32")
    # header (durable) before the bare message, data body, Adler-32.
    m = Message(id="adler-data", durable=True, priority=7, body=b"\x00\x01binary\xff" * 3,
                properties={"off": False})
    add("adler-data", m.encode(), "adler-32")
    # deliberately wrong CRC-32.
    m = Message(id="crc-wrong", body="tampered", properties={"k": "v"})
    add("crc-wrong", m.encode(), "crc-32", wrong=True)
    # no footer at all.
    m = Message(id="no-footer", body=b"plain")
    add("no-footer", m.encode())
    # several data sections and message annotations, CRC-32; large enough
    # to span many 512-byte frames.
    head = Message(id="multi-data", annotations={symbol("x-opt-test"): "ann"}).encode()
    head_secs = [s for s in sections(head) if s[2] != 0x77]  # drop the null amqp-value body
    body = b"".join(described(0x75, lambda d, i=i: d.put_binary(bytes([65 + i]) * 700)) for i in range(3))
    add("multi-data", b"".join(head_secs) + body, "crc-32")
    # amqp-sequence body with an Adler-32 footer.
    seq = described(0x76, lambda d: (d.put_list(), d.enter(), d.put_int(1), d.put_string("two"), d.put_bool(True), d.exit()))
    props = Message(id="sequence").encode()
    props_secs = [s for s in sections(props) if s[2] != 0x77]
    add("sequence", b"".join(props_secs) + seq, "adler-32")
    # Booleans in their two-byte form (0x56 0x01 / 0x56 0x00), which Proton's
    # encoder never writes itself: application-properties crafted by hand.
    props = Message(id="bool56").encode()
    props_secs = [s for s in sections(props) if s[2] == 0x73]
    kv = b"\xa1\x04flag\x56\x01" + b"\xa1\x03off\x56\x00"
    app = b"\x00\x53\x74\xc1" + bytes([len(kv) + 1, 4]) + kv
    data = described(0x75, lambda d: d.put_binary(b"two-byte booleans"))
    add("bool56", b"".join(props_secs) + app + data, "crc-32")
    return msgs


class Peer(MessagingHandler):
    def __init__(self, url, queue, msgs):
        super().__init__(auto_accept=True)
        self.url, self.queue, self.msgs = url, queue, msgs
        self.sent = self.confirmed = self.received = 0
        self.got = []

    def on_start(self, event):
        kw = dict(user="guest", password="guest", allowed_mechs="PLAIN", max_frame_size=512)
        self.sconn = event.container.connect(self.url, **kw)
        event.container.create_sender(self.sconn, self.queue, name="wt-sender")

    def on_sendable(self, event):
        while event.sender.credit and self.sent < len(self.msgs):
            event.sender.delivery(str(self.sent))
            event.sender.stream(self.msgs[self.sent][0])
            event.sender.advance()
            self.sent += 1

    def on_accepted(self, event):
        self.confirmed += 1
        if self.confirmed == len(self.msgs):
            self.sconn.close()
            kw = dict(user="guest", password="guest", allowed_mechs="PLAIN", max_frame_size=512)
            self.rconn = event.container.connect(self.url, **kw)
            event.container.create_receiver(self.rconn, self.queue, name="wt-receiver")

    def on_message(self, event):
        self.got.append(verdict(RAW[-1]))
        self.received += 1
        if self.received == len(self.msgs):
            event.receiver.close()
            event.connection.close()


def main():
    url, queue, manifest = sys.argv[1], sys.argv[2], sys.argv[3]
    msgs = build()
    peer = Peer("amqp://" + url, queue, msgs)
    Container(peer).run()
    with open(manifest, "w") as f:
        json.dump({"sent": [e for _, e in msgs], "received": peer.got}, f, indent=1)


if __name__ == "__main__":
    main()
