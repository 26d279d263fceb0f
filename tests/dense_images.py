"""Dense carving images: real corpus batches and messages back to back, each copy with its offsets moved.

A broker's disk is mostly segments and CommitLogs end to end.  These images are
made of the corpus's clean v2 Kafka segments and RocketMQ CommitLog messages
(without their zero tails), repeated; each repetition adds ``copy * OFFSET_STEP``
to every Kafka base offset and RocketMQ queue offset.  Neither checksum covers
those fields (a v2 CRC-32C starts at the attributes, a RocketMQ body CRC covers
the body), so every copy is a distinct, checksum-valid batch or message, and the
builder knows where each one is.
"""

from __future__ import annotations

from pathlib import Path

from segtool.kafka.log import LOG_ENTRY_HEADER_FAST, frame_batches
from segtool.rocketmq.store_files import BLANK_RECORD_FAST, MESSAGE_HEADER_FAST, MESSAGE_MAGIC_CODE, MIN_MESSAGE_SIZE

OFFSET_STEP = 1 << 40  # beyond any corpus offset: copies never share one
KAFKA_CASES = ("c01-multiseg-clean", "c03-codecs", "c04-transactions", "c05-logappendtime", "c06-ooo-timestamps",
               "c07-compacted")
_QUEUE_OFFSET_AT = MESSAGE_HEADER_FAST[0].field_offset("queueOffset")


def corpus_pieces(corpus: Path) -> list[tuple[str, bytes, list[int]]]:
    """(format, bytes, start of each batch or message) of every clean v2 segment and every CommitLog's messages."""
    pieces = []
    for case in KAFKA_CASES:
        for path in sorted((corpus / "kafka" / case / "data").rglob("*.log")):
            data = path.read_bytes()
            positions, _, _ = frame_batches(data, 0, len(data), len(data))
            pieces.append(("kafka", data, positions))
    for path in sorted((corpus / "rocketmq" / "clean-multi" / "store" / "commitlog").iterdir()):
        data = path.read_bytes()
        positions, pos = [], 0
        while pos + MIN_MESSAGE_SIZE <= len(data):
            total_size, magic = BLANK_RECORD_FAST.unpack_from(data, pos)
            if magic != MESSAGE_MAGIC_CODE or total_size < MIN_MESSAGE_SIZE:
                break
            positions.append(pos)
            pos += total_size
        pieces.append(("rocketmq", data[:pos], positions))
    return pieces


def moved(fmt: str, data: bytes, positions: list[int], shift: int) -> bytes:
    """``data`` with ``shift`` added to each batch's base offset or each message's queue offset."""
    out = bytearray(data)
    for pos in positions:
        if fmt == "kafka":
            base_offset, length = LOG_ENTRY_HEADER_FAST.unpack_from(out, pos)
            LOG_ENTRY_HEADER_FAST.pack_into(out, pos, base_offset + shift, length)
        else:
            at = pos + _QUEUE_OFFSET_AT
            out[at:at + 8] = (int.from_bytes(out[at:at + 8], "big", signed=True) + shift).to_bytes(8, "big", signed=True)
    return bytes(out)


def write_dense_image(path: Path, corpus: Path, size: int) -> list[tuple[str, int, int]]:
    """Write copies of the corpus pieces to ``path`` until it holds ``size`` bytes or more; the
    (format, byte position, size) of every batch and message in it, in order."""
    pieces = corpus_pieces(corpus)
    finds, written, copy = [], 0, 0
    with open(path, "wb") as out:
        while written < size:
            for fmt, data, positions in pieces:
                out.write(moved(fmt, data, positions, copy * OFFSET_STEP))
                ends = positions[1:] + [len(data)]
                finds.extend((fmt, written + pos, end - pos) for pos, end in zip(positions, ends))
                written += len(data)
            copy += 1
    return finds
