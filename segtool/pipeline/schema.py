"""Parquet schemas of `segtool scan`: one row per Kafka record, one per RocketMQ message.

The column lists below are the documentation's source (docs/pipeline.md shows
them); both engines write exactly these Arrow schemas, so a dataset written by
the local engine and one written on Spark read back identically.

Conventions: offsets, positions and timestamps are int64 (timestamps in ms
since the epoch, as stored; Spark SQL's ``timestamp_millis(timestamp)`` makes a
TIMESTAMP of one); digests are lowercase hex strings, so ``WHERE value_sha256 =
'…'`` works as typed; null means "absent in the data" (a null key, a v2
record's legacy CRC), never "not computed", except ``value``/``body`` which are
filled only with ``--with-values``.
"""

from __future__ import annotations

import pyarrow as pa

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])

# (name, type, description) — the description is what docs/pipeline.md prints
KAFKA_COLUMNS = [
    ("source_dir", pa.string(), "the log directory holding the partition directory (absolute path or URI)"),
    ("topic", pa.string(), "topic, from the partition directory name `<topic>-<partition>`"),
    ("partition", pa.int32(), "partition number (null when the directory name has none)"),
    ("segment_base_offset", pa.int64(), "base offset of the segment (its file name)"),
    ("batch_position", pa.int64(), "byte position of the record's batch (legacy: wrapper message) in the .log"),
    ("batch_base_offset", pa.int64(), "first offset of the batch"),
    ("batch_last_offset", pa.int64(), "last offset of the batch"),
    ("magic", pa.int8(), "batch format: 2 (record batch), 1 or 0 (legacy message sets)"),
    ("partition_leader_epoch", pa.int32(), "leader epoch stamped on the batch (-1 for legacy)"),
    ("offset", pa.int64(), "the record's offset"),
    ("timestamp", pa.int64(), "the record's timestamp, ms (LogAppendTime: the batch's append time; -1 for v0)"),
    ("timestamp_type", pa.string(), "CreateTime, LogAppendTime or NoTimestampType (magic 0)"),
    ("key", pa.binary(), "the key's bytes (null key: null)"),
    ("key_utf8", pa.string(), "the key as text when it is valid UTF-8, else null"),
    ("key_size", pa.int32(), "key length, -1 for a null key"),
    ("value_size", pa.int32(), "value length, -1 for a null value (a tombstone)"),
    ("value_sha256", pa.string(), "sha256 of the value, hex (null for a null value)"),
    ("value", pa.binary(), "the value's bytes; filled only with --with-values"),
    ("headers", pa.list_(HEADER_TYPE), "record headers in order: array<struct<key: string, value: binary>>"),
    ("producer_id", pa.int64(), "producer id (-1 when none)"),
    ("producer_epoch", pa.int16(), "producer epoch (-1 when none)"),
    ("sequence", pa.int32(), "the record's sequence number (base sequence + offset delta; -1 when none)"),
    ("is_transactional", pa.bool_(), "the batch is transactional"),
    ("is_control", pa.bool_(), "the batch is a control batch (transaction markers and KRaft control records)"),
    ("control_type", pa.string(), "ABORT, COMMIT, LEADER_CHANGE, ... for control records, else null"),
    ("compression", pa.string(), "codec of the batch: none, gzip, snappy, lz4, zstd"),
    ("crc_valid", pa.bool_(), "the batch's (legacy: wrapper message's) stored CRC matches its bytes"),
    ("record_crc_valid", pa.bool_(), "legacy inner message's own CRC32 matches (null for v2 records)"),
]

ROCKETMQ_COLUMNS = [
    ("source_dir", pa.string(), "the store root (the directory holding commitlog/)"),
    ("commitlog_file", pa.string(), "CommitLog file name (its first physical offset, 20 digits)"),
    ("topic", pa.string(), "topic"),
    ("queue_id", pa.int32(), "queue id"),
    ("queue_offset", pa.int64(), "offset of the message in its ConsumeQueue"),
    ("physical_offset", pa.int64(), "where the message starts in the CommitLog (file start + position)"),
    ("physical_offset_field", pa.int64(), "the PHYSICALOFFSET field as stored (equals physical_offset when sound)"),
    ("total_size", pa.int32(), "the message record's totalSize"),
    ("version", pa.int8(), "record format: 1 (MESSAGE_MAGIC_CODE) or 2 (MESSAGE_MAGIC_CODE_V2)"),
    ("sys_flag", pa.int32(), "sysFlag bits (compression, transaction type, IPv6 hosts)"),
    ("flag", pa.int32(), "the producer's flag"),
    ("transaction_type", pa.string(), "NOT_TRANSACTION, PREPARED, COMMIT or ROLLBACK"),
    ("born_timestamp", pa.int64(), "born timestamp, ms"),
    ("born_host", pa.string(), "born host:port"),
    ("store_timestamp", pa.int64(), "store timestamp, ms"),
    ("store_host", pa.string(), "store host:port"),
    ("reconsume_times", pa.int32(), "reconsume times"),
    ("prepared_transaction_offset", pa.int64(), "prepared transaction offset"),
    ("msg_id", pa.string(), "offsetMsgId (store host + port + physical offset, hex), as RocketMQ prints it"),
    ("keys", pa.string(), "the KEYS property (space-separated keys), null when absent"),
    ("tags", pa.string(), "the TAGS property, null when absent"),
    ("uniq_key", pa.string(), "the UNIQ_KEY property (client message id), null when absent"),
    ("properties", pa.map_(pa.string(), pa.string()), "all properties: map<string, string>"),
    ("body_size", pa.int32(), "stored body length (compressed length for compressed bodies)"),
    ("body_sha256", pa.string(), "sha256 of the stored body, hex"),
    ("body_crc_valid", pa.bool_(), "the body CRC matches (what RocketMQ's checkCRC tests)"),
    ("compressed", pa.bool_(), "the body is compressed (sysFlag bit 0)"),
    ("compression", pa.string(), "zlib, lz4 or zstd for compressed bodies, else null"),
    ("body_uncompressed_size", pa.int32(), "decompressed body length (compressed bodies that decompress), else null"),
    ("body", pa.binary(), "the stored body bytes; filled only with --with-values"),
]

KAFKA_SCHEMA = pa.schema([pa.field(name, typ) for name, typ, _ in KAFKA_COLUMNS])
ROCKETMQ_SCHEMA = pa.schema([pa.field(name, typ) for name, typ, _ in ROCKETMQ_COLUMNS])

SCHEMAS = {"kafka": KAFKA_SCHEMA, "rocketmq": ROCKETMQ_SCHEMA}


def spark_type_name(typ: pa.DataType) -> str:
    """The Spark SQL type a Parquet column of this Arrow type reads as."""
    if pa.types.is_string(typ):
        return "string"
    if pa.types.is_binary(typ):
        return "binary"
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_int8(typ):
        return "tinyint"
    if pa.types.is_int16(typ):
        return "smallint"
    if pa.types.is_int32(typ):
        return "int"
    if pa.types.is_int64(typ):
        return "bigint"
    if pa.types.is_map(typ):
        return f"map<{spark_type_name(typ.key_type)},{spark_type_name(typ.item_type)}>"
    if pa.types.is_list(typ):
        return f"array<{spark_type_name(typ.value_type)}>"
    if pa.types.is_struct(typ):
        return "struct<" + ",".join(f"{f.name}:{spark_type_name(f.type)}" for f in typ) + ">"
    raise TypeError(f"no Spark type for {typ}")


def spark_ddl(kind: str) -> str:
    """``name type, ...`` for ``spark.read.schema(...)`` or a CREATE TABLE."""
    return ", ".join(f"{f.name} {spark_type_name(f.type)}" for f in SCHEMAS[kind])
