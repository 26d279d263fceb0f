"""Construct declarations of Kafka's segment layouts: the single source of each layout.

Batch and message framing (``.log``), record bodies and headers, control record
keys and markers, and the ``.index`` / ``.timeindex`` / ``.txnindex`` entries.
Decoders use layouts compiled from these (``fastdecode``); builders and tests
use them directly.  Field meanings are documented in docs/formats.md.
"""

from __future__ import annotations

import construct as cs

# In front of every batch and legacy message (Records.LOG_OVERHEAD): the offset and the
# size of what follows; the framing readers read only this much to step to the next entry.
LOG_ENTRY_HEADER = cs.Struct(
    "offset" / cs.Int64sb,  # v2: base offset; legacy: the message's (wrapper's last) offset
    "size" / cs.Int32sb,  # bytes after this field
)

BATCH_HEADER_V2 = cs.Struct(
    "base_offset" / cs.Int64sb,  # offset of the first record
    "batch_length" / cs.Int32sb,  # bytes after this field
    "partition_leader_epoch" / cs.Int32sb,
    "magic" / cs.Int8sb,  # 2
    "crc" / cs.Int32ub,  # CRC-32C of attributes..end
    "attributes" / cs.Int16sb,  # codec(0-2) timestampType(3) transactional(4) control(5) deleteHorizon(6)
    "last_offset_delta" / cs.Int32sb,
    "base_timestamp" / cs.Int64sb,  # first timestamp; the delete horizon when bit 6 is set
    "max_timestamp" / cs.Int64sb,
    "producer_id" / cs.Int64sb,
    "producer_epoch" / cs.Int16sb,
    "base_sequence" / cs.Int32sb,
    "record_count" / cs.Int32sb,
)

LEGACY_HEADER_V0 = cs.Struct(
    "offset" / cs.Int64sb,  # absolute offset (v1 inner messages: relative)
    "message_size" / cs.Int32sb,  # bytes after this field
    "crc" / cs.Int32ub,  # CRC32 of magic..end
    "magic" / cs.Int8sb,  # 0
    "attributes" / cs.Int8sb,  # codec(0-2), timestampType(3, v1 only)
)

LEGACY_HEADER_V1 = cs.Struct(
    "offset" / cs.Int64sb,
    "message_size" / cs.Int32sb,
    "crc" / cs.Int32ub,
    "magic" / cs.Int8sb,  # 1
    "attributes" / cs.Int8sb,
    "timestamp" / cs.Int64sb,
)


class _NullableBytes(cs.Construct):
    """Bytes prefixed by a length field where -1 means null (Kafka's nullable bytes)."""

    def __init__(self, lengthfield):
        super().__init__()
        self.lengthfield = lengthfield

    def _parse(self, stream, context, path):
        length = self.lengthfield._parsereport(stream, context, path)
        if length < 0:
            return None
        return cs.stream_read(stream, length, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            self.lengthfield._build(-1, stream, context, path)
        else:
            self.lengthfield._build(len(obj), stream, context, path)
            cs.stream_write(stream, obj, len(obj), path)
        return obj


LEGACY_MESSAGE_V0 = cs.Struct(
    *LEGACY_HEADER_V0.subcons,
    "key" / _NullableBytes(cs.Int32sb),
    "value" / _NullableBytes(cs.Int32sb),
)

LEGACY_MESSAGE_V1 = cs.Struct(
    *LEGACY_HEADER_V1.subcons,
    "key" / _NullableBytes(cs.Int32sb),
    "value" / _NullableBytes(cs.Int32sb),
)

RECORD_HEADER_V2 = cs.Struct(
    "key" / cs.PascalString(cs.ZigZag, "utf8"),
    "value" / _NullableBytes(cs.ZigZag),
)

RECORD_V2_BODY = cs.Struct(
    "attributes" / cs.Int8sb,  # unused, 0
    "timestamp_delta" / cs.ZigZag,  # from the batch's base timestamp
    "offset_delta" / cs.ZigZag,  # from the batch's base offset
    "key" / _NullableBytes(cs.ZigZag),
    "value" / _NullableBytes(cs.ZigZag),
    "headers" / cs.PrefixedArray(cs.ZigZag, RECORD_HEADER_V2),
)

# A record: zigzag varint length of the body, then the body.
RECORD_V2 = cs.Struct("length" / cs.ZigZag, *RECORD_V2_BODY.subcons)

# Control record key (version, type) and the end-transaction marker value.
CONTROL_KEY = cs.Struct("version" / cs.Int16sb, "type" / cs.Int16sb)
END_TXN_MARKER = cs.Struct("version" / cs.Int16sb, "coordinator_epoch" / cs.Int32sb)

# -- index entries -------------------------------------------------------------

OFFSET_INDEX_ENTRY = cs.Struct(
    # OffsetIndex.java, ENTRY_SIZE = 8.  Offset stored relative to the segment's
    # base offset (the number in the file name): absolute = base + relative.
    "relative_offset" / cs.Int32sb,
    # Byte position in the .log of the batch whose *last* offset is the indexed
    # offset (LogSegment.append indexes a batch by its last offset).
    "position" / cs.Int32sb,
)

TIME_INDEX_ENTRY = cs.Struct(
    # TimeIndex.java, ENTRY_SIZE = 12.  The largest timestamp seen up to and
    # including the batch ending at the indexed offset (ms since the epoch;
    # RecordBatch.NO_TIMESTAMP = -1 when none).
    "timestamp" / cs.Int64sb,
    # Offset relative to the segment's base offset, as in the offset index.
    "relative_offset" / cs.Int32sb,
)

TXN_INDEX_ENTRY = cs.Struct(
    # AbortedTxn.java, TOTAL_SIZE = 34.  Written as a short, CURRENT_VERSION = 0.
    # NB: AbortedTxn.version() reads it back with buffer.get(0), i.e. only the
    # first (high) byte, sign-extended; see ``kafka_version``.
    "version" / cs.Int16sb,
    # Producer whose transaction was aborted.
    "producer_id" / cs.Int64sb,
    # First offset of the aborted transaction (may lie in an earlier segment).
    "first_offset" / cs.Int64sb,
    # Offset of the ABORT control marker's batch that ended the transaction.
    "last_offset" / cs.Int64sb,
    # Last stable offset of the partition when the abort was written.
    "last_stable_offset" / cs.Int64sb,
)
