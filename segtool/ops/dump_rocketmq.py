"""`dump` items for RocketMQ files: CommitLog messages, ConsumeQueue units, IndexFile entries."""

from __future__ import annotations

import os
from typing import Iterator

from segtool.source import open_buffer
from segtool.engine.salvage import DamagedRange, commitlog_pieces
from segtool.formats import rocketmq
from segtool.formats.detect import DetectedFile
from segtool.formats.json_names import message_json, snake_case_keys
from segtool.ops.dump_errors import errors_as_items


def _start_offset(path: str) -> int:
    name = os.path.basename(path)
    return int(name) if name.isdigit() else 0


def _end_item(end: rocketmq.CommitLogEnd) -> Iterator[dict]:
    if end.kind in (rocketmq.BLANK, rocketmq.ZERO_TAIL) or (end.kind == rocketmq.SHORT_TAIL
                                                             and end.non_zero_after is None):
        kind = "blank_end" if end.kind == rocketmq.BLANK else "zero_tail"
        yield {"kind": kind, "byte_offset": end.file_offset, "phy_offset": end.phy_offset}


def _commitlog(path: str, for_text: bool = False) -> Iterator[dict]:
    """Every message, reading past damage: each damaged stretch is one ``damaged_range`` item.
    ``for_text``: without the bodies, their digests and decompression (a text line shows none)."""
    decoding = {"digests": False, "decompress": False} if for_text else {"keep_body": True}
    for piece in commitlog_pieces(open_buffer(path), file_from_offset=_start_offset(path),
                                  file=os.path.basename(path), path=path, **decoding):
        if isinstance(piece, DamagedRange):
            yield {"kind": "damaged_range", **piece.as_dict()}
        elif isinstance(piece, rocketmq.CommitLogEnd):
            yield from _end_item(piece)
        else:
            piece.pop("file", None)
            yield {"kind": "message", **message_json(piece)}


def _consumequeue(path: str) -> Iterator[dict]:
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    topic, queue_id = parts[-3], int(parts[-2]) if parts[-2].isdigit() else None
    scan = rocketmq.ConsumeQueueFileScan(open_buffer(path), topic=topic, queue_id=queue_id,
                                         file_from_offset=_start_offset(path), path=path)
    for unit in scan:
        yield {"kind": "cq_unit", **unit}
    if scan.end and scan.end.get("kind") == "zero-tail":
        yield {"kind": "zero_tail", "byte_offset": scan.end["fileOffset"]}


def _indexfile(path: str) -> Iterator[dict]:
    with rocketmq.IndexFile(path) as index:
        yield {"kind": "index_header", **index.header, "hash_slot_num": index.hash_slot_num,
               "index_num": index.index_num, "geometry_source": index.geometry_source}
        for entry in index.iter_entries():
            yield {"kind": "index_entry", **entry}


def _checkpoint(path: str) -> Iterator[dict]:
    yield {"kind": "checkpoint", **rocketmq.read_checkpoint(open_buffer(path), path)}


_READERS = {
    "rocketmq-checkpoint": _checkpoint,
    "rocketmq-consumequeue": _consumequeue,
    "rocketmq-indexfile": _indexfile,
}


def dump_rocketmq_file(detected: DetectedFile, for_text: bool = False) -> Iterator[dict]:
    """The file's items, named in snake_case like every other output (the decoders keep RocketMQ's names;
    a CommitLog's messages are named as they are made, by ``message_json``).  ``for_text``: see ``_commitlog``."""
    if detected.kind == "rocketmq-commitlog":
        return errors_as_items(_commitlog(detected.path, for_text))
    return (snake_case_keys(item) for item in errors_as_items(_READERS[detected.kind](detected.path)))
