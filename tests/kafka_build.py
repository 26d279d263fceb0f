"""Build Kafka batches and legacy messages from the schemas in ``kafka_log``.

Used to re-encode parsed batches (the symmetry test) and to generate test and
benchmark segments.  Everything goes through the construct schemas.
"""

from __future__ import annotations

from zlib import crc32

import construct as cs

from segtool.formats.checksums import crc32c

from segtool.kafka.log import CRC_V2_START, LOG_OVERHEAD, Record, RecordBatch
from segtool.kafka.schemas import BATCH_HEADER_V2, LEGACY_MESSAGE_V0, LEGACY_MESSAGE_V1, RECORD_V2_BODY


def build_record(record: Record) -> bytes:
    body = RECORD_V2_BODY.build({
        "attributes": record.attributes,
        "timestamp_delta": record.timestamp_delta,
        "offset_delta": record.offset_delta,
        "key": record.key,
        "value": record.value,
        "headers": [{"key": k, "value": v} for k, v in record.headers],
    })
    return cs.ZigZag.build(len(body)) + body


def build_records(records: list[Record]) -> bytes:
    return b"".join(build_record(r) for r in records)


def build_batch_v2(batch: RecordBatch, records_payload: bytes) -> bytes:
    """A v2 batch from header fields and its (possibly compressed) records section."""
    header = BATCH_HEADER_V2.build({
        "base_offset": batch.base_offset,
        "batch_length": BATCH_HEADER_V2.sizeof() - LOG_OVERHEAD + len(records_payload),
        "partition_leader_epoch": batch.partition_leader_epoch,
        "magic": 2,
        "crc": 0,
        "attributes": batch.attributes,
        "last_offset_delta": batch.last_offset_delta,
        "base_timestamp": batch.base_timestamp,
        "max_timestamp": batch.max_timestamp,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "record_count": batch.record_count,
    })
    data = bytearray(header + records_payload)
    crc = crc32c(bytes(data[CRC_V2_START:]))
    data[17:21] = crc.to_bytes(4, "big")
    return bytes(data)


def build_legacy_message(offset: int, magic: int, attributes: int, key: bytes | None, value: bytes | None,
                         timestamp: int = -1) -> bytes:
    schema = LEGACY_MESSAGE_V1 if magic == 1 else LEGACY_MESSAGE_V0
    fields = {"offset": offset, "message_size": 0, "crc": 0, "magic": magic, "attributes": attributes,
              "key": key, "value": value}
    if magic == 1:
        fields["timestamp"] = timestamp
    data = bytearray(schema.build(fields))
    data[8:12] = (len(data) - LOG_OVERHEAD).to_bytes(4, "big", signed=True)
    data[12:16] = crc32(bytes(data[16:])).to_bytes(4, "big")
    return bytes(data)


def make_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], base_timestamp: int,
               codec: int = 0, partition_leader_epoch: int = 0) -> bytes:
    """A fresh non-transactional CreateTime batch of (key, value) records, one ms apart."""
    from segtool.formats.compression import compress

    built = [Record(base_offset + i, base_timestamp + i, k, v, (), timestamp_delta=i, offset_delta=i)
             for i, (k, v) in enumerate(records)]
    payload = build_records(built)
    if codec:
        payload = compress(codec, payload)
    batch = RecordBatch(
        position=0, magic=2, base_offset=base_offset, last_offset=base_offset + len(records) - 1, size=0,
        crc=0, attributes=codec, max_timestamp=base_timestamp + len(records) - 1, record_count=len(records),
        partition_leader_epoch=partition_leader_epoch, last_offset_delta=len(records) - 1,
        base_timestamp=base_timestamp,
    )
    return build_batch_v2(batch, payload)
