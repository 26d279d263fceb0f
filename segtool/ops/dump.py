"""`dump`: decode any supported file into plain dicts (one per batch, record, entry or message).

The JSON renderer writes these dicts as JSON Lines and the text renderer prints
them; field names are documented in docs/formats.md.  Decoding stops at the
first invalid byte: what was decoded is yielded, then a ``{"kind": "error"}``
(or ``"zero_tail"`` for a preallocated zero-filled tail) names the byte offset.
"""

from __future__ import annotations

from typing import Iterator

from segtool.errors import SegtoolError
from segtool.source import open_buffer
from segtool.engine.inventory import inventory
from segtool.formats.detect import NOT_RECOGNISED, DetectedFile, detect
from segtool.formats.json_names import bytes_fields
from segtool.formats.kafka_log import BatchScan, batch_records, control_record_type
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


def _zero_tail(buf, start: int) -> bool:
    tail = buf[start:]
    return len(tail) > 0 and tail.count(0) == len(tail)


def dump_kafka_log(path: str, deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[dict]:
    buf = open_buffer(path)
    scan = BatchScan(buf, path=path)
    try:
        for batch in scan:
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
            yield item
            if deep:
                for record in batch_records(batch, path, cap):
                    yield record_item(batch, record)
    except SegtoolError as exc:
        if exc.offset is not None and _zero_tail(buf, exc.offset):
            yield {"kind": "zero_tail", "byte_offset": exc.offset, "length": len(buf) - exc.offset}
        else:
            yield {"kind": "error", "byte_offset": exc.offset, "message": exc.message}
        return
    if scan.valid_bytes < len(buf):
        kind = "zero_tail" if _zero_tail(buf, scan.valid_bytes) else "trailing_bytes"
        yield {"kind": kind, "byte_offset": scan.valid_bytes, "length": len(buf) - scan.valid_bytes}


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
    if kind in ("error", "trailing_bytes") or item.get("crc_valid") is False:
        return True
    return kind == "zero_tail" and detect(item["file"]).kind == "kafka-log"


def dump_paths(paths: list[str], deep: bool = True, cap: int = DEFAULT_CAP) -> Iterator[DumpItem]:
    """Every file named or below a named directory; unreadable entries as ``unreadable`` items."""
    for entry in inventory(paths).entries:
        if entry.unreadable is not None:
            yield {"kind": "unreadable", "reason": entry.unreadable, "file": entry.path}
        else:
            yield from dump_file(DetectedFile(entry.path, entry.kind), deep, cap)
