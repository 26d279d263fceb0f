"""A direct Python JSON Lines dump of a RocketMQ CommitLog, for scale:
``python tests/bench/rocketmq_json_floor.py FILE``.

The interpreter starts and imports typer (the command line's framework), maps the
file, and for each message reads its fixed fields with one precompiled struct,
checks the body CRC, splits the properties into a dict, and writes one JSON object
with what a message item must carry for a reader to trust and use it: its position,
queue, offsets, times, hosts, topic, properties, the body's SHA-256 and the body
itself as text (when UTF-8) and as base64.  No damage handling, no dispatch or
message id, no 5.x layouts, IPv4 hosts only.  Its lines hold about 2.4 bytes for each
byte of the file (the body twice), so its ratio to ``sha256sum`` shows what writing
that much JSON from Python costs, message by message, before anything segtool adds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import mmap
import struct
import sys
import zlib

import typer  # noqa: F401  (its import is part of every segtool command's start)

# totalSize, magic, bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp,
# bornHost(4+4), storeTimestamp, storeHost(4+4), reconsumeTimes, preparedTransactionOffset, bodyLength
FIXED = struct.Struct(">iiiiiqqiq4siq4siiqi")
BLANK_MAGIC = -875286124


def main(path: str) -> None:
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    encode = json.JSONEncoder(ensure_ascii=False).encode
    write = sys.stdout.write
    unpack, crc32, position, end = FIXED.unpack_from, zlib.crc32, 0, len(buf)
    out = []
    while position + FIXED.size <= end:
        (total, magic, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born, born_host,
         born_port, stored, store_host, store_port, reconsume, prepared, body_length) = unpack(buf, position)
        if total <= 0 or magic == BLANK_MAGIC:
            break
        body_at = position + FIXED.size
        body = buf[body_at:body_at + body_length]
        topic_at = body_at + body_length
        topic_length = buf[topic_at]
        topic = buf[topic_at + 1:topic_at + 1 + topic_length].decode()
        properties_at = topic_at + 1 + topic_length + 2
        properties_text = buf[properties_at:properties_at + int.from_bytes(buf[properties_at - 2:properties_at], "big")]
        properties = dict(item.split("\x01", 1) for item in properties_text.decode().split("\x02") if "\x01" in item)
        try:
            text = body.decode()
        except UnicodeDecodeError:
            text = None
        out.append(encode({
            "position": position, "total_size": total, "body_crc": body_crc,
            "crc_ok": crc32(body) & 0x7FFFFFFF == body_crc & 0x7FFFFFFF, "queue_id": queue_id, "flag": flag,
            "queue_offset": queue_offset, "physical_offset": physical_offset, "sys_flag": sys_flag,
            "born_timestamp": born, "born_host": f"{'.'.join(map(str, born_host))}:{born_port}",
            "store_timestamp": stored, "store_host": f"{'.'.join(map(str, store_host))}:{store_port}",
            "reconsume_times": reconsume, "prepared_transaction_offset": prepared, "body_length": body_length,
            "topic": topic, "properties": properties, "body_sha256": hashlib.sha256(body).hexdigest(),
            "body": text, "body_b64": base64.b64encode(body).decode(),
        }))
        if len(out) == 2000:
            write("\n".join(out) + "\n")
            out.clear()
        position += total
    write("\n".join(out) + "\n" if out else "")


if __name__ == "__main__":
    main(sys.argv[1])
