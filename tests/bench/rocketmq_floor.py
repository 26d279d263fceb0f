"""The least a Python text dump of a RocketMQ CommitLog could cost: ``python tests/bench/rocketmq_floor.py FILE``.

The interpreter starts and imports typer (the command line's framework), maps the
file, and for each message reads its fixed fields with one precompiled struct,
checks the body CRC (zlib's CRC-32, as RocketMQ's UtilAll.crc32), cuts the topic,
finds KEYS and TAGS in the properties, and writes one line (position, topic, queue,
store time in ISO-8601, keys, tags, body size) to stdout.  No damage handling, no
checks beyond the CRC, no 5.x layouts, IPv4 hosts only: no real dump can be faster,
so the ratio of this to ``sha256sum`` bounds what a text-dump target can ask of Python.
"""

from __future__ import annotations

import mmap
import struct
import sys
import zlib
from datetime import datetime, timezone

import typer  # noqa: F401  (its import is part of every segtool command's start)

# totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp,
# bornHost(4+4), storeTimestamp, storeHost(4+4), reconsumeTimes, preparedTransactionOffset, bodyLength
FIXED = struct.Struct(">iiiiiqqiq8sq8siqi")
BLANK_MAGIC = -875286124


def main(path: str) -> None:
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    out = []
    unpack, crc32, position, end = FIXED.unpack_from, zlib.crc32, 0, len(buf)
    iso = {}
    while position + FIXED.size <= end:
        (total, magic, body_crc, queue_id, _flag, queue_offset, _phy, _sys, _born, _bh, stored, _sh, _rt, _pt,
         body_length) = unpack(buf, position)
        if total <= 0 or magic == BLANK_MAGIC:
            break
        body_at = position + FIXED.size
        ok = crc32(buf[body_at:body_at + body_length]) & 0x7FFFFFFF == body_crc & 0x7FFFFFFF
        topic_at = body_at + body_length
        topic_length = buf[topic_at]
        topic = buf[topic_at + 1:topic_at + 1 + topic_length].decode()
        properties_at = topic_at + 1 + topic_length + 2
        properties = buf[properties_at:properties_at + int.from_bytes(buf[properties_at - 2:properties_at], "big")]
        keys = tags = b"-"
        for pair in properties.split(b"\x02"):
            if pair.startswith(b"KEYS\x01"):
                keys = pair[5:]
            elif pair.startswith(b"TAGS\x01"):
                tags = pair[5:]
        when = iso.get(stored)
        if when is None:
            when = iso[stored] = datetime.fromtimestamp(stored / 1000, timezone.utc).isoformat(timespec="milliseconds")
        out.append(f"message @{position} {topic} queue {queue_id}/{queue_offset} stored {when} keys {keys.decode()} "
                   f"tags {tags.decode()} body {body_length} bytes crc {'ok' if ok else 'BAD'}\n")
        position += total
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
