"""`dump` items of a Kafka segment (``.log``, KRaft snapshots): one per batch and record.

A segment is read past damage: each damaged stretch is a ``{"kind": "damaged_range"}``
item (``engine.salvage``) and decoding goes on after it.  ``record_item`` and
``batch_item`` are how every command shows a record and a batch.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Iterator

from segtool.errors import CorruptData, SegtoolError
from segtool.source import open_buffer
from segtool.formats.json_names import bytes_fields
from segtool.engine.salvage import DamagedRange, kafka_pieces
from segtool.kafka.log import DEFAULT_CAP, BatchHeaders, BatchScan, RecordBatch
from segtool.kafka.record_columns import chunk_records
from segtool.kafka.record_shape import BATCH_EVERY, BATCH_V2
from segtool.kafka.records import base_offset_of, batch_records, control_record_type
from segtool.kafka.names import has_offset_name, internal_topic, offset_from_file_name
from segtool.ops.runs import BatchRun


def record_item(batch, record, path: str | None = None) -> dict:
    """A Kafka record as every command shows it: dump's record item, lookup's ``record``."""
    item = {
        "kind": "record",
        "batch_position": batch.position,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_size": record.key_size,
        "value_size": record.value_size,
    }
    item.update(bytes_fields("key", record.key))
    item.update(bytes_fields("value", record.value))
    if batch.magic >= 2:
        item["sequence"] = record.sequence
        item["headers"] = [{"key": k, **bytes_fields("value", v)} for k, v in record.headers]
        if batch.is_control:
            from segtool.kafka.metadata import control_record_value  # control records are few

            item["control_type"] = control_record_type(record)[1]
            item["control"] = control_record_value(record)
    else:
        item["crc"] = record.crc
        item["crc_valid"] = record.crc_valid
    if path is not None:
        item["file"] = path
    return item


def batch_item(batch, records=None, path: str | None = None, cap: int = DEFAULT_CAP) -> dict:
    """A Kafka batch as every command shows it: dump's batch item, carve's finds (``record_shape.BATCH_FIELDS``).

    A legacy message's ``base_offset`` is Kafka's ``baseOffset()`` (``records.base_offset_of``): for a
    compressed wrapper its first inner offset, from ``records`` when the caller decoded them (``[]``: they
    do not decode), else (None) by decompressing the wrapper here; its own offset field is ``wrapper_offset``."""
    item = {"kind": "batch", **dict(zip(_BATCH_EVERY_NAMES, _batch_every(batch)))}
    if batch.magic >= 2:
        item.update(zip(_BATCH_V2_NAMES, _batch_v2(batch)))
    else:
        first = base_offset_of(batch, records, path, cap)
        if first is not None:  # else its inner set does not decode: its own offset is all that is known
            item["base_offset"] = first
        item["wrapper_offset"] = batch.wrapper_offset
    return item


# the table's attribute reads, compiled once
_BATCH_EVERY_NAMES = tuple(field.name for field in BATCH_EVERY)
_batch_every = attrgetter(*(field.source for field in BATCH_EVERY))
_BATCH_V2_NAMES = tuple(field.name for field in BATCH_V2)
_batch_v2 = attrgetter(*(field.source for field in BATCH_V2))


def dump_kafka_log(path: str, deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[dict]:
    """Every batch (and record) of a segment, reading past damage: each damaged stretch is one
    ``damaged_range`` item and the dump goes on with the next valid batch.  Records of Kafka's
    internal topics (``internal_topics.record_decoder``) also carry their key and value ``decoded``."""
    buf = open_buffer(path)
    base_offset = offset_from_file_name(path) if has_offset_name(path) else None
    decode = _record_decoder(path)
    for piece in kafka_pieces(buf, path, base_offset=base_offset):
        if isinstance(piece, DamagedRange):
            yield {"kind": "damaged_range", **piece.as_dict()}
        else:
            yield from _batch_items(piece, path, deep, cap, decode)


def _record_decoder(path: str):
    """The decoder of an internal topic's records, or None; imported only for such a file (the
    message schemas take a tenth of a second to load)."""
    if internal_topic(path) is None:
        return None
    from segtool.kafka.internal_topics import record_decoder

    return record_decoder(path)


def _batch_items(batch: RecordBatch, path: str, deep: bool, cap: int, decode=None) -> Iterator[dict]:
    records, error = None, None
    if deep:
        try:
            records = batch_records(batch, path, cap)
        except SegtoolError as exc:  # the batch's records, not its framing: the next batch is still there
            error = {"kind": "error", "byte_offset": exc.offset, "message": exc.message}
    yield batch_item(batch, [] if error else records, path, cap)
    for record in records or ():
        item = record_item(batch, record)
        if decode is not None and not batch.is_control:
            item["decoded"] = decode(record.key, record.value)
        yield item
    if error is not None:
        yield error


_RUN_HEADER_FIELDS = ("base_offset", "partition_leader_epoch", "crc", "attributes", "last_offset_delta",
                     "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
                     "record_count")
_CONTROL = 0x20  # batch attribute bit: a control batch (its records print their control type)
_RUN_SPAN = 1024 * 1024  # bytes of batches decoded at once: their lines, several times as large, are held together


def kafka_log_runs(path: str, deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[dict | BatchRun]:
    """``dump_kafka_log``'s items, with the clean stretches of a segment as ``BatchRun``s.

    Whole chunks of valid v2 batches are framed and decoded at once (``BatchScan.chunks``,
    ``chunk_records``); from the first batch that is not (a bad CRC, broken framing,
    a legacy message) ``kafka_pieces`` takes over, batch by batch, up to the end of
    the damaged range it finds, and the chunks resume after it.
    """
    import numpy as np

    buf = open_buffer(path)
    end = len(buf)
    next_offset = offset_from_file_name(path) if has_offset_name(path) else None  # after the last valid batch
    pos = 0
    while pos < end:
        scan = BatchScan(buf, pos, end, path)
        irregular = None  # where batch-by-batch reading takes over
        try:
            for positions, chunk_end in scan.chunks(span=_RUN_SPAN):
                headers = BatchHeaders(buf, path, positions, chunk_end)
                clean = 0
                if headers.regular:
                    bad = np.flatnonzero(headers.column("crc") != headers.computed_crc)
                    clean = int(bad[0]) if len(bad) else len(headers)
                if clean:
                    yield from _clean_batches(headers, clean, path, deep, cap)
                    next_offset = int(headers.column("base_offset")[clean - 1]
                                      + headers.column("last_offset_delta")[clean - 1]) + 1
                if clean < len(headers):
                    irregular = positions[clean]
                    break
            else:
                if scan.valid_bytes < end:
                    irregular = scan.valid_bytes  # a truncated batch or stray bytes at the end
        except CorruptData:
            irregular = scan.valid_bytes
        if irregular is None:
            return
        pos = end
        for piece in kafka_pieces(buf, path, base_offset=next_offset, start=irregular):
            if isinstance(piece, DamagedRange):
                yield {"kind": "damaged_range", **piece.as_dict()}
                pos = piece.end_byte
                break
            yield from _batch_items(piece, path, deep, cap)
            if piece.crc_valid:
                next_offset = piece.last_offset + 1


def _clean_batches(headers: BatchHeaders, count: int, path: str, deep: bool, cap: int) -> Iterator[dict | BatchRun]:
    """The first ``count`` batches of a regular chunk (all with a valid CRC): runs, and the batches
    whose records need objects (control batches, records ``chunk_records`` left undecoded) item by item."""
    import numpy as np

    column = {name: headers.column(name)[:count] for name in _RUN_HEADER_FIELDS}
    column["position"] = headers.position[:count]
    column["size"] = headers.size[:count]
    records = None
    one_by_one = np.zeros(count, dtype=bool)
    if deep:
        records = chunk_records(headers, path, cap)
        one_by_one = ~records.decoded[:count] | (column["attributes"] & _CONTROL != 0)
    start = 0
    for single in np.flatnonzero(one_by_one).tolist() + [count]:
        if single > start:
            bounds = None if records is None else records.first[start:single + 1]
            yield BatchRun(path, {name: values[start:single] for name, values in column.items()}, records, bounds)
        if single < count:
            yield from _batch_items(headers.batch(single), path, deep, cap)
        start = single + 1
