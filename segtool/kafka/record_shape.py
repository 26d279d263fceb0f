"""A Kafka batch and a Kafka record as every output shows them, declared once (``formats.record_shapes``).

``BATCH_FIELDS`` and ``RECORD_FIELDS`` list each item's fields in the order its JSON gives them:
the name, the ``log.RecordBatch`` / ``log.Record`` attribute it is read from, its JSON and Parquet
types, what it means, and whether every item has it (v2 batches and records have more than legacy
ones).  ``ops/dump_kafka_log.py`` builds the items by these tables, ``ops/render.py`` the JSON of a
column run, ``ops/output_schema.py`` their TypedDicts and ``ops/carve.py`` its Parquet types.
"""

from __future__ import annotations

from segtool.formats.record_shapes import Field, by_name

BATCH_FIELDS = (
    Field("position", "position", int, "int64", "byte position of the batch in its file"),
    Field("magic", "magic", int, "int8", "batch format: 2 (record batch), 1 or 0 (legacy message sets)"),
    Field("base_offset", "base_offset", int, "int64",
          "first offset of the batch (Kafka's baseOffset(); a compressed legacy wrapper's: its first inner message's)"),
    Field("last_offset", "last_offset", int, "int64", "last offset of the batch"),
    Field("size", "size", int, "int64", "bytes in the file including the 12-byte log overhead"),
    Field("crc", "crc", int, "int64", "the CRC as stored"),
    Field("crc_valid", "crc_valid", bool, "bool_", "the stored CRC matches the batch's bytes"),
    Field("codec", "codec_name", str, "string", "none, gzip, snappy, lz4 or zstd"),
    Field("timestamp_type", "timestamp_type", str, "string", "CreateTime, LogAppendTime or NoTimestampType"),
    Field("max_timestamp", "max_timestamp", int, "int64", "the batch's max timestamp, ms"),
    Field("record_count", "record_count", int, "int32", "records in the batch", required=False),
    Field("partition_leader_epoch", "partition_leader_epoch", int, "int32", "leader epoch stamped on the batch",
          required=False),
    Field("base_timestamp", "base_timestamp", int, "int64", "the first record's timestamp, ms", required=False),
    Field("producer_id", "producer_id", int, "int64", "producer id (-1 when none)", required=False),
    Field("producer_epoch", "producer_epoch", int, "int16", "producer epoch (-1 when none)", required=False),
    Field("base_sequence", "base_sequence", int, "int32", "the first record's sequence (-1 when none)",
          required=False),
    Field("last_sequence", "last_sequence", int, "int32", "the last record's sequence (-1 when none)",
          required=False),
    Field("is_transactional", "is_transactional", bool, "bool_", "the batch is transactional", required=False),
    Field("is_control", "is_control", bool, "bool_", "the batch is a control batch", required=False),
    Field("delete_horizon_ms", "delete_horizon_ms", int | None, "int64",
          "when the cleaner may drop its tombstones and markers (null when not set)", required=False),
    Field("wrapper_offset", "wrapper_offset", int, "int64",
          "legacy: the message's own offset field (a compressed wrapper's is its last inner offset)", required=False),
)
BATCH = by_name(BATCH_FIELDS)
# a legacy message has the fields every batch has and its own offset; a v2 batch the others (``required=False``)
BATCH_EVERY = tuple(field for field in BATCH_FIELDS if field.required)
BATCH_LEGACY = (BATCH["wrapper_offset"],)
BATCH_V2 = tuple(field for field in BATCH_FIELDS if not field.required and field not in BATCH_LEGACY)

RECORD_FIELDS = (
    Field("batch_position", "position", int, "int64", "byte position of the record's batch (legacy: wrapper)"),
    Field("offset", "offset", int, "int64", "the record's offset"),
    Field("timestamp", "timestamp", int, "int64", "the record's timestamp, ms"),
    Field("key_size", "key_size", int, "int32", "key length, -1 for a null key"),
    Field("value_size", "value_size", int, "int32", "value length, -1 for a null value (a tombstone)"),
    Field("key", "key", str | None, "binary", "the key as UTF-8 text when it is (Parquet: its bytes)"),
    Field("key_b64", "key", str | None, None, "the key's bytes in base64"),
    Field("value", "value", str | None, "binary", "the value as UTF-8 text when it is (Parquet: its bytes)"),
    Field("value_b64", "value", str | None, None, "the value's bytes in base64"),
    Field("sequence", "sequence", int, "int32", "v2: the record's sequence number", required=False),
    Field("headers", "headers", "list[Header]", "headers", "v2: the record's headers in order", required=False),
    Field("control_type", "control_type", str, "string", "a control record's type (ABORT, COMMIT, ...)",
          required=False),
    Field("control", "control", "dict[str, Any] | None", None,
          "a control record's value: a marker's version and coordinator_epoch, a KRaft control record's "
          "fields (leader_id, voters, ...), {error} where Kafka's reader rejects it", required=False),
    Field("crc", "crc", int, "int64", "legacy: the inner message's CRC", required=False),
    Field("crc_valid", "crc_valid", bool, "bool_", "legacy: the inner message's CRC matches", required=False),
    Field("decoded", "decoded", "dict[str, Any]", None,
          "an internal topic's record: key and value as its schema reads them", required=False),
)
RECORD = by_name(RECORD_FIELDS)
