#!/usr/bin/python3
"""relink.py: rewrite an Ethernet pcap into other link-layer framings.

Usage: relink.py null|vlan IN.pcap OUT.pcap

Linux loopback captures are Ethernet; these variants carry the same packets
(same IP and TCP bytes, same timestamps) in the framings a BSD/macOS
loopback capture (DLT_NULL) or a tagged LAN (802.1Q) would give:

  null  4-byte host-order address family (AF_INET 2, AF_INET6 30 as on macOS) instead of
        the 14-byte Ethernet header; link type 0 (LINKTYPE_NULL).
  vlan  an 802.1Q tag (TPID 0x8100, VLAN 42, priority 3) inserted after the
        MAC addresses; link type stays Ethernet.

Raw IP needs no script: editcap -C 14 -T rawip IN OUT.
"""

import struct
import sys

mode, src, dst = sys.argv[1:4]
with open(src, "rb") as f:
    data = f.read()

magic = data[:4]
if magic == b"\xd4\xc3\xb2\xa1":
    end = "<"
elif magic == b"\xa1\xb2\xc3\xd4":
    end = ">"
else:
    sys.exit("relink: %s is not a microsecond pcap file" % src)
hdr = bytearray(data[:24])
linktype = struct.unpack(end + "I", hdr[20:24])[0]
if linktype != 1:
    sys.exit("relink: %s has link type %d, want 1 (Ethernet)" % (src, linktype))
if mode == "null":
    hdr[20:24] = struct.pack(end + "I", 0)

out = [bytes(hdr)]
off = 24
while off + 16 <= len(data):
    ts_sec, ts_usec, incl, orig = struct.unpack(end + "IIII", data[off:off + 16])
    pkt = data[off + 16:off + 16 + incl]
    off += 16 + incl
    ethertype = pkt[12:14]
    if mode == "null":
        family = {b"\x08\x00": 2, b"\x86\xdd": 30}.get(ethertype)
        if family is None:
            sys.exit("relink: ethertype %s has no address family" % ethertype.hex())
        # DLT_NULL's family is in the capturing host's byte order; this file
        # says little-endian in its magic, so write it little-endian too.
        pkt = struct.pack(end + "I", family) + pkt[14:]
        delta = 4 - 14
    elif mode == "vlan":
        tci = (3 << 13) | 42
        pkt = pkt[:12] + struct.pack(">HH", 0x8100, tci) + pkt[12:]
        delta = 4
    else:
        sys.exit("relink: unknown mode %s" % mode)
    out.append(struct.pack(end + "IIII", ts_sec, ts_usec, incl + delta, orig + delta))
    out.append(pkt)

with open(dst, "wb") as f:
    f.write(b"".join(out))
