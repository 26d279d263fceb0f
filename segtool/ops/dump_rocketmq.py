"""`dump` items for RocketMQ files: CommitLog messages, ConsumeQueue units, IndexFile entries, and the
5.x files (rocketmq/v5.py): BatchConsumeQueue units, the timer store, DLedger entries with their
messages, compaction logs and queues, the lock and abort markers."""

from __future__ import annotations

import os
from typing import Iterator

from segtool.errors import CorruptData, SegtoolError
from segtool.source import open_buffer, release_pages
from segtool.engine.salvage import DamagedRange, body_crc_valid, commitlog_pieces
from segtool.rocketmq import v5 as rocketmq5
from segtool.rocketmq import store_files as rocketmq
from segtool.formats.json_names import message_item, snake_case_keys
from segtool.formats.outcomes import WalkEnd
from segtool.ops.runs import MessageRun
from segtool.ops.dump_errors import errors_as_items
from segtool.rocketmq import names as rocketmq_names


def _store_items(read):
    """A reader whose errors end its items, named in snake_case like every other output (the
    decoders keep RocketMQ's names; a CommitLog's messages are named as they are made, by
    ``message_json``)."""
    def items(path: str) -> Iterator[dict]:
        return (snake_case_keys(item) for item in errors_as_items(read(path)))
    return items


def _start_offset(path: str) -> int:
    name = os.path.basename(path)
    return rocketmq_names.mapped_file_offset(name)


def _end_item(end: rocketmq.CommitLogEnd) -> Iterator[dict]:
    if end.kind in (WalkEnd.BLANK, WalkEnd.ZERO_TAIL) or (end.kind is WalkEnd.SHORT_TAIL
                                                           and end.non_zero_after is None):
        kind = "blank_end" if end.kind is WalkEnd.BLANK else "zero_tail"
        yield {"kind": kind, "byte_offset": end.file_offset, "phy_offset": end.phy_offset}


def _decoding(for_text: bool) -> dict:
    # a text line shows no body: none is kept, digested or decompressed for it
    return {"digests": False, "decompress": False} if for_text else {"keep_body": True}


def _piece_items(piece) -> Iterator[dict]:
    if isinstance(piece, DamagedRange):
        yield {"kind": "damaged_range", **piece.as_dict()}
    elif isinstance(piece, rocketmq.CommitLogEnd):
        yield from _end_item(piece)
    else:
        yield message_item(piece)


def commitlog(path: str, for_text: bool = False, in_runs: bool = False) -> Iterator[dict | MessageRun]:
    """A CommitLog's (or a compaction log's) items; ``in_runs``: plain messages as ``MessageRun``s
    (``_commitlog_runs``); ``for_text``: see ``_commitlog``."""
    return errors_as_items((_commitlog_runs if in_runs else _commitlog)(path, for_text))


def _commitlog(path: str, for_text: bool = False) -> Iterator[dict]:
    """Every message, reading past damage: each damaged stretch is one ``damaged_range`` item.
    ``for_text``: without the bodies, their digests and decompression (a text line shows none)."""
    for piece in commitlog_pieces(open_buffer(path), file_from_offset=_start_offset(path),
                                  file=os.path.basename(path), path=path, **_decoding(for_text)):
        yield from _piece_items(piece)


def _commitlog_runs(path: str, for_text: bool) -> Iterator[dict | MessageRun]:
    """``_commitlog``'s items, with the stretches of plain messages as ``MessageRun``s.

    ``MessageColumns`` frames and reads the plain messages in bulk; at the first record that
    is not one, ``commitlog_pieces`` (the walker past damage) takes over for one message, or
    up to the end of the damaged range it finds, and the columns resume after it.
    """
    buf = open_buffer(path)
    file_from_offset, name = _start_offset(path), os.path.basename(path)
    pos, previous, released = 0, None, 0
    while True:
        columns = rocketmq.MessageColumns(buf, pos)
        if columns.count:
            yield MessageRun(path, file_from_offset, columns)
            previous = rocketmq.decode_message(buf, int(columns.positions[-1]), digests=False, decompress=False)
        pos = columns.stop
        released = release_pages(buf, released, pos)  # the run's lines are printed: its pages can go
        for piece in commitlog_pieces(buf, file_from_offset=file_from_offset, file=name, path=path, start=pos,
                                      previous=previous, **_decoding(for_text)):
            yield from _piece_items(piece)
            if isinstance(piece, DamagedRange):
                pos = piece.end_byte
                break
            if isinstance(piece, dict) and body_crc_valid(piece):  # one clean message: the columns resume after it
                pos, previous = piece["fileOffset"] + piece["totalSize"], piece
                break
        else:
            return


@_store_items
def consumequeue(path: str) -> Iterator[dict]:
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    topic, queue_id = parts[-3], rocketmq_names.queue_id(parts[-2])
    scan = rocketmq.ConsumeQueueFileScan(open_buffer(path), topic=topic, queue_id=queue_id,
                                         file_from_offset=_start_offset(path), path=path)
    for unit in scan:
        yield {"kind": "cq_unit", **unit}
    if scan.end and scan.end["kind"] is WalkEnd.ZERO_TAIL:
        yield {"kind": "zero_tail", "byte_offset": scan.end["fileOffset"]}


@_store_items
def indexfile(path: str) -> Iterator[dict]:
    with rocketmq.IndexFile(path) as index:
        yield {"kind": "index_header", **index.header, "hash_slot_num": index.hash_slot_num,
               "index_num": index.index_num, "geometry_source": index.geometry_source}
        for entry in index.iter_entries():
            yield {"kind": "index_entry", **entry}


@_store_items
def checkpoint(path: str) -> Iterator[dict]:
    buf = open_buffer(path)
    item = {"kind": "checkpoint", **rocketmq.read_checkpoint(buf, path)}
    if len(buf) >= rocketmq5.CHECKPOINT_5X_FAST.size:  # what 5.x reads after 4.x's fields (zero from a 4.x broker)
        checkpoint = rocketmq5.read_checkpoint_5x(buf, path)
        item.update((name, checkpoint[name]) for name in rocketmq5.CHECKPOINT_5X_FIELDS)
    yield item


# -- RocketMQ 5.x ------------------------------------------------------------------------------


def _queue_of(path: str, up: int) -> tuple[str, int | None]:
    """(topic, queueId) from the directories ``up`` and ``up - 1`` levels above the file."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    queue = parts[-up + 1]
    return parts[-up], rocketmq_names.queue_id(queue)


@_store_items
def batch_queue(path: str) -> Iterator[dict]:
    sparse = rocketmq5.COMPACTION_CQ_DIR in os.path.abspath(path).split(os.sep)
    nested = os.path.basename(os.path.dirname(path)) in rocketmq5.COMPACTION_SUB_FOLDERS
    topic, queue_id = _queue_of(path, 4 if nested else 3)
    units, end = rocketmq5.scan_batch_cq(open_buffer(path), file_from_offset=_start_offset(path), sparse=sparse)
    for unit in units:
        yield {"kind": "bcq_unit", "topic": topic, "queueId": queue_id, "byteOffset": unit.pop("fileOffset"), **unit}
    if end.kind is WalkEnd.END_POSITION:
        yield {"kind": "end_position", "byte_offset": end.file_offset}
    elif end.kind is WalkEnd.ZERO_TAIL and end.non_zero_after is None:
        yield {"kind": "zero_tail", "byte_offset": end.file_offset}
    elif end.unit is not None:
        raise CorruptData(f"a unit recovery refuses (commitLogOffset {end.unit['commitLogOffset']}, size "
                          f"{end.unit['size']}, msgBaseOffset {end.unit['msgBaseOffset']}, batchSize "
                          f"{end.unit['batchSize']})", path, end.file_offset)
    elif end.kind is not WalkEnd.END_OF_FILE:
        raise CorruptData(f"data after the last unit (which ends at byte {end.file_offset})", path,
                          end.non_zero_after if end.non_zero_after is not None else end.file_offset)


@_store_items
def timer_log(path: str) -> Iterator[dict]:
    for step in rocketmq5.walk_timer_log(open_buffer(path), file_from_offset=_start_offset(path)):
        if isinstance(step, rocketmq5.TimerLogEnd):
            if step.kind is WalkEnd.BLANK:
                yield {"kind": "blank_end", "byte_offset": step.file_offset, "length": step.size}
            elif step.kind in (WalkEnd.ZERO_TAIL, WalkEnd.SHORT_TAIL) and step.non_zero_after is None:
                yield {"kind": "zero_tail", "byte_offset": step.file_offset}
            elif step.kind is not WalkEnd.END_OF_FILE:
                raise CorruptData(f"timer log unit of size {step.size}, magic {step.magic} where a unit should "
                                  "start (recovery truncates the timer log here)", path, step.file_offset)
            return
        yield {"kind": "timer_log_unit", "byteOffset": step.pop("fileOffset"),
               "flags": rocketmq5.timer_magic_flags(step["magic"]), **step}


@_store_items
def timer_wheel(path: str) -> Iterator[dict]:
    for slot in rocketmq5.used_timer_slots(open_buffer(path)):
        yield {"kind": "timer_wheel_slot", "byteOffset": slot["slot"] * rocketmq5.TIMER_WHEEL_SLOT_SIZE, **slot}


@_store_items
def timer_checkpoint(path: str) -> Iterator[dict]:
    yield {"kind": "timer_checkpoint", **rocketmq5.read_timer_checkpoint(open_buffer(path), path)}


@_store_items
def timer_metrics(path: str) -> Iterator[dict]:
    metrics = rocketmq5.read_timer_metrics(open_buffer(path), path)
    version = metrics["dataVersion"]
    yield {"kind": "timer_metrics", "topics": len(metrics["timingCount"]),
           **{f"dataVersion_{name}": value for name, value in version.items()}}
    for row in metrics["timingCount"]:
        yield {"kind": "timer_metric", **row}


def dledger_data(path: str, for_text: bool) -> Iterator[dict]:
    return errors_as_items(_dledger_entries(path, for_text))


def _dledger_entries(path: str, for_text: bool) -> Iterator[dict]:
    decoding = {"digests": False, "decompress": False} if for_text else {"keep_body": True}
    for step in rocketmq5.walk_dledger_data(open_buffer(path), file_from_offset=_start_offset(path), path=path,
                                            file=os.path.basename(path), **decoding):
        if isinstance(step, rocketmq5.DLedgerEnd):
            if step.kind is WalkEnd.BLANK and step.reason is None:
                yield {"kind": "blank_end", "byte_offset": step.file_offset}
            elif step.kind in (WalkEnd.ZERO_TAIL, WalkEnd.SHORT_TAIL) and step.non_zero_after is None:
                yield {"kind": "zero_tail", "byte_offset": step.file_offset}
            elif step.kind is not WalkEnd.END_OF_FILE:
                yield {"kind": "error", "byte_offset": step.file_offset,
                       "message": f"DLedger entry refused by recovery: {step.reason or 'data after the end'}"}
            return
        header, message = step
        yield snake_case_keys({"kind": "dledger_entry", "byteOffset": header.pop("fileOffset"), **header})
        if isinstance(message, SegtoolError):
            yield {"kind": "error", "byte_offset": message.offset, "message": f"entry body: {message.message}"}
        else:
            yield message_item(message)


@_store_items
def dledger_index(path: str) -> Iterator[dict]:
    buf = open_buffer(path)
    entries, end = rocketmq5.dledger_index_entries(buf, file_from_offset=_start_offset(path))
    for entry in entries:
        yield {"kind": "dledger_index_entry", "byteOffset": entry.pop("fileOffset"), **entry}
    if end < len(buf):
        after = rocketmq.first_nonzero(buf, end, len(buf))
        if after is not None:
            raise CorruptData("index data after an all-zero entry", path, after)
        yield {"kind": "zero_tail", "byte_offset": end}


def _present(fields: dict) -> dict:
    # a text line shows no null: absent values are left out
    return {name: value for name, value in fields.items() if value is not None}


@_store_items
def dledger_checkpoint(path: str) -> Iterator[dict]:
    yield {"kind": "dledger_checkpoint", **_present(rocketmq5.read_dledger_checkpoint(open_buffer(path), path))}


@_store_items
def compaction_positions(path: str) -> Iterator[dict]:
    for row in rocketmq5.read_compaction_positions(open_buffer(path), path):
        yield {"kind": "compaction_position", **_present(row)}


@_store_items
def lock(path: str) -> Iterator[dict]:
    lock = rocketmq5.read_lock(open_buffer(path))
    yield {"kind": "lock_marker", "content": lock["content"],
           "meaning": ("written at every broker start" if lock["written_by_start"] else "not what a broker writes")
           + "; the OS lock it held is gone with the process"}


@_store_items
def abort(path: str) -> Iterator[dict]:
    abort = rocketmq5.read_abort(open_buffer(path))
    pid = {} if abort["pid"] is None else {"pid": abort["pid"]}  # 5.x writes the broker's process id, 4.x nothing
    yield {"kind": "abort_marker", "content": abort["content"], **pid,
           "meaning": "the broker did not shut down cleanly (or is running): the next start recovers abnormally"}


def config(path: str) -> Iterator[dict]:
    """A broker's ``config/*.json`` as ``ConfigManager.load`` reads it (``rocketmq.config``, as ``groups``)."""
    import json

    from segtool.rocketmq.config import config_kind, read_config_file

    read = read_config_file(path)
    if read.error is not None:
        yield {"kind": "error", "byte_offset": read.error.offset, "message": read.error.message}
        return
    kind = config_kind(path)
    # its keys are topics and groups, not field names: the content stays one JSON text
    yield {"kind": "rocketmq_config", "config_file": kind.name, "loaded_by": kind.source_class,
           "content": json.dumps(read.value, ensure_ascii=False, separators=(",", ":"))}
