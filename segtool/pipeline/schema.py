"""The Parquet dataset of `segtool scan`: one row per Kafka record or RocketMQ message, one schema.

The column list below is the documentation's source (docs/pipeline.md shows
it); both engines write exactly these files, so a dataset written by the
local engine and one written on Spark read back identically.

One schema for both brokers: ``broker`` says which one a row comes from, the
columns of the other broker are null.  ``topic`` and ``partition`` are the
dataset's hive-style partition keys (``OUT/topic=<t>/partition=<p>/``), so they
live in the directory names, not in the files, as Spark's own writer does it;
every reader that knows hive partitioning (Spark SQL, DuckDB, pyarrow, Trino)
gives them back as columns.  A RocketMQ message's partition is its queue id and
its ``offset`` its ConsumeQueue offset: (topic, partition, offset) names a
message as it names a Kafka record.

Kafka rows carry the columns of Spark's own Kafka source under its names and types
(spark-sql-kafka-0-10, ``KafkaRecordToRowConverter.kafkaSchema`` with ``includeHeaders``: key
binary, value binary, topic string, partition int, offset bigint, timestamp TIMESTAMP,
timestampType int, headers array<struct<key: string, value: binary>>, null when a record has
none), so a query written for a stream of the topic runs on the evidence as it is; segtool's
forensic columns stand beside them.  ``timestamp`` is the one event-time column of both brokers:
a RocketMQ row's is its born timestamp, the producer's clock, as Kafka's default CreateTime is
(and what RocketMQ's Flink connector takes as event time, ``MessageViewExt``).

Conventions: offsets and positions are int64; ``timestamp`` is a TIMESTAMP (Parquet
TIMESTAMP(MILLIS, UTC)), null where the record has none; the other timestamps are int64 ms since
the epoch, as stored; digests are lowercase hex strings, so ``WHERE value_sha256 = '…'`` works as
typed; null means "absent in the data" (a null key, a v2 record's legacy CRC, a column of the
other broker), never "not computed", except ``value``/``body`` which are filled only with
``--with-values``.
"""

from __future__ import annotations

import pyarrow as pa

from segtool.formats.record_shapes import arrow_type
from segtool.rocketmq.message_shape import MESSAGE_COLUMNS

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
TIMESTAMP = pa.timestamp("ms", tz="UTC")  # what Spark reads as TIMESTAMP, DuckDB as TIMESTAMPTZ
# the ms a TIMESTAMP holds for every reader: 0001-01-01 to 9999-12-31 UTC (Spark's documented range, and
# Python's datetime, which PySpark's collect() and pyarrow's to_pylist() make); beyond it a producer's clock
# gone wrong would make the whole dataset unreadable (Spark overflows turning ms into µs), so it is null there
TIMESTAMP_MIN_MS = -62_135_596_800_000
TIMESTAMP_MAX_MS = 253_402_300_799_999

KAFKA = "kafka"
ROCKETMQ = "rocketmq"
BOTH = "both"
PARTITION_KEYS = ("topic", "partition")



def _message_columns(*names: str) -> list[tuple]:
    """The columns of these names that a RocketMQ message's field table declares (``Field.column_name``)."""
    return [(name, arrow_type(MESSAGE_COLUMNS[name].arrow), ROCKETMQ, MESSAGE_COLUMNS[name].doc) for name in names]


# (name, type, broker the column is filled for, description) — the description is what docs/pipeline.md prints;
# a RocketMQ column that is a field of the message takes its type and description from its table
COLUMNS = [
    ("broker", pa.string(), BOTH, "`kafka` or `rocketmq`: which broker's file the row comes from"),
    ("source_dir", pa.string(), BOTH, "the Kafka log directory holding the partition directory, or the RocketMQ "
                                      "store root (the directory holding commitlog/); absolute path or URI"),
    ("broker_id", pa.int32(), BOTH, "Kafka: the broker's id, `node.id` (or `broker.id`) of the log dir's "
                                    "meta.properties, null when there is none or it names none; RocketMQ: null "
                                    "(the broker's id is in broker.conf, not in the store)"),
    ("broker_label", pa.string(), BOTH, "which broker's copy the row is, never null: `broker <id>`, else the log "
                                        "dir or store root as in `source_dir`; replicas of one partition on "
                                        "several brokers differ only here, so count a record once per "
                                        "(topic, partition, offset), not per row"),
    ("topic", pa.string(), BOTH, "topic (Kafka: from the partition directory name `<topic>-<partition>`); "
                                 "a partition key, in the directory name `topic=<topic>`"),
    ("partition", pa.int32(), BOTH, "Kafka partition number (null when the directory name has none), RocketMQ "
                                    "queue id; a partition key, in the directory name `partition=<n>`"),
    ("offset", pa.int64(), BOTH,
     "Kafka: the record's offset; RocketMQ: the message's offset in its ConsumeQueue"),
    ("timestamp", TIMESTAMP, BOTH,
     "the event time, UTC. Kafka: the record's timestamp as a consumer gets it (LogAppendTime: the batch's "
     "append time); RocketMQ: the born timestamp (the producer's clock, like Kafka's CreateTime); null where "
     "the record has none (magic 0, or Kafka's NO_TIMESTAMP -1 stored) or it lies outside 0001-01-01..9999-12-31 "
     "(`timestamp_ms`, `born_timestamp` keep it as stored)"),
    ("compression", pa.string(), BOTH, "Kafka: codec of the batch (none, gzip, snappy, lz4, zstd); RocketMQ: zlib, "
                                       "lz4 or zstd for compressed bodies, else null"),
    # Kafka
    ("segment_base_offset", pa.int64(), KAFKA, "base offset of the segment (its file name)"),
    ("batch_position", pa.int64(), KAFKA, "byte position of the record's batch (legacy: wrapper message) in the .log"),
    ("batch_base_offset", pa.int64(), KAFKA, "first offset of the batch (Kafka's baseOffset(); a compressed legacy "
                                             "wrapper's: its first inner message's)"),
    ("batch_last_offset", pa.int64(), KAFKA, "last offset of the batch"),
    ("batch_wrapper_offset", pa.int64(), KAFKA, "legacy: the message's own offset field (a compressed wrapper's is "
                                                "its last inner offset); null for v2 batches"),
    ("magic", pa.int8(), KAFKA, "batch format: 2 (record batch), 1 or 0 (legacy message sets)"),
    ("partition_leader_epoch", pa.int32(), KAFKA, "leader epoch stamped on the batch (-1 for legacy)"),
    ("timestampType", pa.int32(), KAFKA, "Kafka's TimestampType id, as Spark's Kafka source gives it: 0 CreateTime, "
                                         "1 LogAppendTime, -1 NoTimestampType (magic 0)"),
    ("timestamp_type", pa.string(), KAFKA, "CreateTime, LogAppendTime or NoTimestampType (magic 0)"),
    ("timestamp_ms", pa.int64(), KAFKA, "the record's timestamp as stored, ms since the epoch (LogAppendTime: the "
                                        "batch's append time); null for magic 0, which stores none"),
    ("key", pa.binary(), KAFKA, "the key's bytes (null key: null)"),
    ("key_utf8", pa.string(), KAFKA, "the key as text when it is valid UTF-8, else null"),
    ("key_size", pa.int32(), KAFKA, "key length, -1 for a null key"),
    ("value_size", pa.int32(), KAFKA, "value length, -1 for a null value (a tombstone)"),
    ("value_sha256", pa.string(), KAFKA, "sha256 of the value, hex (null for a null value)"),
    ("value", pa.binary(), KAFKA, "the value's bytes; filled only with --with-values"),
    ("headers", pa.list_(HEADER_TYPE), KAFKA, "record headers in order: array<struct<key: string, value: binary>>; "
                                              "null when the record has none (as Spark's Kafka source gives them)"),
    ("producer_id", pa.int64(), KAFKA, "producer id (-1 when none)"),
    ("producer_epoch", pa.int16(), KAFKA, "producer epoch (-1 when none)"),
    ("sequence", pa.int32(), KAFKA, "the record's sequence number (base sequence + offset delta; -1 when none)"),
    ("is_transactional", pa.bool_(), KAFKA, "the batch is transactional"),
    ("is_control", pa.bool_(), KAFKA, "the batch is a control batch (transaction markers and KRaft control records)"),
    ("control_type", pa.string(), KAFKA, "ABORT, COMMIT, LEADER_CHANGE, ... for control records, else null"),
    ("control", pa.string(), KAFKA, "a control record's decoded value as JSON text (dump's control), else null"),
    ("crc_valid", pa.bool_(), KAFKA, "the batch's (legacy: wrapper message's) stored CRC matches its bytes"),
    ("record_crc_valid", pa.bool_(), KAFKA, "legacy inner message's own CRC32 matches (null for v2 records)"),
    # RocketMQ
    ("commitlog_file", pa.string(), ROCKETMQ, "CommitLog file name (its first physical offset, 20 digits)"),
    *_message_columns("physical_offset", "physical_offset_field", "total_size", "version", "sys_flag", "flag"),
    ("transaction_type", pa.string(), ROCKETMQ, "NOT_TRANSACTION, PREPARED, COMMIT or ROLLBACK"),
    *_message_columns("born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
                      "prepared_transaction_offset", "msg_id", "keys", "tags", "uniq_key", "properties", "body_size",
                      "body_sha256"),
    ("body_crc_valid", pa.bool_(), ROCKETMQ, "the body CRC matches (what RocketMQ's checkCRC tests)"),
    *_message_columns("compressed", "body_uncompressed_size"),
    ("body", pa.binary(), ROCKETMQ, "the stored body bytes; filled only with --with-values"),
]

# every column, as readers see the dataset (a dataset with no rows is one file of this schema)
DATASET_SCHEMA = pa.schema([pa.field(name, typ) for name, typ, _, _ in COLUMNS])
# what a part file holds: the partition keys are in its directory's name
FILE_SCHEMA = pa.schema([field for field in DATASET_SCHEMA if field.name not in PARTITION_KEYS])

# Spark's ExternalCatalogUtils.escapePathName: characters written as %XX in a partition directory name
_ESCAPED = set('"#%\'*/:=?\\[]^{}\x7f') | {chr(c) for c in range(1, 32)}
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Hive's, Spark's, pyarrow's and DuckDB's name for a null key


def _escape(value: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value) or NULL_PARTITION


def partition_directory(topic: str | None, partition: int | None) -> str:
    """``topic=<topic>/partition=<n>``, escaped as Spark escapes partition values (``%RETRY%g`` -> ``%25RETRY%25g``)."""
    topic_text = NULL_PARTITION if topic is None else _escape(topic)
    partition_text = NULL_PARTITION if partition is None else str(partition)
    return f"topic={topic_text}/partition={partition_text}"
