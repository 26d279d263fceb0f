"""`dump`: decode any supported file into plain dicts (one per batch, record, entry or message).

The JSON renderer writes these dicts as JSON Lines and the text renderer prints
them; field names are documented in docs/formats.md.  Kafka segments and RocketMQ
CommitLogs are read past damage: each damaged stretch is a ``{"kind": "damaged_range"}``
item (``engine.salvage``) and decoding goes on after it.  Other files stop at the first
invalid byte with a ``{"kind": "error"}`` (or ``"zero_tail"`` for a preallocated
zero-filled tail) naming the byte offset.
"""

from __future__ import annotations

from typing import Iterator

from segtool.errors import SegtoolError
from segtool.source import open_buffer
from segtool.engine.inventory import inventory
from segtool.formats.detect import NOT_RECOGNISED, DetectedFile, detect
from segtool.formats.json_names import bytes_fields
from segtool.engine.salvage import DamagedRange, kafka_pieces
from segtool.formats.kafka_log import batch_records, control_record_type
from segtool.formats.kafka_names import has_offset_name, offset_from_file_name
from segtool.ops.output_schema import DumpItem

DEFAULT_CAP = 256 * 1024 * 1024


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
            item["control_type"] = control_record_type(record)[1]
    else:
        item["crc"] = record.crc
        item["crc_valid"] = record.crc_valid
    if path is not None:
        item["file"] = path
    return item


def batch_item(batch) -> dict:
    """A Kafka batch as every command shows it: dump's batch item, carve's finds."""
    item = {
        "kind": "batch",
        "position": batch.position,
        "magic": batch.magic,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "size": batch.size,
        "crc": batch.crc,
        "crc_valid": batch.crc_valid,
        "codec": batch.codec_name,
        "timestamp_type": batch.timestamp_type,
        "max_timestamp": batch.max_timestamp,
    }
    if batch.magic >= 2:
        item.update(
            record_count=batch.record_count,
            partition_leader_epoch=batch.partition_leader_epoch,
            base_timestamp=batch.base_timestamp,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            last_sequence=batch.last_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
            delete_horizon_ms=batch.delete_horizon_ms,
        )
    return item


def dump_kafka_log(path: str, deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[dict]:
    """Every batch (and record) of a segment, reading past damage: each damaged stretch is one
    ``damaged_range`` item and the dump goes on with the next valid batch."""
    buf = open_buffer(path)
    base_offset = offset_from_file_name(path) if has_offset_name(path) else None
    for piece in kafka_pieces(buf, path, base_offset=base_offset):
        if isinstance(piece, DamagedRange):
            yield {"kind": "damaged_range", **piece.as_dict()}
            continue
        batch = piece
        item = batch_item(batch)
        yield item
        if deep:
            try:
                for record in batch_records(batch, path, cap):
                    yield record_item(batch, record)
            except SegtoolError as exc:  # the batch's records, not its framing: the next batch is still there
                yield {"kind": "error", "byte_offset": exc.offset, "message": exc.message}


def dump_file(detected: DetectedFile, deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[dict]:
    """Dispatch on the detected kind; every item carries the file path."""
    kind = detected.kind
    if kind == "kafka-log":
        items = dump_kafka_log(detected.path, deep, cap)
    elif kind.startswith("kafka-"):
        from segtool.ops.dump_kafka_files import dump_kafka_file

        items = dump_kafka_file(detected)
    elif kind.startswith("rocketmq-"):
        from segtool.ops.dump_rocketmq import dump_rocketmq_file

        items = dump_rocketmq_file(detected)
    else:
        items = iter([{"kind": "skipped", "reason": NOT_RECOGNISED}])
    for item in items:
        item["file"] = detected.path
        yield item


def shows_damage(item: dict) -> bool:
    """Does this item show damage (exit code 1)?  A zero-filled tail is damage in a Kafka log
    (the broker's recovery cuts it) but the normal preallocated end of an index or ConsumeQueue."""
    kind = item["kind"]
    if kind in ("error", "trailing_bytes", "damaged_range") or item.get("crc_valid") is False:
        return True
    return kind == "zero_tail" and detect(item["file"]).kind == "kafka-log"


def dump_paths(paths: list[str], deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[DumpItem]:
    """Every file named or below a named directory; unreadable entries as ``unreadable`` items."""
    for entry in inventory(paths).entries:
        if entry.unreadable is not None:
            yield {"kind": "unreadable", "reason": entry.unreadable, "file": entry.path}
        else:
            yield from dump_file(DetectedFile(entry.path, entry.kind), deep, cap)
