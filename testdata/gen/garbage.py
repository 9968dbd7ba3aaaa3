#!/usr/bin/python3
"""garbage.py: misbehaving AMQP clients, for the bad-input captures.

Usage: garbage.py HOST [PORT]

1. A connection that sends random bytes (no protocol header) to the AMQP port.
2. A connection that sends a valid protocol header and, after the broker's
   connection.start, a method frame header whose size field claims 2 GiB,
   followed by a few KB of junk.
3. A connection whose first frames are valid but a later frame has a wrong
   frame-end octet (0x00 instead of 0xCE).
The broker closes each one; what reaches the wire is what a decoder must
survive.
"""

import random
import socket
import struct
import sys
import time

host = sys.argv[1]
port = int(sys.argv[2]) if len(sys.argv) > 2 else 5672
rng = random.Random(20240229)  # fixed seed: reruns send the same bytes


def drain(s, seconds=1.0):
    s.settimeout(seconds)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return got


def try_send(s, data):
    # The broker may hang up before everything is written.
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


# 1. Random bytes.
s = socket.create_connection((host, port))
try_send(s, bytes(rng.getrandbits(8) for _ in range(3000)))
drain(s)
s.close()

# 2. A frame that claims 2 GiB.
s = socket.create_connection((host, port))
s.sendall(b"AMQP\x00\x00\x09\x01")
s.settimeout(2)
s.recv(65536)  # connection.start
try_send(s, struct.pack(">BHI", 1, 0, 0x80000000) + bytes(rng.getrandbits(8) for _ in range(4000)))
drain(s)
s.close()

# 3. A bad frame-end octet after the protocol header.
s = socket.create_connection((host, port))
s.sendall(b"AMQP\x00\x00\x09\x01")
s.settimeout(2)
s.recv(65536)
payload = struct.pack(">HH", 10, 11) + b"\x00" * 8  # connection.start-ok, truncated args
try_send(s, struct.pack(">BHI", 1, 0, len(payload)) + payload + b"\x00")
drain(s)
s.close()
time.sleep(0.2)
